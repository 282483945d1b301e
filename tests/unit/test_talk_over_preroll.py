"""Talking over IRIS on the microphone cancelled in-process: the capture keeps the second
before the barge-in, where the question's first words are (speech over IRIS is damped
there, so the run that interrupts it completes late); with the listener's own rule it
keeps its usual pre-roll."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from iris_voice.config import AudioConfig
from iris_voice.events import EventBus
from iris_voice.voice.echoguard import EchoGuard
from iris_voice.voice.heard import BargeIn, UtteranceReady
from iris_voice.voice.listener import TALK_OVER_PRE_ROLL_S, Listener
from tests.support.fakes_audio import SILENCE, SPEECH, FakeVad, FakeWake, ScriptSource, frames

pytestmark = pytest.mark.timeout(60)


def _marked(kind: int, seconds: float, start: int) -> list[np.ndarray]:
    """Frames of ``kind`` whose second sample counts up from ``start``: where each came from."""
    out = frames(kind, seconds)
    for i, f in enumerate(out):
        f[1] = start + i
    return out


async def _barge_in(method: str) -> np.ndarray:
    cfg = AudioConfig(barge_in="voice", pre_roll_ms=400)
    listener = Listener(cfg, FakeVad(), FakeWake(), EventBus().publish)
    guard = EchoGuard()
    guard.use(method, "test")
    guard.reference = lambda since: 0.0  # (PipeWire: the level gate lets any speech through)
    guard.converged = lambda: True
    listener.guard = guard
    listener.answering()
    # IRIS talks (silence on the cancelled microphone), then a person: a faint start the
    # VAD misses (damped under IRIS's voice), then speech.
    script = _marked(SILENCE, 1.0, 1) + _marked(SILENCE + 1, 0.5, 100) + _marked(SPEECH, 1.5, 200)
    out: asyncio.Queue = asyncio.Queue()
    task = asyncio.create_task(listener.run(ScriptSource(script, speed=10.0, tail_s=2.0), out))
    heard = []
    while not any(isinstance(h, UtteranceReady) for h in heard):
        heard.append(await asyncio.wait_for(out.get(), 30))
    task.cancel()
    assert isinstance(heard[0], BargeIn)
    return next(h for h in heard if isinstance(h, UtteranceReady)).utterance.audio


async def test_the_in_process_canceller_keeps_a_second_before_the_barge_in() -> None:
    audio = await _barge_in("webrtc")
    marks = audio.reshape(-1, 512)[:, 1]
    # The damped start (marks 100…) is in the capture, up to a second before the barge-in.
    assert 100 in marks or 101 in marks
    assert len(audio) / 16000 >= TALK_OVER_PRE_ROLL_S


async def test_pipewire_keeps_the_usual_pre_roll() -> None:
    audio = await _barge_in("pipewire-webrtc")
    marks = audio.reshape(-1, 512)[:, 1]
    assert not {100, 101, 102} & set(marks.tolist())
