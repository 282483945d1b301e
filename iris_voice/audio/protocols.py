"""The Protocols of the audio devices, so the pipeline never imports an engine.

Frames are int16 mono numpy arrays at 16 kHz of ``FRAME_SAMPLES`` samples, as the
capture stage delivers them. The speech engines' Protocols (VAD, wake word, STT, TTS)
sit beside their adapters in ``iris_voice.speech``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import numpy as np


class AudioSource(Protocol):
    """Where frames come from: a microphone or a file."""

    def frames(self) -> AsyncIterator[np.ndarray]:
        """int16 frames of FRAME_SAMPLES at 16 kHz, until the source ends or is closed."""
        ...

    def close(self) -> None:
        """Release the device (the iterator ends); safe to call twice."""
        ...


class AudioSink(Protocol):
    """Where speech goes: a speaker or a file. Playback can be cut off at once."""

    first_sample_at: float | None
    """``time.monotonic()`` when the latest burst of audio reached the device (None: never);
    a speaker knows it a few ms after ``play`` returned, a file at once."""

    async def open(self) -> bool:
        """Get ready to play now (a speaker opens its stream), so the first reply does not
        wait for it; False when the device failed (``play`` will retry)."""
        ...

    async def play(self, chunk: np.ndarray, sample_rate: int) -> None:
        """Queue int16 mono samples; returns when they are accepted (not played)."""
        ...

    async def drain(self) -> None:
        """Wait until everything queued has been played."""
        ...

    def stop(self) -> float:
        """Drop everything queued and silence the output now; seconds of audio discarded."""
        ...

    def played_seconds(self) -> float:
        """Seconds of audio actually played since the sink was opened (a running total)."""
        ...

    def close(self) -> None:
        """Release the device or finish the file."""
        ...
