"""The hub's ears are lent, not leaked: satellites that stream their microphones come and
go, and one set of listening models serves them all (``wyoming.ears.ListenerPool``), reset
between satellites; a set beyond what the hub keeps is let go."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from wyoming.audio import AudioChunk
from wyoming.pipeline import PipelineStage, RunPipeline

from iris_voice.config import AudioConfig
from iris_voice.voice.listener import Listener
from iris_voice.wyoming.ears import ListenerPool
from tests.support.fakes_audio import WAKE, FakeVad, FakeWake, frames
from tests.support.hub_helpers import EchoBackend, make_part
from tests.unit.test_hub import Sat
from tools.testbed.hubs import start_hub

pytestmark = pytest.mark.timeout(60)


@dataclass
class Models:
    """A fake set of listening models, counting how often it was reset."""

    vad: FakeVad = field(default_factory=FakeVad)
    wake: FakeWake = field(default_factory=FakeWake)
    resets: int = 0


def pool(keep: int = 2) -> ListenerPool:
    def reset(models: Models) -> None:
        models.resets += 1
        models.vad.reset()
        models.wake.reset()

    async def load() -> Models:
        return Models()

    def listen(models: Models) -> Listener:
        return Listener(AudioConfig(), models.vad, models.wake, lambda _event: None)

    return ListenerPool(load, listen, reset, keep=keep)


async def test_a_set_given_back_is_reset_and_lent_again():
    ears = pool(keep=1)
    first = await ears.take()
    second = await ears.take()  # two satellites at once: two sets
    assert ears.loaded == 2 and ears.lent == 2
    ears.give_back(first)
    ears.give_back(second)  # beyond ``keep``: let go
    ears.give_back(second)  # given back twice: nothing happens
    assert ears.lent == 0
    third = await ears.take()
    assert ears.loaded == 2 and third.vad is first.vad  # the kept set, not a new one
    assert third is not first  # a fresh listener: no state of the last satellite's


async def test_satellites_streaming_one_after_another_share_one_set(tmp_path: Path):
    ears = pool()
    part, timers, _bus = make_part(tmp_path, EchoBackend(), listener=ears)
    server, port = await start_hub([part])
    wake = np.concatenate(frames(WAKE, 0.5)).tobytes()
    run = RunPipeline(
        start_stage=PipelineStage.WAKE, end_stage=PipelineStage.TTS, wake_word_name="hey_jarvis"
    )
    try:
        for i in range(12):
            async with Sat(port, f"kitchen-{i}") as sat:
                await sat.client.write_event(run.event())
                chunk = AudioChunk(rate=16000, width=2, channels=1, audio=wake).event()
                await sat.client.write_event(chunk)
                while (event := await sat.read()).type != "detection":
                    pass  # the hub's ears heard the wake word in the stream
            for _ in range(200):  # the hub sees the connection close
                if ears.lent == 0:
                    break
                await asyncio.sleep(0.02)
            assert ears.lent == 0, f"satellite {i} left, its models were not given back"
    finally:
        await part.aclose()
        await server.stop()
        timers.store.close()
    assert ears.loaded == 1  # one set of models for all twelve
    assert event.type == "detection"
