"""The hub's side of satellites under test: a speech-to-text that reads the words a test
wrote into the audio, a model that echoes, and the satellite part over them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from iris_voice.config import Config
from iris_voice.events import EventBus
from iris_voice.llm.client import ChatChunk
from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerStore
from iris_voice.tools.builtin import build_registry
from iris_voice.wyoming.hub import SatellitePart
from tests.support.fakes_audio import FakeTts


class TextStt:
    """Reads the words a test wrote into the audio's bytes (``spoken``): each satellite's
    question comes back as itself however the turns interleave."""

    name = "text-stt"
    supports_streaming = False

    async def transcribe(self, audio: np.ndarray, lead: str = "") -> str:
        await asyncio.sleep(0.01)
        pcm = np.round(audio * 32768).astype(np.int16).tobytes()
        return pcm.rstrip(b"\0").decode()

    async def warmup(self) -> None:
        """Nothing to load."""


def spoken(text: str) -> bytes:
    raw = text.encode()
    return raw + b"\0" * (len(raw) % 2 + 200)


class EchoBackend:
    """A model that answers "You said: <the question>. I remember <n> earlier questions."
    slowly, and counts how many of its streams run at once."""

    name = "echo"

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.running = 0
        self.most = 0
        self.requests: list[list[dict[str, Any]]] = []

    async def stream(
        self, messages: Sequence[dict[str, Any]], tools: Any, options: dict[str, Any] | None = None
    ) -> AsyncIterator[ChatChunk]:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            if (options or {}).get("num_predict") != 1:
                self.requests.append([dict(m) for m in messages])
            users = [m["content"] for m in messages if m["role"] == "user"]
            reply = f"You said: {users[-1]} I remember {len(users) - 1} earlier questions."
            for word in reply.split(" "):
                await asyncio.sleep(self.delay / 10)
                yield ChatChunk(content=word + " ")
            yield ChatChunk(done=True, prompt_tokens=10, completion_tokens=5, prompt_ms=1.0)
        finally:
            self.running -= 1


def make_part(
    tmp_path: Path, backend: Any, tts: dict[str, Any] | None = None, **kwargs: Any
) -> tuple[SatellitePart, TimerService, EventBus]:
    """A hub's satellite part over ``backend`` (``tts``: that config section's keys; no late
    cue unless it says so: on a loaded machine it would add audio the tests count)."""
    sections = {"tools": {"timezone": "UTC"}, "llm": {"warm_cache": False}, "tts": tts or {"late_cue_s": 0}}
    cfg = Config.model_validate(sections)
    bus = EventBus()
    timers = TimerService(TimerStore(tmp_path / "timers.db"), bus.publish, tz_name="UTC", resync_seconds=0.2)
    part = SatellitePart(cfg, build_registry(cfg, timers), TextStt(), FakeTts(0.2), backend=backend,
                         publish=bus.publish, **kwargs)  # fmt: skip
    part.attach_timers(timers, bus.subscribe)
    return part, timers, bus
