"""A speaker stream that fails while a reply plays: the sink reopens it and the rest of
the reply is played, on a fake PortAudio whose first output stream fails mid-write (as
PortAudio's ALSA backend did on PipeWire: "Unanticipated host error")."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import numpy as np
import pytest

from iris_voice.audio import playback
from iris_voice.audio.devices import AudioDevice
from iris_voice.audio.playback import SpeakerSink
from iris_voice.config import AudioConfig
from iris_voice.events import AudioDeviceProblem
from iris_voice.voice.speaker import ReplySpeaker
from tests.support.fakes_audio import FakeTts

RATE = 16000
BLOCK = 320  # 20 ms at 16 kHz: SpeakerSink's block
LATENCY_S = 0.04  # what the fake device says it buffers: two blocks

pytestmark = pytest.mark.timeout(30)


class PortAudioError(Exception):
    """The fake sounddevice's error type."""


@dataclass
class Fails:
    """When a fake stream fails: at its write number ``after`` + 1, counting only the
    writes that carry audio, or every write (silence too) with ``silence=True``."""

    after: int | None
    silence: bool = False


class FakeStream:
    """An output stream that keeps what it was given, at ``speed`` times real time."""

    def __init__(self, fails: Fails, speed: float) -> None:
        self.fails = fails
        self.speed = speed
        self.latency = LATENCY_S
        self.writes = 0
        self.samples: list[np.ndarray] = []

    def start(self) -> None:
        """Nothing to start."""

    def write(self, out: np.ndarray) -> bool:
        """Keep a copy of the block, or raise as PortAudio did; False: no underflow."""
        counts = self.fails.silence or bool(out.any())
        if counts and self.fails.after is not None and self.writes >= self.fails.after:
            raise PortAudioError("Unanticipated host error [PaErrorCode -9999]")
        self.writes += counts
        self.samples.append(out[:, 0].copy())
        time.sleep(len(out) / RATE / self.speed)
        return False

    def close(self, ignore_errors: bool = True) -> None:
        """Nothing to release."""

    def audio(self) -> np.ndarray:
        """Every sample written, silence padding removed (the test audio has no zeros)."""
        written = np.concatenate(self.samples) if self.samples else np.zeros(0, np.int16)
        return written[written != 0]


class FakePortAudio:
    """Just enough of sounddevice for SpeakerSink: each stream fails as ``plan`` says (the
    last entry repeats); after the first stream, ``opens_failing`` attempts to open fail."""

    PortAudioError = PortAudioError

    def __init__(self, plan: list[Fails], opens_failing: int = 0, speed: float = 10.0) -> None:
        self.plan = list(plan)
        self.opens_failing = opens_failing
        self.speed = speed
        self.streams: list[FakeStream] = []
        self.open_attempts = 0

    def check_output_settings(self, **_kw: object) -> None:
        """Every setting is fine."""

    def OutputStream(self, **_kw: object) -> FakeStream:  # noqa: N802 - sounddevice's name
        """The next stream of the plan, or PortAudioError while the device is away."""
        self.open_attempts += 1
        if self.streams and self.opens_failing > 0:
            self.opens_failing -= 1
            raise PortAudioError("Device unavailable")
        fails = self.plan.pop(0) if len(self.plan) > 1 else self.plan[0]
        self.streams.append(FakeStream(fails, self.speed))
        return self.streams[-1]


def _sink(monkeypatch, pa: FakePortAudio, **kw) -> tuple[SpeakerSink, list]:
    device = AudioDevice(0, "fake", "ALSA", 0, 2, float(RATE), False, True)
    monkeypatch.setattr(playback, "sounddevice", lambda: pa)
    monkeypatch.setattr(playback, "resolve", lambda *_a: device)
    events: list = []
    kw.setdefault("retry_delays_s", (0.05, 0.1, 0.2))
    return SpeakerSink(AudioConfig(), events.append, sample_rate=RATE, **kw), events


def _ramp(n: int) -> np.ndarray:
    """Samples that are never zero and name their own position (1, 2, 3, … wrapping)."""
    return (np.arange(n) % 30000 + 1).astype(np.int16)


async def test_a_stream_failing_mid_reply_is_reopened_and_the_rest_is_played(monkeypatch) -> None:
    # Real time, as a reply is spoken; the first stream fails 0.5 s into the reply.
    pa = FakePortAudio(plan=[Fails(after=25), Fails(after=None)], speed=1.0)
    sink, events = _sink(monkeypatch, pa)
    speaker = ReplySpeaker(FakeTts(seconds_per_sentence=0.5), sink)
    try:
        reply = await speaker.speak(_sentences("One.", "Two.", "Three."))
    finally:
        sink.close()
    assert len(pa.streams) == 2, "the failed stream was not reopened"
    first, second = pa.streams[0].audio(), pa.streams[1].audio()
    whole = np.full(3 * 8000, 100, np.int16)  # FakeTts: 0.5 s of a constant per sentence
    # The second stream plays everything the first did not, after replaying at most what the
    # device may still have held when it failed (its latency) plus the write that failed.
    replayed = len(first) + len(second) - len(whole)
    assert 0 <= replayed <= round(LATENCY_S * RATE) + BLOCK
    assert len(first) >= 25 * BLOCK - BLOCK and len(second) > 0.9 * RATE
    assert reply.heard == ["One.", "Two.", "Three."] and not reply.interrupted
    assert sink.discarded_seconds() == 0.0
    assert sink.played_seconds() == pytest.approx(1.5, abs=1e-6)  # a replay is not counted twice
    assert [type(e) for e in events] == [AudioDeviceProblem]
    assert "Unanticipated host error" in events[0].detail


async def test_the_replay_starts_where_the_device_buffer_began(monkeypatch) -> None:
    pa = FakePortAudio(plan=[Fails(after=10), Fails(after=None)])
    sink, _ = _sink(monkeypatch, pa)
    reply = _ramp(RATE)  # one second, every sample telling its position
    try:
        await sink.play(reply, RATE)
        await sink.drain()
    finally:
        sink.close()
    first, second = pa.streams[0].audio(), pa.streams[1].audio()
    assert np.array_equal(first, reply[: 10 * BLOCK])
    # Blocks 8 and 9 may still have been in the device (40 ms of latency), block 10 failed.
    assert np.array_equal(second, reply[8 * BLOCK :])


async def test_audio_played_while_the_stream_is_reopened_is_kept(monkeypatch) -> None:
    pa = FakePortAudio(plan=[Fails(after=5), Fails(after=None)], opens_failing=2)
    sink, events = _sink(monkeypatch, pa)
    reply = _ramp(RATE)
    try:
        await sink.play(reply[:4000], RATE)
        await _until(lambda: sink._recovery is not None)
        await sink.play(reply[4000:], RATE)  # the next sentence arrives meanwhile
        await sink.drain()
    finally:
        sink.close()
    assert pa.open_attempts == 4 and len(pa.streams) == 2  # back on the third try
    assert np.array_equal(pa.streams[1].audio(), reply[3 * BLOCK :])
    assert sink.discarded_seconds() == 0.0
    assert len(events) == 1  # reported once, not once per failed attempt


async def test_a_device_that_stays_away_drops_the_reply_and_drain_returns(monkeypatch, caplog) -> None:
    pa = FakePortAudio(plan=[Fails(after=5)], opens_failing=99)
    sink, _ = _sink(monkeypatch, pa, retry_delays_s=(0.02, 0.05))
    try:
        await sink.play(_ramp(RATE), RATE)
        await asyncio.wait_for(sink.drain(), 10)
    finally:
        sink.close()
    assert len(pa.streams) == 1 and pa.open_attempts == 3
    assert sink.discarded_seconds() == pytest.approx(1.0 - 3 * BLOCK / RATE, abs=1e-6)
    assert "dropped" in caplog.text


async def test_stop_while_reopening_drops_the_held_reply(monkeypatch) -> None:
    pa = FakePortAudio(plan=[Fails(after=5), Fails(after=None)], opens_failing=1)
    sink, _ = _sink(monkeypatch, pa, retry_delays_s=(0.2, 0.2, 0.2))
    try:
        await sink.play(_ramp(RATE), RATE)
        await _until(lambda: sink._recovery is not None)
        assert sink.stop() > 0.5  # a barge-in: what was held is dropped, not played later
        await asyncio.wait_for(sink.drain(), 5)
        await asyncio.sleep(0.3)  # past the retry delay
        assert sink._recovery is None
    finally:
        sink.close()
    assert len(pa.streams) == 1


async def test_a_stream_failing_in_silence_holds_nothing(monkeypatch) -> None:
    pa = FakePortAudio(plan=[Fails(after=30, silence=True), Fails(after=None)])
    sink, events = _sink(monkeypatch, pa)
    try:
        await sink.play(_ramp(5 * BLOCK), RATE)
        await sink.drain()  # played; the stream writes silence until it fails
        await _until(lambda: events)
        await asyncio.sleep(0.05)
        assert sink._recovery is None and len(pa.streams) == 1  # the next play() reopens it
    finally:
        sink.close()
    assert sink.played_seconds() == pytest.approx(5 * BLOCK / RATE)
    assert pa.streams[0].audio().size == 5 * BLOCK


async def _until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def _sentences(*texts: str):
    for text in texts:
        yield text


async def test_the_sink_tells_how_loud_what_it_played_was(monkeypatch) -> None:
    """The echo guard's reference: the loudest block handed to the device since a time."""
    pa = FakePortAudio(plan=[Fails(after=None)])
    sink, _ = _sink(monkeypatch, pa)
    try:
        before = time.monotonic()
        assert sink.reference_level(before) == 0.0
        await sink.open()
        await sink.play(np.full(RATE // 5, 1000, np.int16), RATE)  # 0.2 s at RMS 1000
        await sink.drain()
        assert sink.reference_level(before) == pytest.approx(1000.0, rel=0.01)
        await asyncio.sleep(0.1)  # only silence since
        assert sink.reference_level(time.monotonic() - 0.02) < 1.0
    finally:
        sink.close()
