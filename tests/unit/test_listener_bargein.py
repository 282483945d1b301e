"""Voice barge-in on the in-process canceller: half a run louder than IRIS's echo."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from iris_voice.config import AudioConfig
from iris_voice.voice.echoguard import NEAR_SHARE
from iris_voice.voice.heard import BargeIn
from iris_voice.voice.listener import Listener
from tests.support.fakes_audio import FRAME_S, SPEECH, FakeVad, frames


class _Guard:
    """The in-process canceller's guard: voice may interrupt after ``need`` s of speech, and
    ``near_end`` answers from a script (True: louder than IRIS's echo)."""

    gates_barge_in = False

    def __init__(self, near: list[bool], need: float = 0.192) -> None:
        self.near, self.barge_in_speech_s = iter(near), need

    def voice_barge_in_now(self) -> bool:
        """The canceller has converged."""
        return True

    def near_end(self, frame: np.ndarray) -> bool:
        """The next scripted answer."""
        return next(self.near)

    def snapshot(self) -> dict:
        """Nothing to log."""
        return {}


async def _interrupted(near: list[bool]) -> int | None:
    """The frame (1-based) at which IRIS was interrupted by speech with ``near``, or None."""
    listener = Listener(AudioConfig(barge_in="voice", activation="always"), FakeVad(), None, lambda e: None)
    listener.guard = _Guard(near)  # type: ignore[assignment]
    listener._out = asyncio.Queue()
    for i, frame in enumerate(frames(SPEECH, len(near) * FRAME_S), 1):
        await listener._barge_in_check(frame)
        if not listener._out.empty():
            assert isinstance(listener._out.get_nowait(), BargeIn)
            return i
    return None


@pytest.mark.parametrize(
    ("near", "at"),
    [
        ([True] * 8, 6),  # a person above the echo all along: the 192 ms run
        ([True, False] * 4, 6),  # damped in double talk, every other frame above it
        ([False, True, False, False, True, False, True, True], 8),  # the run waits for half
        ([True, False, False, False, False, False, False, False, False, False], None),  # a burst
        ([False] * 10, None),  # IRIS's own voice, Silero calling it speech
    ],
)
async def test_a_run_interrupts_once_half_its_frames_are_louder_than_the_echo(near, at) -> None:
    assert NEAR_SHARE == 0.5
    assert await _interrupted(near) == at
