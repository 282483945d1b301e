"""The hub's satellite part over a real Wyoming connection (the ``wyoming`` package's own
client and server), with fakes of speech and the model: conversations per satellite, one
model request at a time, timers ringing on the satellite that set them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.satellite import PauseSatellite, RunSatellite

from iris_voice.events import TimerFinished
from iris_voice.timers.service import TimerService
from iris_voice.wyoming.hub import SatellitePart
from tests.support.hub_helpers import EchoBackend, make_part, spoken
from tools.testbed.hubs import start_hub

END = ("handled", "not-handled", "error")


class Sat:
    """A protocol-level satellite: the package's TCP client."""

    def __init__(self, port: int, name: str) -> None:
        self.client = AsyncTcpClient("127.0.0.1", port)
        self.name = name

    async def __aenter__(self) -> Sat:
        await self.client.connect()
        await self.client.write_event(Event(RunSatellite().event().type, {"name": self.name}))
        hello = await self.read()
        assert hello.type == "satellite-connected", hello
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.disconnect()

    async def read(self, timeout: float = 10.0) -> Event:
        event = await asyncio.wait_for(self.client.read_event(), timeout)
        assert event is not None, f"{self.name}: the hub closed the connection"
        return event

    async def ask(self, text: str) -> tuple[str, str, int, list[str]]:
        """One turn: (transcript, end event's text, audio bytes received, event types)."""
        run = RunPipeline(
            start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS, wake_word_name="hey_jarvis"
        )
        await self.client.write_event(run.event())
        await self.client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await self.client.write_event(AudioChunk(rate=16000, width=2, channels=1, audio=spoken(text)).event())
        await self.client.write_event(AudioStop().event())
        transcript, audio, types = "", 0, []
        while True:
            event = await self.read()
            types.append(event.type)
            if event.type == "transcript":
                transcript = event.data["text"]
            elif event.type == "audio-chunk":
                audio += len(AudioChunk.from_event(event).audio)
            elif event.type in END:
                return transcript, event.data.get("text") or "", audio, types


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[tuple[SatellitePart, int, EchoBackend, TimerService]]:
    backend = EchoBackend()
    part, timers, _bus = make_part(tmp_path, backend, hold_timers_s=60.0)
    server, port = await start_hub([part])
    running = asyncio.create_task(timers.run())
    yield part, port, backend, timers
    running.cancel()
    await part.aclose()
    await server.stop()
    timers.store.close()


async def test_a_turn_sends_transcript_reply_audio_then_handled(hub) -> None:
    _part, port, _backend, _timers = hub
    async with Sat(port, "kitchen") as sat:
        transcript, reply, audio, types = await sat.ask("Who wrote Hamlet?")
    assert transcript == "Who wrote Hamlet?"
    assert reply.startswith("You said: Who wrote Hamlet?")
    assert audio > 0
    assert types[0] == "transcript" and types[1] == "audio-start"
    assert types[-2:] == ["audio-stop", "handled"]


async def test_two_satellites_at_once_keep_their_own_conversations(hub) -> None:
    part, port, backend, _timers = hub
    async with Sat(port, "kitchen") as kitchen, Sat(port, "office") as office:
        for k, o in [("kitchen one?", "office one?"), ("kitchen two?", "office two?")]:
            (_, kr, ka, _), (_, orep, oa, _) = await asyncio.gather(kitchen.ask(k), office.ask(o))
            assert kr.startswith(f"You said: {k}") and orep.startswith(f"You said: {o}")
            assert ka > 0 and oa > 0
    assert "I remember 1 earlier" in kr and "I remember 1 earlier" in orep  # only their own
    assert backend.most == 1  # the model ran one request at a time
    for name in ("kitchen", "office"):
        said = [
            m["content"]
            for m in part.conversations.peek(f"satellite:{name}").conversation.messages()
            if m["role"] == "user"
        ]
        assert said == [f"{name} one?", f"{name} two?"]


async def test_a_pause_stops_the_turn_and_the_satellite_answers_again(hub) -> None:
    _part, port, backend, _timers = hub
    backend.delay = 3.0  # slow enough to be interrupted
    async with Sat(port, "kitchen") as sat:
        run = RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS)
        await sat.client.write_event(run.event())
        await sat.client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await sat.client.write_event(
            AudioChunk(rate=16000, width=2, channels=1, audio=spoken("slow?")).event()
        )
        await sat.client.write_event(AudioStop().event())
        assert (await sat.read()).type == "transcript"
        await sat.client.write_event(PauseSatellite().event())
        backend.delay = 0.05
        transcript, reply, _audio, _types = await sat.ask("fast?")
    assert transcript == "fast?" and reply.startswith("You said: fast?")


async def test_silence_and_stop_end_with_not_handled(hub) -> None:
    _part, port, backend, _timers = hub
    async with Sat(port, "kitchen") as sat:
        assert (await sat.ask("stop"))[1:] == ("stop", 0, ["transcript", "not-handled"])
        assert (await sat.ask(""))[1] == "nothing was said"
        assert (await sat.ask("x" * 31 * 32000))[1:3] == ("too long", 0)  # 31 s: never transcribed
    assert backend.requests == []


async def test_a_turn_that_ends_at_asr_gets_the_transcript_only(hub) -> None:
    """What a satellite asks over its ringing timer: the words, no answer, no model."""
    _part, port, backend, _timers = hub
    async with Sat(port, "kitchen") as sat:
        run = RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.ASR)
        await sat.client.write_event(run.event())
        await sat.client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        words = spoken("What a lovely day.")
        await sat.client.write_event(AudioChunk(rate=16000, width=2, channels=1, audio=words).event())
        await sat.client.write_event(AudioStop().event())
        heard = await sat.read()
        assert (heard.type, heard.data["text"]) == ("transcript", "What a lovely day.")
        with pytest.raises(TimeoutError):
            await sat.read(timeout=0.5)
        assert (await sat.ask("Who wrote Hamlet?"))[1].startswith("You said: Who wrote Hamlet?")
    assert len(backend.requests) == 1


async def test_a_timer_set_from_the_kitchen_rings_in_the_kitchen_only(hub) -> None:
    part, port, _backend, timers = hub
    async with Sat(port, "kitchen") as kitchen, Sat(port, "office") as office:
        _t, reply, _a, _types = await kitchen.ask("Set a timer for one second.")
        assert "timer" in reply.lower()
        rows = await timers.list()
        assert [r.origin for r in rows] == ["kitchen"]
        finished = await kitchen.read(timeout=5.0)
        assert finished.type == "timer-finished" and finished.data["id"] == str(rows[0].id)
        types, audio = [], 0
        while not types or types[-1] != "audio-stop":
            event = await kitchen.read()
            types.append(event.type)
            if event.type == "audio-chunk":
                audio += len(AudioChunk.from_event(event).audio)
        assert types[0] == "audio-start" and audio > 16000  # the chime and the sentence
        with pytest.raises(TimeoutError):
            await office.read(timeout=1.0)
    for _ in range(100):  # the server sees the disconnects a moment later
        if not part.connected:
            break
        await asyncio.sleep(0.02)
    assert part.connected == {}


async def test_a_timer_waits_for_its_satellite_to_come_back(hub) -> None:
    _part, port, _backend, timers = hub
    async with Sat(port, "kitchen") as kitchen:
        await kitchen.ask("Set a timer for one second.")
    await asyncio.sleep(1.8)  # due while the kitchen is away: kept pending, not lost
    rows = await timers.list()
    assert [(r.origin, r.state) for r in rows] == [("kitchen", "pending")]
    async with Sat(port, "kitchen") as kitchen:
        assert (await kitchen.read(timeout=5.0)).type == "timer-finished"
    assert await timers.list() == []


async def test_without_a_satellite_the_hubs_own_speaker_rings_it(tmp_path: Path) -> None:
    rung: list[TimerFinished] = []
    part, timers, _bus = make_part(tmp_path, EchoBackend(), local_announce=rung.append)
    timers.store.add("timer", "tea", timers.clock.now() - 1, duration=60.0, origin="kitchen")
    running = asyncio.create_task(timers.run())
    try:
        for _ in range(50):
            if rung:
                break
            await asyncio.sleep(0.05)
    finally:
        running.cancel()
        timers.store.close()
    assert [(e.origin, e.label) for e in rung] == [("kitchen", "tea")]
    assert part.connected == {}


def test_hold_rules(tmp_path: Path) -> None:
    part, timers, _bus = make_part(tmp_path, EchoBackend(), hold_timers_s=100.0)

    class Row:
        def __init__(self, origin: str) -> None:
            self.origin, self.due_at = origin, 1000.0

    assert part.hold(Row(""), 1000.0) is None  # the hub's own timer fires (iris serve keeps it)
    assert part.hold(Row("kitchen"), 1000.0) == 1100.0  # away: kept for hold_timers_s
    part.local_announce = lambda _e: None
    assert part.hold(Row(""), 1000.0) is None and part.hold(Row("kitchen"), 1000.0) is None
    timers.store.close()


async def test_a_model_that_is_gone_is_said_and_the_turn_still_ends(tmp_path: Path) -> None:
    from iris_voice.errors import LlmError
    from iris_voice.voice.servergone import UNREACHABLE

    class GoneBackend(EchoBackend):
        async def stream(self, messages, tools, options=None):  # type: ignore[override]
            raise LlmError("llm-unreachable", "cannot reach the model at http://127.0.0.1:9")
            yield  # an async generator, like the real one

    part, timers, _bus = make_part(tmp_path, GoneBackend())
    server, port = await start_hub([part])
    try:
        async with Sat(port, "kitchen") as sat:
            transcript, reply, audio, types = await sat.ask("Who wrote Hamlet?")
    finally:
        await part.aclose()
        await server.stop()
        timers.store.close()
    assert transcript == "Who wrote Hamlet?" and reply == UNREACHABLE and audio > 0
    assert types[-1] == "handled" and part.turns[-1][1].error == "llm-unreachable"


@contextlib.asynccontextmanager
async def asked(
    tmp_path: Path, backend: EchoBackend, text: str, **tts
) -> AsyncIterator[tuple[SatellitePart, str, int]]:
    """A hub of its own (``tts``: that config section), one satellite turn asking ``text``:
    the part, the end event's text and the audio bytes the satellite got."""
    part, timers, _bus = make_part(tmp_path, backend, tts=tts)
    server, port = await start_hub([part])
    try:
        async with Sat(port, "kitchen") as sat:
            _transcript, said, audio, _types = await sat.ask(text)
        yield part, said, audio
    finally:
        await part.aclose()
        await server.stop()
        timers.store.close()


def chunk_bytes(tts) -> int:
    """Bytes of one sentence of the fake voice (two chunks of int16)."""
    return int(tts.sample_rate * tts.seconds / 2) * 2 * 2


async def test_a_late_reply_reaches_the_satellite_after_the_cue(tmp_path: Path) -> None:
    # the model writes a word every 0.4 s: no sentence within the cue's 0.2 s
    async with asked(tmp_path, EchoBackend(delay=4.0), "Tell me a joke.", late_cue_s=0.2) as (
        part,
        said,
        audio,
    ):
        tts = part.tts
    assert tts.spoken[0] == "One moment." and len(tts.spoken) >= 2, tts.spoken
    assert "One moment" not in said and said.startswith("You said: Tell me a joke."), said  # the reply alone
    assert audio == chunk_bytes(tts) * len(tts.spoken)  # the cue's audio, then the reply's, in one stream


async def test_a_prompt_reply_has_no_cue(tmp_path: Path) -> None:
    async with asked(tmp_path, EchoBackend(), "Hello there.", late_cue_s=30) as (part, said, audio):
        tts = part.tts
    assert said.startswith("You said: Hello there.")
    # the cue is made ready when the satellite connects, and not sent: the reply's audio alone
    assert tts.spoken[0] == "One moment." and audio == chunk_bytes(tts) * (len(tts.spoken) - 1), tts.spoken
