"""``iris satellite`` against a hub over a real Wyoming connection, with scripted audio:
a question goes to the hub and its answer comes out of the satellite's speaker; a hub that
is not there yet costs a chime, not the satellite, which connects once the hub comes."""

from __future__ import annotations

import asyncio
import socket
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np
import pytest

from iris_voice.config import Config
from iris_voice.events import EventBus
from iris_voice.voice.listener import Listener
from iris_voice.wyoming.satellite import CHIME_RATE, SatelliteClient, error_chimes, satellite_name
from tests.support.fakes_audio import (
    SILENCE,
    SPEECH,
    WAKE,
    FakeSink,
    FakeStt,
    FakeTts,
    FakeVad,
    FakeWake,
    frames,
)
from tests.support.hub_helpers import EchoBackend, make_part
from tools.testbed.hubs import start_hub
from tools.testbed.servers import free_port

CFG = Config.model_validate({"satellite": {"reconnect_max_s": 0.2, "connect_timeout_s": 1.0}})


class LiveSource:
    """Frames paced 10x real time, fed by the test, silence in between; ends when closed."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        self.open = True

    def say(self, *parts: list) -> None:
        for part in parts:
            for frame in part:
                self.queue.put_nowait(frame)

    async def frames(self):
        silence = frames(SILENCE, 0.032)[0]
        while self.open:
            yield silence if self.queue.empty() else self.queue.get_nowait()
            await asyncio.sleep(0.0032)

    def close(self) -> None:
        self.open = False


def question() -> list:
    return [frames(WAKE, 0.3), frames(SPEECH, 0.6), frames(SILENCE, 1.0)]


async def wait_for(predicate, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out waiting")


async def shut_down(tasks, source: LiveSource, part, server, timers) -> None:
    """End a test's satellites and hub: the tasks, the microphone, the hub part, its server
    (None: never started) and the timer store."""
    for task in tasks:
        task.cancel()
    source.close()
    await part.aclose()
    if server is not None:
        await server.stop()
    timers.store.close()


def make_satellite(port: int, sink: FakeSink, token: str = "") -> SatelliteClient:
    cfg = CFG.model_copy(update={"satellite": CFG.satellite.model_copy(update={"token": token})})
    listener = Listener(cfg.audio, FakeVad(), FakeWake(), EventBus().publish)
    return SatelliteClient(cfg, f"tcp://127.0.0.1:{port}", "kitchen", listener, sink)


async def test_a_question_is_answered_through_the_satellites_speaker(tmp_path: Path) -> None:
    part, timers, _bus = make_part(tmp_path, EchoBackend())
    part.stt = FakeStt("Who wrote Hamlet?")
    server, port = await start_hub([part])
    sink, source = FakeSink(speed=20.0), LiveSource()
    sat = make_satellite(port, sink)
    task = asyncio.create_task(sat.run(source))
    try:
        await asyncio.wait_for(sat.connected.wait(), 5.0)
        source.say(*question())
        await wait_for(lambda: sat.answers == 1)
        assert sat.turns == 1
        assert part.turns[-1][0] == "kitchen" and part.turns[-1][1].text == "Who wrote Hamlet?"
        said = " ".join(part.turns[-1][1].sentences)
        assert said.startswith("You said: Who wrote Hamlet?")
        # FakeTts: 0.2 s per sentence at 16 kHz, all of it played by the satellite
        assert sum(sink.clips) == pytest.approx(len(part.turns[-1][1].sentences) * 3200, abs=2)
    finally:
        await shut_down([task], source, part, server, timers)


async def test_no_hub_yet_chimes_then_the_satellite_connects_when_it_comes(tmp_path: Path) -> None:
    port = free_port()
    sink, source = FakeSink(speed=50.0), LiveSource()
    sat = make_satellite(port, sink)
    task = asyncio.create_task(sat.run(source))
    part, timers, _bus = make_part(tmp_path, EchoBackend())
    part.stt = FakeStt("Who wrote Hamlet?")
    server = None
    try:
        source.say(*question())
        await wait_for(lambda: sink.clips == [len(error_chimes())])  # no hub: the chimes, once
        assert sat.turns == 0 and not task.done()
        server, bound = await start_hub([part], port=port)
        assert bound == port
        await asyncio.wait_for(sat.connected.wait(), 5.0)
        source.say(*question())
        await wait_for(lambda: sat.answers == 1)
        await server.stop()  # the hub goes away: the satellite keeps running and retries
        await wait_for(lambda: not sat.connected.is_set())
        assert not task.done()
    finally:
        await shut_down([task], source, part, server, timers)


def test_the_name_comes_from_the_flag_the_config_or_the_host() -> None:
    assert satellite_name(CFG, "office") == "office"
    named = Config.model_validate({"satellite": {"name": "kitchen"}})
    assert satellite_name(named) == "kitchen"
    assert satellite_name(CFG) == socket.gethostname().split(".")[0]
    assert len(error_chimes()) > CHIME_RATE  # two notes, audible


def test_a_bad_hub_address_names_the_key() -> None:
    from iris_voice.config import parse
    from iris_voice.errors import ConfigError

    with pytest.raises(ConfigError, match="satellite.hub"):
        parse({"satellite": {"hub": "http://kitchen:80"}})
    with pytest.raises(ValueError, match="satellite.hub"):
        SatelliteClient(CFG, "kitchen:10700", "x", None, FakeSink())  # type: ignore[arg-type]


async def test_the_wake_word_stops_the_answer_and_the_next_question_is_answered(tmp_path: Path) -> None:
    part, timers, _bus = make_part(tmp_path, EchoBackend())
    part.stt = FakeStt("Tell me a long story.", "What time is it in Tokyo?")
    part.tts = FakeTts(2.0)  # 2 s a sentence
    server, port = await start_hub([part])
    sink, source = FakeSink(speed=1.0), LiveSource()  # plays in real time
    sat = make_satellite(port, sink)
    task = asyncio.create_task(sat.run(source))
    try:
        await asyncio.wait_for(sat.connected.wait(), 5.0)
        source.say(*question())
        await wait_for(lambda: bool(sink.clips))  # the answer plays
        source.say(*question())  # "hey jarvis" over the answer, then the next question
        await wait_for(lambda: sink.stops >= 1)
        assert sink.played_seconds() < 3.5  # cut off: the answer is two sentences of 2 s
        await wait_for(lambda: sat.answers >= 1 and part.turns[-1][1].text.endswith("Tokyo?"))
        # the story's turn was stopped on the hub too (pause-satellite) unless it had ended
        assert [r.text for _name, r in part.turns][-1] == "What time is it in Tokyo?"
        history = part.conversations.peek("satellite:kitchen").conversation.messages()
        asked = [m["content"] for m in history if m["role"] == "user"]
        assert asked[-1] == "What time is it in Tokyo?"
    finally:
        await shut_down([task], source, part, server, timers)


async def test_a_timer_set_at_the_satellite_rings_on_its_speaker(tmp_path: Path) -> None:
    part, timers, _bus = make_part(tmp_path, EchoBackend())
    part.stt = FakeStt("Set a timer for one second.")
    server, port = await start_hub([part])
    sink, source = FakeSink(speed=50.0), LiveSource()
    sat = make_satellite(port, sink)
    tasks = [asyncio.create_task(sat.run(source)), asyncio.create_task(timers.run())]
    try:
        await asyncio.wait_for(sat.connected.wait(), 5.0)
        source.say(*question())
        await wait_for(lambda: sat.answers == 1)
        answer = sum(sink.clips)
        # the chime (0.6 s) and the sentence (FakeTts: 0.2 s), both at the hub's 16 kHz
        await wait_for(lambda: sum(sink.clips) - answer >= 12000, timeout=5.0)
        assert [r.state for r in await timers.list()] == []  # rung, not left pending
        assert part.turns[-1][1].text == "Set a timer for one second."
    finally:
        await shut_down(tasks, source, part, server, timers)


async def test_a_hub_with_a_token_lets_in_the_satellite_that_sends_it(tmp_path: Path) -> None:
    part, timers, _bus = make_part(tmp_path, EchoBackend())
    part.stt = FakeStt("Who wrote Hamlet?")
    server, port = await start_hub([part], token="s3cret-kitchen-token")
    sink, source = FakeSink(speed=20.0), LiveSource()
    good, bad = (
        make_satellite(port, sink, token="s3cret-kitchen-token"),
        make_satellite(port, FakeSink(), token="guess"),
    )
    tasks = [asyncio.create_task(good.run(source)), asyncio.create_task(bad.run(LiveSource()))]
    try:
        await asyncio.wait_for(good.connected.wait(), 5.0)
        source.say(*question())
        await wait_for(lambda: good.answers == 1)
        assert not bad.connected.is_set() and not tasks[1].done()  # refused, and retrying
        assert list(part.connected) == ["kitchen"] and part.connected["kitchen"].conn.peer
    finally:
        await shut_down(tasks, source, part, server, timers)


def ringing_satellite(port: int, sink: FakeSink, timeout_s: float = 30.0) -> SatelliteClient:
    """A satellite whose timers repeat every second (``audio.alarm_repeat_s``' least)."""
    audio = CFG.audio.model_copy(update={"alarm_repeat_s": 1.0, "alarm_timeout_s": timeout_s})
    cfg = CFG.model_copy(update={"audio": audio})
    listener = Listener(cfg.audio, FakeVad(), FakeWake(), EventBus().publish)
    return SatelliteClient(cfg, f"tcp://127.0.0.1:{port}", "kitchen", listener, sink)


def talk() -> list:
    """Speech without the wake word."""
    return [frames(SPEECH, 0.6), frames(SILENCE, 1.0)]


@asynccontextmanager
async def timer_set_at_the_kitchen(tmp_path: Path, *heard: str, timeout_s: float = 30.0):
    """A hub and a ringing satellite; "Set a timer for one second." asked and answered.
    Yields (satellite, hub part, model, microphone, model requests before the ring)."""
    backend = EchoBackend()
    part, timers, _bus = make_part(tmp_path, backend)
    part.stt = FakeStt("Set a timer for one second.", *heard)
    server, port = await start_hub([part])
    source = LiveSource()
    sat = ringing_satellite(port, FakeSink(speed=50.0), timeout_s)
    tasks = [asyncio.create_task(sat.run(source)), asyncio.create_task(timers.run())]
    try:
        await asyncio.wait_for(sat.connected.wait(), 5.0)
        source.say(*question())
        await wait_for(lambda: sat.answers == 1)
        yield sat, part, backend, source, len(backend.requests)
    finally:
        await sat.alarm.aclose()
        await shut_down(tasks, source, part, server, timers)


async def test_a_ringing_timer_repeats_until_stop_is_said_without_the_wake_word(tmp_path: Path) -> None:
    async with timer_set_at_the_kitchen(tmp_path, "Stop.") as (sat, part, backend, source, asked):
        await wait_for(lambda: sat.alarm.repeats >= 1, timeout=6.0)  # rung, then again a second later
        assert sat.alarm._audio and sat.alarm.ringing
        source.say(*talk())  # "stop", no wake word
        await wait_for(lambda: not sat.alarm.ringing)
        assert part.turns[-1][1].text == "Stop." and part.turns[-1][1].sentences == []
        repeats = sat.alarm.repeats
        await asyncio.sleep(1.5)
        assert sat.alarm.repeats == repeats  # dismissed: no more repeats
        assert len(backend.requests) == asked  # "stop" never reached the model


async def test_talk_over_a_ringing_timer_is_not_answered_and_the_ring_times_out(tmp_path: Path) -> None:
    heard = ("What a lovely day it is.", "Who wrote Hamlet?")
    kitchen = timer_set_at_the_kitchen(tmp_path, *heard, timeout_s=4.0)
    async with kitchen as (sat, part, backend, source, asked):
        await wait_for(lambda: sat.alarm.ringing, timeout=5.0)
        source.say(*talk())  # people talking in the kitchen while it rings
        await wait_for(lambda: part.turns[-1][1].text == "What a lovely day it is.")
        assert sat.alarm.ringing and len(backend.requests) == asked  # heard, not answered
        await wait_for(lambda: not sat.alarm.ringing, timeout=6.0)  # audio.alarm_timeout_s
        assert 1 <= sat.alarm.repeats <= 4
        source.say(*question())  # the next question is a question again
        await wait_for(lambda: sat.answers == 2)
        assert part.turns[-1][1].text == "Who wrote Hamlet?" and len(backend.requests) == asked + 1


async def test_the_wake_word_dismisses_a_ringing_timer_and_its_question_is_answered(tmp_path: Path) -> None:
    kitchen = timer_set_at_the_kitchen(tmp_path, "Who wrote Hamlet?")
    async with kitchen as (sat, part, _backend, source, _asked):
        await wait_for(lambda: sat.alarm.ringing and not sat.alarm.announcing, timeout=5.0)
        source.say(*question())
        await wait_for(lambda: sat.answers == 2)
        assert not sat.alarm.ringing and part.turns[-1][1].text == "Who wrote Hamlet?"


async def test_a_ring_after_a_barge_in_is_played_and_the_next_reply_is_not_taken_for_it() -> None:
    """Events as the hub sends them when a timer finishes between a barge-in and the new
    question's transcript: the ring is not part of the old answer (played, kept for the
    repeats), and the new reply is not the ring."""
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.event import Event

    sink = FakeSink(speed=100.0)
    sat = ringing_satellite(free_port(), sink)
    sat._skip = True  # a barge-in: the rest of the old answer is dropped until the transcript
    ring = np.full(1600, 7, np.int16)
    reply = np.full(3200, 9, np.int16)
    fmt = {"rate": 16000, "width": 2, "channels": 1}
    for event in [
        Event("timer-finished", {"id": "3"}), AudioStart(**fmt).event(),
        AudioChunk(audio=ring.tobytes(), **fmt).event(), AudioStop().event(),
        Event("transcript", {"text": "Who wrote Hamlet?"}), AudioStart(**fmt).event(),
        AudioChunk(audio=reply.tobytes(), **fmt).event(), AudioStop().event(),
    ]:  # fmt: skip
        await sat._on_event(event)
    assert sink.clips == [1600, 3200]  # both played
    assert sat.alarm.ringing and [len(a) for a in sat.alarm._audio] == [1600]
    assert sat.alarm.dismiss("test") and not sat.alarm.ringing
    await sat.alarm.aclose()


async def test_a_connected_satellite_answers_the_hubs_probe_and_keeps_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "iris_voice.wyoming.hub.PROBE_S", 30.0
    )  # a busy machine may answer late; it must answer
    from wyoming.client import AsyncTcpClient
    from wyoming.event import Event

    part, timers, _bus = make_part(tmp_path, EchoBackend())
    server, port = await start_hub([part])
    source = LiveSource()
    sat = make_satellite(port, FakeSink(speed=20.0))
    tasks = [asyncio.create_task(sat.run(source))]
    try:
        await asyncio.wait_for(sat.connected.wait(), 5.0)
        async with AsyncTcpClient("127.0.0.1", port) as impostor:
            await impostor.write_event(Event("run-satellite", {"name": "kitchen"}))
            answer = await asyncio.wait_for(impostor.read_event(), 10.0)
        assert answer is not None and answer.type == "error" and answer.data["code"] == "name-taken"
        assert part.connected["kitchen"].conn.peer and sat.connected.is_set()
    finally:
        await shut_down(tasks, source, part, server, timers)
