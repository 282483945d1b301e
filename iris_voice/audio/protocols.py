"""The Protocols of the audio stages, so the pipeline never imports an engine.

Frames are int16 mono numpy arrays at 16 kHz of ``FRAME_SAMPLES`` samples, as the
capture stage delivers them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import numpy as np


class SpeechDetector(Protocol):
    """Voice activity: the probability that a frame contains speech."""

    async def probability(self, frame: np.ndarray) -> float:
        """Speech probability 0..1 of one frame (int16, FRAME_SAMPLES samples)."""
        ...

    def reset(self) -> None:
        """Forget the recurrent state (between utterances)."""
        ...


class WakeDetector(Protocol):
    """Spots the wake word in a stream of frames."""

    name: str
    """The wake word model, e.g. ``hey_jarvis``."""

    async def process(self, frame: np.ndarray) -> float:
        """Feed one frame (int16); the highest wake-word score seen in it, 0..1."""
        ...

    def reset(self) -> None:
        """Forget buffered audio (after a detection, so one phrase fires once)."""
        ...


class AudioSource(Protocol):
    """Where frames come from: a microphone or a file."""

    def frames(self) -> AsyncIterator[np.ndarray]:
        """int16 frames of FRAME_SAMPLES at 16 kHz, until the source ends or is closed."""
        ...


class AudioSink(Protocol):
    """Where speech goes: a speaker or a file. Playback can be cut off at once."""

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
