"""IRIS's in-process echo canceller (``audio/aec.py``): the reference is what the speaker
wrote, taken in step with the microphone, and real AEC3 removes a room's echo with it —
but not when fed the same samples late, as a monitor of the speaker would give them."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest
import soxr

from iris_voice.audio.aec import IDLE_S, RECENT_FRAMES, SLACK, TRIM_EVERY, InProcessCanceller, PlayedReference
from iris_voice.audio.resample import resample
from tests.unit.test_speaker_recovery import RATE, Fails, FakePortAudio, _ramp, _sink
from tools.testbed.echopath import RATE as ROOM_RATE
from tools.testbed.echopath import Room

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "human"
PIPER_RATE = 22050


def _voice() -> np.ndarray:
    """Six seconds of real speech at Piper's rate: the human fixtures, one after another."""
    parts = []
    for name in ("oww_hey_jarvis.wav", "oww_alexa.wav", "mycroft_stop.wav"):
        with wave.open(str(FIXTURES / name)) as w:
            parts.append(
                resample(np.frombuffer(w.readframes(w.getnframes()), np.int16), w.getframerate(), PIPER_RATE)
            )
    voice = np.concatenate(parts * 3)[: 6 * PIPER_RATE].astype(np.float32)
    return (voice * (20000 / np.abs(voice).max())).astype(np.int16)


def _room_echo(played_16k: np.ndarray, lag_s: float) -> np.ndarray:
    """What the microphone gets: the test bed's room (40 ms, −10 dB, RT60 250 ms) after
    ``lag_s`` of device buffers, with a little noise."""
    ir = soxr.resample(Room().impulse_response(), ROOM_RATE, 16000)
    echo = np.convolve(played_16k.astype(np.float64), ir)[: len(played_16k)]
    lag = round(lag_s * 16000)
    echo = np.concatenate([np.zeros(lag), echo[: len(echo) - lag]])
    echo += np.random.default_rng(3).standard_normal(len(echo)) * 3
    return np.clip(np.round(echo), -32768, 32767).astype(np.int16)


def _erle(mic: np.ndarray, out: np.ndarray) -> float:
    m, o = mic.astype(np.float64), out.astype(np.float64)
    return float(10 * np.log10(np.sum(m**2) / max(np.sum(o**2), 1.0)))


def _run(handed_s: float) -> tuple[float, InProcessCanceller]:
    """Play the voice in the writer's 20 ms blocks at Piper's rate and capture 32 ms frames
    in time order, each block's reference handed over ``handed_s`` after it starts to play
    (the writer: 40 ms before, when the write returns into a 40 ms device buffer; a monitor:
    after the block has played and reached it); ERLE over the last three seconds."""
    voice = _voice()
    mic = _room_echo(resample(voice, PIPER_RATE, 16000), lag_s=0.04)
    canceller = InProcessCanceller()
    block, frame = round(0.02 * PIPER_RATE), 512
    events = [(i * 0.02 + handed_s, "w", i) for i in range(len(voice) // block)]
    events += [((j + 1) * frame / 16000, "m", j) for j in range(len(mic) // frame)]
    out = []
    for _, kind, i in sorted(events):
        if kind == "w":
            canceller.reference.played(voice[i * block : (i + 1) * block].reshape(-1, 1), PIPER_RATE)
        else:
            out.append(canceller.process(mic[i * frame : (i + 1) * frame]))
    cleaned = np.concatenate(out)
    tail = slice(3 * 16000, len(cleaned))
    return _erle(mic[tail], cleaned[tail]), canceller


def test_fed_at_write_time_aec3_removes_the_rooms_echo() -> None:
    erle, canceller = _run(handed_s=-0.04)
    assert erle > 20.0, f"only {erle:.1f} dB of echo removed"
    assert canceller.erle_db is not None and canceller.erle_db > 15.0


def test_the_same_samples_late_as_a_monitor_gives_them_cancel_little() -> None:
    # A monitor of the speaker hands a block over after it has played and come back through
    # the monitor's own buffers: 150 ms, later than the room's echo (80 ms here)
    erle, _ = _run(handed_s=0.15)
    assert erle < 10.0, f"{erle:.1f} dB removed with a late reference"


def test_the_reference_is_the_samples_the_speaker_wrote(monkeypatch) -> None:
    import asyncio

    pa = FakePortAudio(plan=[Fails(after=None)])
    sink, _ = _sink(monkeypatch, pa)
    reference = PlayedReference()
    sink.echo_reference = reference
    reply = _ramp(RATE // 2)

    async def play() -> None:
        await sink.play(reply, RATE)
        await sink.drain()

    try:
        asyncio.run(play())
    finally:
        sink.close()
    written = np.concatenate(pa.streams[0].samples)
    # One take of all but the slack: every sample the device was given, silence padding
    # included, in order, and nothing else (not a copy of the reply made elsewhere).
    taken = reference.take(len(written) - SLACK)
    assert np.array_equal(taken, written[: len(taken)])
    assert np.count_nonzero(taken) >= len(reply) - SLACK and reply[0] in taken


def test_the_reference_starts_just_behind_the_newest_sample_and_flows_in_order() -> None:
    ref = PlayedReference()
    ref.played(np.arange(1, 400, dtype=np.int16), 16000)
    assert not ref.take(512).any(), "taken before a frame and the slack were there"
    ref.played(np.arange(400, 2001, dtype=np.int16), 16000)
    got = ref.take(512)
    # Primed: the oldest samples skipped, the slack left queued after this take.
    assert np.array_equal(got, np.arange(2001 - 512 - SLACK, 2001 - SLACK))
    ref.played(np.arange(2001, 2513, dtype=np.int16), 16000)
    assert np.array_equal(ref.take(512), np.arange(2001 - SLACK, 2513 - SLACK)), "not in order"


def test_a_queue_that_never_gets_short_is_trimmed_and_a_dry_one_counted() -> None:
    ref = PlayedReference()
    ref.played(np.ones(512 + SLACK, np.int16), 16000)
    ref.take(512)
    ref.played(np.full(1600, 2, np.int16), 16000)  # 100 ms more than it needs, for good
    for _ in range(2 * TRIM_EVERY):  # (the first window saw the queue short, at the start)
        ref.played(np.full(512, 3, np.int16), 16000)
        ref.take(512)
    assert ref.trimmed == 1 and ref.ran_dry == 0 and ref._queued == SLACK  # the excess skipped, once
    ref.take(512)  # the speaker stopped: runs dry
    assert ref.ran_dry == 1 and not ref.take(512).any()


def test_resampled_from_the_speakers_rate_without_seams() -> None:
    ref = PlayedReference()
    t = np.arange(PIPER_RATE) / PIPER_RATE
    tone = (np.sin(2 * np.pi * 440 * t) * 10000).astype(np.int16)
    for i in range(0, len(tone), 441):  # the writer's 20 ms blocks
        ref.played(tone[i : i + 441].reshape(-1, 1), PIPER_RATE)
    got = ref.take(round(0.8 * 16000)).astype(np.float64)
    expect = np.sin(2 * np.pi * 440 * np.arange(len(got)) / 16000)
    # one sinusoid at 440 Hz, whatever the phase: the fit leaves almost nothing
    basis = np.stack([expect, np.cos(2 * np.pi * 440 * np.arange(len(got)) / 16000)], axis=1)
    fit, *_ = np.linalg.lstsq(basis, got, rcond=None)
    residue = got - basis @ fit
    assert np.sqrt(np.mean(residue**2)) < 0.02 * np.sqrt(np.mean(got**2))


@pytest.mark.parametrize("frames", [round(IDLE_S / 0.032) + 20])
def test_idle_it_steps_aside_and_passes_the_microphone(frames: int) -> None:
    calls, resets = [], []

    class Engine:
        def process(self, near: np.ndarray, far: np.ndarray) -> np.ndarray:
            calls.append(1)
            return near * 0

        def reset(self) -> None:
            resets.append(1)

    canceller = InProcessCanceller(engine=Engine())
    mic = np.full(512, 7, np.int16)
    outs = [canceller.process(mic) for _ in range(frames)]
    assert not canceller.active and np.array_equal(outs[-1], mic)
    assert len(calls) < frames  # ran while "recently played" was unknown, then stopped
    canceller.reference.played(np.full(4000, 5000, np.int16), 16000)
    assert not canceller.process(mic).any() and canceller.active
    assert resets == [1], "AEC3 resumed with its old state after skipping frames"


def test_speech_may_interrupt_only_while_the_canceller_removes_iris_now() -> None:
    class Engine:
        """Removes the echo perfectly, until told to let it through."""

        leak = False

        def process(self, near: np.ndarray, far: np.ndarray) -> np.ndarray:
            return near.copy() if self.leak else (near // 1000).astype(np.int16)

    engine = Engine()
    canceller = InProcessCanceller(engine=engine)
    loud = np.full(512, 3000, np.int16)
    echo = np.full(512, 900, np.int16)

    def talk(frames: int) -> None:
        for _ in range(frames):
            canceller.reference.played(loud, 16000)
            canceller.process(echo)

    talk(50)
    assert not canceller.converged, "trusted before it had heard enough of IRIS"
    talk(100)
    assert canceller.converged and canceller.erle_db is not None and canceller.erle_db > 30
    engine.leak = True  # a person talks over IRIS for half a second: nothing to judge by yet
    talk(16)
    assert canceller.converged, "the gate closed under the person's own voice"
    talk(RECENT_FRAMES // 2)  # AEC3 re-learning for seconds: 0 dB removed
    assert not canceller.converged
    engine.leak = False
    talk(RECENT_FRAMES)
    assert canceller.converged


def test_a_writer_that_falls_behind_does_not_make_the_reference_late() -> None:
    ref = PlayedReference()
    stream = np.arange(1, 20001, dtype=np.int16)  # each sample names its place in the stream
    ref.played(stream[:1000], 16000)
    first = ref.take(512)
    offset = int(first[0])  # stream sample paired with this frame's first microphone sample
    ref.played(stream[1000:1200], 16000)  # the writer stalls: 200 samples where 512 are due
    short = ref.take(512)
    assert ref.ran_dry == 1 and not short[-100:].any()
    ref.played(stream[1200:3000], 16000)  # it catches up
    later = [ref.take(512) for _ in range(2)]
    # Every sample still sits where the stream put it: frame k of the microphone gets stream
    # samples offset + 512 k onward; what was owed while it was dry was skipped.
    for k, frame in enumerate([first, short, *later]):
        given = frame != 0
        assert np.array_equal(frame[given], (offset + 512 * k + np.flatnonzero(given)).astype(np.int16))
    assert ref.timelines == 1


def test_a_new_stream_starts_a_new_timeline_and_aec3_afresh() -> None:
    resets = []

    class Engine:
        def process(self, near: np.ndarray, far: np.ndarray) -> np.ndarray:
            return near

        def reset(self) -> None:
            resets.append(1)

    canceller = InProcessCanceller(engine=Engine())
    canceller.reference.played(np.full(2000, 3000, np.int16), 16000)
    canceller.process(np.zeros(512, np.int16))
    assert canceller.reference.timelines == 1 and not resets
    canceller.reference.restart()  # the speaker reopened its stream
    canceller.reference.played(np.full(2000, 3000, np.int16), 16000)
    canceller.process(np.zeros(512, np.int16))
    assert canceller.reference.timelines == 2 and resets == [1]


async def test_a_frame_waits_briefly_for_its_reference_while_the_speaker_runs() -> None:
    import asyncio
    import threading

    canceller = InProcessCanceller()
    ref = canceller.reference
    ref.played(np.full(512 + SLACK, 100, np.int16), 16000)
    ref.take(512)  # primed: SLACK left
    # The writer's next block comes 20 ms later, as PipeWire's quantum lets it through.
    timer = threading.Timer(0.02, lambda: ref.played(np.full(512, 200, np.int16), 16000))
    timer.start()
    assert ref.due(512)
    await canceller.ready(512)
    timer.join()
    assert not ref.due(512) and not ref.take(512)[SLACK:].tolist().count(0)
    # A writer that has stopped (no block for longer than a quantum or two) is not waited for.
    await asyncio.sleep(0.1)
    assert not ref.due(512)
