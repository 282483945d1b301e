"""Fakes of the audio-stage Protocols for pipeline unit tests.

Frames carry their meaning in their sample value, so a test writes a script of what
the "microphone" hears: ``SILENCE``, ``SPEECH`` (the VAD says speech) and ``WAKE``
(the wake-word detector fires). Time runs ``speed`` times faster than real time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE

SILENCE, SPEECH, WAKE = 0, 1000, 7777
FRAME_S = FRAME_SAMPLES / SAMPLE_RATE


def frames(kind: int, seconds: float) -> list[np.ndarray]:
    """``seconds`` worth of frames of one kind."""
    return [np.full(FRAME_SAMPLES, kind, np.int16) for _ in range(round(seconds / FRAME_S))]


class ScriptSource:
    """An AudioSource playing a script of frames, paced ``speed`` times real time; then silence
    for ``tail_s`` (so endpointing and the turn can finish) and the end of the stream."""

    def __init__(self, script: list[np.ndarray], speed: float = 10.0, tail_s: float = 3.0) -> None:
        self.script = script + frames(SILENCE, tail_s)
        self.speed = speed
        self.extra: asyncio.Queue[list[np.ndarray]] = asyncio.Queue()

    def inject(self, script: list[np.ndarray]) -> None:
        """Play these frames next (e.g. a barge-in once the reply has started)."""
        self.extra.put_nowait(script)

    async def frames(self) -> AsyncIterator[np.ndarray]:
        """The scripted frames."""
        pending = list(self.script)
        while pending:
            if not self.extra.empty():
                pending[:0] = self.extra.get_nowait()
            yield pending.pop(0)
            await asyncio.sleep(FRAME_S / self.speed)

    def close(self) -> None:
        """Nothing to release."""


class FakeVad:
    """Speech when the frame is SPEECH (or WAKE: the wake word is speech too)."""

    def __init__(self) -> None:
        self.calls = 0
        self.resets = 0

    async def probability(self, frame: np.ndarray) -> float:
        """1.0 for speech frames, 0.0 otherwise."""
        self.calls += 1
        return 1.0 if int(frame[0]) in (SPEECH, WAKE) else 0.0

    def reset(self) -> None:
        """Count resets."""
        self.resets += 1

    async def warmup(self) -> None:
        """Nothing to load."""


class FakeWake:
    """Fires once ``needed`` WAKE frames in a row were heard: like the real model, at the
    end of the phrase, not at its first syllable."""

    name = "hey_jarvis"
    late_s = 0.0

    def __init__(self, needed: int = 6) -> None:
        self.calls = 0
        self.needed = needed
        self.run = 0

    async def process(self, frame: np.ndarray) -> float:
        """0.9 on the frame that completes the phrase."""
        self.calls += 1
        self.run = self.run + 1 if int(frame[0]) == WAKE else 0
        return 0.9 if self.run == self.needed else 0.01

    def reset(self) -> None:
        """Forget the phrase heard so far."""
        self.run = 0

    async def warmup(self) -> None:
        """Nothing to load."""


class FakeStt:
    """Returns scripted transcripts, one per utterance, and records the audio it got."""

    name = "fake-stt"

    supports_streaming = False

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.audio: list[np.ndarray] = []
        self.leads: list[str] = []

    async def transcribe(self, audio: np.ndarray, lead: str = "") -> str:
        """The next scripted text."""
        self.audio.append(audio)
        self.leads.append(lead)
        await asyncio.sleep(0.01)
        return self.texts.pop(0) if self.texts else ""

    async def warmup(self) -> None:
        """Nothing to load."""

    def open_session(self, lead: str = ""):
        """Not offered (``supports_streaming`` is False)."""
        raise NotImplementedError


class FakeTts:
    """0.5 s of audio per sentence (in two chunks) at 16 kHz; records what it spoke."""

    name = "fake-tts"
    sample_rate = 16000

    def __init__(self, seconds_per_sentence: float = 0.5) -> None:
        self.spoken: list[str] = []
        self.seconds = seconds_per_sentence

    async def stream(self, text: str) -> AsyncIterator[np.ndarray]:
        """Two chunks of a constant tone."""
        self.spoken.append(text)
        half = int(self.sample_rate * self.seconds / 2)
        for _ in range(2):
            await asyncio.sleep(0.005)
            yield np.full(half, 100, np.int16)

    async def warmup(self) -> None:
        """Nothing to load."""


class FakeSink:
    """An AudioSink that 'plays' at ``speed`` times real time, so barge-in has something to cut."""

    def __init__(self, speed: float = 10.0) -> None:
        self.first_sample_at: float | None = None
        self.speed = speed
        self.queued = 0.0  # seconds queued since the last stop
        self.played_before = 0.0
        self.started: float | None = None
        self.stops = 0
        self.clips: list[int] = []

    def _progress(self) -> float:
        if self.started is None:
            return 0.0
        return min(self.queued, (time.monotonic() - self.started) * self.speed)

    async def play(self, chunk: np.ndarray, sample_rate: int) -> None:
        """Queue audio; playback starts now if idle."""
        if self.started is None or self._progress() >= self.queued:
            self.played_before += self._progress()
            self.queued, self.started = 0.0, time.monotonic()
        self.queued += len(chunk) / sample_rate
        self.clips.append(len(chunk))

    async def drain(self) -> None:
        """Wait until the queued audio has played."""
        while self._progress() < self.queued:
            await asyncio.sleep(0.005)

    def stop(self) -> float:
        """Drop what has not played."""
        self.stops += 1
        progress = self._progress()
        dropped = self.queued - progress
        self.played_before += progress
        self.queued, self.started = 0.0, None
        return dropped

    def played_seconds(self) -> float:
        """Total played."""
        return self.played_before + self._progress()

    async def open(self) -> bool:
        """Always ready."""
        return True

    def close(self) -> None:
        """Nothing to release."""
