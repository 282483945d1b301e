"""A scripted stand-in for llama.cpp behind the Ollama-protocol test server: a broken model.

The abuse benchmark needs a model that answers exactly what it is told — 2,000 dots, a
10,000-character JSON blob, a call to a hostile MCP tool — on IRIS's real wire path
(HTTP, NDJSON, the server's ``<tool_call>`` filter). ``ScriptedEngine`` has the parts of
``llama_engine.Engine`` the server uses; its replies come from a queue that a client
fills with ``POST /_script`` (``{"replies": [REPLY, …]}``). A reply is
``{"text": "…", "chunk": 16, "delay": 0}`` (streamed in ``chunk``-character pieces,
``delay`` seconds apart; ``GET /_script`` tells whether it was sent to its end or
``stopped`` when the client left), ``{"error": "…"}``
or ``{"wire": [OBJECT, …]}``: a recorded Ollama stream (``/api/chat`` response objects,
the last one ``done``), replayed as it is — thinking, tool calls and all — with only its
``model`` set to the request's; with the queue empty the model says ``OK.``.

    python -m tools.testbed.ollama_server --scripted [--port 0]
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from tools.testbed import ollama_replies as replies
from tools.testbed.llama_engine import Job

DEFAULT_REPLY: dict[str, Any] = {"text": "OK.", "chunk": 16}
"""What the scripted model says when nothing is queued."""


class _Template:
    """What ``/api/show`` reports as the chat template."""

    source = "{{ .Prompt }}"


class ScriptedEngine:
    """Replies from a queue, streamed as a model would (see the module notes)."""

    def __init__(self, n_ctx: int = 4096) -> None:
        self.size, self.modified = 0, time.time()
        self.model_path = "scripted"
        self.metadata: dict[str, str] = {"general.architecture": "scripted", "general.size_label": "0B"}
        self.template = _Template()
        self.n_ctx = self.ctx_train = n_ctx
        self.n_params = 0
        self.queue: deque[dict[str, Any]] = deque()
        """Replies not sent yet, oldest first."""
        self.requests: list[dict[str, Any]] = []
        """How many messages, tools and characters of tool definitions each request had
        (``GET /_script``; the content is not kept)."""

    def script(self, items: list[dict[str, Any]]) -> int:
        """Queue ``items``; how many are queued now."""
        for item in items:
            if not isinstance(item, dict) or not ({"text", "error", "wire"} & set(item)):
                raise ValueError("a reply is {'text': …, 'chunk': N}, {'error': …} or {'wire': [...]}")
            self.queue.append(item)
        return len(self.queue)

    async def stream(self, job: Job) -> AsyncIterator[tuple[str, Any]]:
        """Yield the next scripted reply as ``("text", piece)``…, then ``("done", stats)``."""
        t0 = time.perf_counter()
        tool_chars = len(json.dumps(job.tools, ensure_ascii=False, separators=(",", ":")))
        system = job.messages[0].get("content", "") if job.messages else ""
        self.requests.append(
            {"messages": len(job.messages), "tools": len(job.tools), "tool_chars": tool_chars,
             "system_chars": len(system) if isinstance(system, str) else 0, "think": job.think}
        )  # fmt: skip
        reply = self.queue.popleft() if self.queue else DEFAULT_REPLY
        if "error" in reply:
            yield "error", str(reply["error"])
            return
        if "wire" in reply:
            for obj in reply["wire"]:
                yield "wire", obj
            return
        text, step = str(reply["text"]), max(1, int(reply.get("chunk", 16)))
        delay = min(max(float(reply.get("delay", 0.0)), 0.0), 1.0)
        record = self.requests[-1]
        record["finished"] = False
        try:
            for i in range(0, len(text), step):
                yield "text", text[i : i + step]
                if delay:
                    await asyncio.sleep(delay)  # a model's pace: a client may leave before the end
                elif i // step % 64 == 63:
                    await asyncio.sleep(0)  # a long reply still lets the server breathe
            record["finished"] = True
        finally:
            record["stopped"] = not record["finished"]  # the client left: generation stopped
        took = time.perf_counter() - t0
        yield (
            "done",
            {
                "done_reason": "stop",
                "load_duration": 0,
                "prompt_eval_count": 1,
                "prompt_eval_duration": replies.ns(took / 2),
                "eval_count": max(1, len(text) // 4),
                "eval_duration": replies.ns(took / 2),
            },
        )

    def cancel_all(self) -> None:
        """Nothing runs in the background."""

    def close(self, timeout: float) -> bool:
        """Nothing to free."""
        return True
