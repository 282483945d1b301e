"""The naive sequential voice pipeline the latency benchmark compares IRIS against.

Same components, same utterance: transcribe the whole utterance, ask the model without
streaming (``stream=False``, tool rounds run one after another until it answers), then
synthesize the whole reply, then play it. This is how most voice-assistant prototypes
chain the stages; its first audio is the sum of every stage.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import numpy as np
import ollama

from iris_voice.config import Config
from iris_voice.conversation.repairs import LIMIT_NOTE
from iris_voice.conversation.turn import FALLBACK_REPLY
from iris_voice.llm.client import keep_alive_value
from iris_voice.llm.textcalls import extract_calls, strip_markup
from iris_voice.speech.stt import Transcriber
from iris_voice.speech.tts import Synthesizer
from iris_voice.tools.registry import ToolRegistry
from iris_voice.tools.render import render


class NaivePipeline:
    """Sequential STT → non-streamed chat with tools → whole-reply TTS."""

    def __init__(self, cfg: Config, stt: Transcriber, tts: Synthesizer, registry: ToolRegistry) -> None:
        self.cfg = cfg
        self.stt = stt
        self.tts = tts
        self.registry = registry
        timeout = httpx.Timeout(cfg.llm.request_timeout_s, connect=cfg.llm.connect_timeout_s)
        self.client = ollama.AsyncClient(host=cfg.llm.host, timeout=timeout)
        self.tools = render(registry.specs(), "ollama")

    async def _chat(self, text: str) -> tuple[str, int]:
        """Tool rounds without streaming; the final text and the number of model calls."""
        llm = self.cfg.llm
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": llm.system_prompt},
            {"role": "user", "content": text},
        ]
        calls_made, rounds = 0, 0
        while True:
            rounds += 1
            allow = calls_made < llm.max_tool_calls
            resp = await self.client.chat(
                model=llm.model, messages=messages, tools=self.tools if allow else None, stream=False,
                options={"num_ctx": llm.num_ctx, "temperature": llm.temperature},
                keep_alive=keep_alive_value(llm.keep_alive),
            )  # fmt: skip
            msg = resp.message
            content = msg.content or ""
            calls = [(c.function.name, dict(c.function.arguments or {})) for c in (msg.tool_calls or [])]
            if not calls:  # the model wrote the call as text: recovered the same way IRIS does
                calls = [(c.name, c.arguments) for c in extract_calls(content, self.registry.names())[0]]
            if not calls or not allow:
                return strip_markup(content).strip() or FALLBACK_REPLY, rounds
            results = []
            for name, args in calls[: llm.max_tool_calls - calls_made]:
                calls_made += 1
                results.append(await self.registry.call(name, args))
            messages.append(
                {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": r.name, "arguments": r.arguments}} for r in results
                ]}
            )  # fmt: skip
            messages.extend({"role": "tool", "content": r.result, "tool_name": r.name} for r in results)
            if calls_made >= llm.max_tool_calls:
                messages.append({"role": "user", "content": LIMIT_NOTE})

    async def turn(self, utterance: np.ndarray, hangover_ms: float) -> dict[str, Any]:
        """One turn over an endpointed utterance (int16, 16 kHz); its stage timings in ms."""
        t0 = time.perf_counter()
        text = await self.stt.transcribe(utterance.astype(np.float32) / 32768.0)
        t1 = time.perf_counter()
        reply, rounds = await self._chat(text)
        t2 = time.perf_counter()
        audio = [chunk async for chunk in self.tts.stream(reply)]  # the whole reply, then play
        t3 = time.perf_counter()
        ms = lambda a, b: round((b - a) * 1000, 1)  # noqa: E731
        return {
            "transcript": text,
            "reply": reply,
            "rounds": rounds,
            "audio_s": round(sum(len(a) for a in audio) / self.tts.sample_rate, 2),
            "timings_ms": {
                "vad_hangover": hangover_ms,
                "stt": ms(t0, t1),
                "llm": ms(t1, t2),
                "tts": ms(t2, t3),
            },
            "first_audio_ms": round(hangover_ms + (t3 - t0) * 1000, 1),
        }


def summary(rows: list[dict[str, Any]]) -> str:
    """One line per turn, for the benchmark's log."""
    return "\n".join(json.dumps({k: r[k] for k in ("transcript", "reply", "first_audio_ms")}) for r in rows)
