"""Fakes of IRIS's Protocols for unit tests (the real ones are exercised in test_model_*)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from iris_voice.errors import LlmError
from iris_voice.llm.client import ChatChunk


class ScriptedBackend:
    """A ChatBackend that replays scripted replies and records every request.

    Each script entry is a reply: a string (streamed in small pieces), a list of
    ``(name, arguments)`` structured tool calls, a tuple of both (the text, then the calls,
    as a server streams them), or an ``LlmError`` to raise.
    """

    name = "scripted"

    def __init__(self, *replies: Any, chunk: int = 3, no_tools: bool = False, apart: bool = False) -> None:
        self.replies = list(replies)
        self.apart = apart
        """Each structured call in a part of its own, as Ollama sends them (else all in one)."""
        self.closed_early = 0
        """Replies the reader closed before their end."""
        self.requests: list[dict[str, Any]] = []
        self.warmups: list[dict[str, Any]] = []
        """Requests for one token (prompt-cache warm-ups): answered without using the script."""
        self.chunk = chunk
        self.no_tools = no_tools
        self.formats = True
        """Takes ``fmt`` (recorded with each request; the script decides what comes back)."""

    async def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        options: dict[str, Any] | None = None,
        fmt: dict[str, Any] | None = None,
    ) -> AsyncIterator[ChatChunk]:
        """Replay the next scripted reply (a one-token warm-up gets one token of its own)."""
        request = {"messages": [dict(m) for m in messages], "tools": tools, "options": options, "fmt": fmt}
        if self.no_tools and tools:
            self.requests.append(request)
            raise LlmError("llm-no-tools", "model 'x' does not support tools")
        if (options or {}).get("num_predict") == 1:
            self.warmups.append(request)
            yield ChatChunk(content="O")
            yield ChatChunk(done=True, prompt_tokens=10, completion_tokens=1, prompt_ms=1.0)
            return
        self.requests.append(request)
        if not self.replies:
            raise AssertionError("the loop asked for more replies than were scripted")
        reply = self.replies.pop(0)
        if isinstance(reply, LlmError):
            raise reply
        text, calls = (
            reply if isinstance(reply, tuple) else ("", reply) if isinstance(reply, list) else (reply, [])
        )
        finished = False
        try:
            for i in range(0, len(text), self.chunk):
                yield ChatChunk(content=text[i : i + self.chunk])
            for part in [[c] for c in calls] if self.apart else [calls] if calls else []:
                yield ChatChunk(tool_calls=tuple(part))
            finished = True
            yield ChatChunk(done=True, prompt_tokens=10, completion_tokens=5, prompt_ms=1.0)
        finally:
            self.closed_early += not finished


def chat_assistant(
    backend: Any,
    registry: Any,
    cfg: Any = None,
    publish: Any = None,
    clock: Any = None,
) -> Any:
    """The local chat loop alone (no fast path, no boost) over one conversation, as IRIS's
    ``Assistant``; ``clock`` drives the conversation's idle reset."""
    import time

    from iris_voice.config import LlmConfig
    from iris_voice.conversation.chat import ChatLoop
    from iris_voice.conversation.history import Bounds, Conversation
    from iris_voice.conversation.responder import Assistant

    llm = cfg or LlmConfig()
    bounds = Bounds(llm.history_turns, llm.history_tokens, llm.history_idle_reset_s)
    conversation = Conversation(bounds, clock or time.monotonic)
    return Assistant(ChatLoop(backend, registry, llm, publish=publish), conversation, publish=publish)


def builtin_registry(timezone: str = "UTC") -> Any:
    """Every built-in tool over a timer service on an in-memory store (nothing on disk)."""
    from iris_voice.timers.service import TimerService
    from iris_voice.timers.store import TimerStore
    from iris_voice.tools.builtin import ToolContext, builtin_tools
    from iris_voice.tools.registry import ToolRegistry

    timers = TimerService(TimerStore(":memory:"), lambda _e: None, resync_seconds=None)
    return ToolRegistry(builtin_tools(ToolContext(timezone, timers)))
