"""Capture and playback through PortAudio on real (virtual) PipeWire devices.

Every test here runs against tools/testbed/audiobed.py: a private PipeWire session whose
``iris_mic`` hears what ``play_into_mic`` plays and whose ``iris_speaker`` is recorded
with ``record_speaker``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import numpy as np
import pytest

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.audio.capture import MicCapture
from iris_voice.audio.devices import list_devices, resolve
from iris_voice.audio.playback import SpeakerSink
from iris_voice.audio.resample import resample
from iris_voice.config import AudioConfig
from iris_voice.errors import AudioError
from iris_voice.events import AudioDeviceProblem
from tests.support.audiosignals import (
    best_correlation,
    chirp,
    dominant_hz,
    loud_seconds,
    loud_span,
    silence,
    tone,
    write_wav,
)
from tests.support.waiting import PATIENCE_S, quiet_tail, recorded_quiet, wait_until
from tools.testbed.audiobed import VirtualAudio

pytestmark = pytest.mark.timeout(600)


async def until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Wait (polling the test's own state) until ``condition()`` is true."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


async def until_async(condition: Callable[[], Awaitable[object]], timeout: float, what: str) -> None:
    """Like ``until`` for a coroutine function."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.1)


class Collector:
    """Consumes ``MicCapture.frames()`` in a task."""

    def __init__(self, capture: MicCapture) -> None:
        self.capture = capture
        self.frames: list[np.ndarray] = []
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for frame in self.capture.frames():
            self.frames.append(frame)

    def audio(self, start: int = 0) -> np.ndarray:
        return np.concatenate(self.frames[start:]) if len(self.frames) > start else np.zeros(0, np.int16)

    async def close(self) -> None:
        self.capture.close()
        await asyncio.wait_for(self.task, 10)


def test_devices_are_listed_and_resolved(virtual_audio: VirtualAudio) -> None:
    devices = list_devices()
    names = [d.name for d in devices]
    assert "pipewire" in names, names
    default_in, default_out = resolve("", "input"), resolve("", "output")
    assert default_in.is_default_input and default_in.input_channels > 0
    assert default_out.is_default_output and default_out.output_channels > 0
    assert resolve("PIPEWIRE", "input").name == "pipewire"  # case-insensitive
    assert resolve("pipew", "output").name == "pipewire"  # a part of the name
    index = names.index("pipewire")
    assert resolve(str(index), "output").index == index


@pytest.mark.parametrize("kind", ["input", "output"])
def test_unknown_device_names_the_key_and_lists_devices(virtual_audio: VirtualAudio, kind: str) -> None:
    with pytest.raises(AudioError) as err:
        resolve("no-such-device", kind)  # type: ignore[arg-type]
    assert err.value.code == "audio-device-not-found"
    assert f"audio.{kind}_device" in err.value.message
    assert "no-such-device" in err.value.message and "pipewire" in err.value.message
    with pytest.raises(AudioError, match=f"audio.{kind}_device: no device has index 999"):
        resolve("999", kind)  # type: ignore[arg-type]


async def test_capture_receives_what_the_mic_hears(virtual_audio: VirtualAudio, tmp_path) -> None:
    # A chirp at 22050 Hz stereo: PipeWire converts it; IRIS must get it back at 16 kHz.
    sweep = chirp(300, 3000, 1.0, 22050)
    wav = write_wav(tmp_path / "sweep.wav", np.concatenate([silence(0.2, 22050), sweep]), 22050, channels=2)
    capture = MicCapture(AudioConfig())
    got = Collector(capture)
    await until(lambda: len(got.frames) >= 5, PATIENCE_S, "the first frames")
    start = len(got.frames)
    await asyncio.to_thread(virtual_audio.play_into_mic, wav)
    await until(lambda: heard_whole(got.audio(start)), PATIENCE_S, "the sweep and the quiet after it")
    await got.close()

    assert capture.stream_rate == SAMPLE_RATE and capture.stream_channels == 1
    assert all(f.dtype == np.int16 and f.shape == (FRAME_SAMPLES,) for f in got.frames)
    audio = got.audio(start)
    # 1 s of sound at 16 kHz (a wrong rate makes it 0.73 or 1.38 s). Loud time, not the span:
    # on a busy machine the player can run late (an underrun) and spread the sweep out.
    assert loud_seconds(audio, SAMPLE_RATE) == pytest.approx(1.0, abs=0.1), loud_span(audio, SAMPLE_RATE)
    # The same waveform at the same rate, quarter by quarter: a wrong rate breaks every
    # quarter's match, while a gap a late player leaves between them does not.
    reference = resample(sweep, 22050, SAMPLE_RATE)
    q = len(reference) // 4
    assert min(best_correlation(audio, reference[i * q : (i + 1) * q]) for i in range(4)) > 0.9
    assert capture.dropped == 0


async def test_speaker_plays_at_the_right_pitch_and_length(virtual_audio: VirtualAudio, tmp_path) -> None:
    sink = SpeakerSink(AudioConfig())
    rec = virtual_audio.record_speaker(tmp_path / "out.wav")
    try:
        await sink.play(tone(660, 1.0, 22050), 22050)
        await sink.play(silence(0.3, 16000), 16000)
        await sink.play(tone(1000, 0.5, 16000), 16000)  # another rate: resampled to the stream's
        await sink.drain()
        since = len(rec.samples())
        await until(lambda: recorded_quiet(rec, since, 0.3), PATIENCE_S, "the recording to catch up")
    finally:
        samples = rec.stop()
        sink.close()
    assert sink.stream_rate == 22050
    assert sink.played_seconds() == pytest.approx(1.8, abs=0.01)
    assert sink.first_sample_at is not None
    # Count loud time rather than the span: on a loaded machine a late callback (an
    # underflow) delays the rest of the sound without losing any of it.
    assert loud_seconds(samples, 16000) == pytest.approx(1.5, abs=0.04), sink.underflows
    first, last = loud_span(samples, 16000)
    assert dominant_hz(samples[first : first + 12000], 16000) == pytest.approx(660, abs=3)
    assert dominant_hz(samples[last - 6000 : last - 400], 16000) == pytest.approx(1000, abs=3)
    assert (tmp_path / "out.wav").stat().st_size > 2 * len(samples)


async def test_stop_silences_the_speaker(virtual_audio: VirtualAudio) -> None:
    """stop() drops what is queued and the speaker goes quiet and stays so. How soon is
    tools.bench.audio's figure (stop() to silence, median and max)."""
    sink = SpeakerSink(AudioConfig())
    rec = virtual_audio.record_speaker()
    try:
        await sink.play(tone(440, 8.0, 22050), 22050)
        await until(lambda: sink.played_seconds() >= 1.0, PATIENCE_S, "a second of the tone to play")
        stopped_at = time.monotonic()
        discarded = sink.stop()
        played = sink.played_seconds()
        since = len(rec.samples())
        await until(lambda: recorded_quiet(rec, since, 1.0), PATIENCE_S, "silence after stop()")
    finally:
        samples = rec.stop()
        sink.close()
    # what was queued and not yet handed to the device is dropped: most of the 8 s tone
    assert discarded > 2.0 and discarded + played == pytest.approx(8.0, abs=0.05), (discarded, played)
    first, last = loud_span(samples, 16000)
    assert (last - first) / 16000 > 0.9  # the tone did play until the stop
    assert loud_seconds(samples, 16000) < 8.0 - 2.0  # and not to its end
    latency = rec.wall_time(last) - stopped_at  # an upper bound (see SpeakerRecording.wall_time)
    print(f"stop() to silence: {latency * 1000:.0f} ms (upper bound)")
    assert np.abs(samples[last + 160 :].astype(np.int32)).max() < 0.05 * 32767  # and it stays silent


async def test_missing_devices_are_reported_not_raised(virtual_audio: VirtualAudio) -> None:
    events: list[object] = []
    cfg = AudioConfig(input_device="no-such-mic", output_device="no-such-speaker")
    sink = SpeakerSink(cfg, events.append)
    await sink.play(tone(440, 0.5, 22050), 22050)  # accepted and discarded, not raised
    await asyncio.wait_for(sink.drain(), PATIENCE_S)
    assert sink.discarded_seconds() == pytest.approx(0.5)
    capture = MicCapture(cfg, events.append, retry_delays_s=(0.1,))
    got = Collector(capture)
    await until(lambda: len(events) >= 2, PATIENCE_S, "the microphone problem")
    await asyncio.sleep(0.3)  # it keeps retrying (a window for more): only the first failure is published
    await got.close()
    assert got.frames == []
    assert [type(e) for e in events] == [AudioDeviceProblem, AudioDeviceProblem]
    assert events[0].device == "no-such-speaker" and "audio.output_device" in events[0].detail
    assert events[1].device == "no-such-mic" and "audio.input_device" in events[1].detail


@pytest.mark.slow
async def test_capture_and_playback_recover_when_pipewire_restarts(tmp_path) -> None:
    from tools.testbed.audiobed import missing

    if missing():
        pytest.skip(f"virtual audio needs {', '.join(missing())}")
    events: list[object] = []  # the microphone's
    speaker_events: list[object] = []
    with VirtualAudio() as bed:  # a bed of its own: this one gets killed
        bed.use_in_process()
        capture = MicCapture(AudioConfig(), events.append, stall_timeout_s=3.0, retry_delays_s=(0.2, 0.5))
        sink = SpeakerSink(AudioConfig(), speaker_events.append, retry_delays_s=(0.2,))
        got = Collector(capture)
        try:
            await until(lambda: len(got.frames) >= 3, PATIENCE_S, "the first frames")
            await sink.play(tone(440, 0.2, 22050), 22050)
            await sink.drain()

            await asyncio.to_thread(bed.stop_pipewire)
            await until(lambda: mic_problem(events), PATIENCE_S, "the microphone problem")
            await sink.play(tone(440, 0.2, 22050), 22050)  # the dead stream is noticed, not hung on
            await asyncio.wait_for(sink.drain(), PATIENCE_S)
            await asyncio.to_thread(bed.start_pipewire)

            reopened = len(got.frames)  # the next retry reopens the device: frames flow again
            await until(lambda: len(got.frames) >= reopened + 5, PATIENCE_S, "the microphone to reopen")
            wav = write_wav(tmp_path / "tone.wav", tone(880, 0.6, 16000), 16000)
            start = len(got.frames)
            await asyncio.to_thread(bed.play_into_mic, wav)
            await until(lambda: heard_whole(got.audio(start)), PATIENCE_S, "the tone and the quiet after it")
            heard = got.audio(start)
            first, last = loud_span(heard, SAMPLE_RATE)
            assert dominant_hz(heard[first:last], SAMPLE_RATE) == pytest.approx(880, abs=3)

            await until_async(sink.open, PATIENCE_S, "the speaker to reopen")  # retried with backoff
            rec = bed.record_speaker()
            await sink.play(tone(660, 0.5, 22050), 22050)
            await sink.drain()
            played = rec.stop()
            first, last = loud_span(played, 16000)
            assert dominant_hz(played[first:last], 16000) == pytest.approx(660, abs=3)
        finally:
            await got.close()
            sink.close()
    assert mic_problem(events), [e.detail for e in events]
    # The speaker's problem is reported once, in the words of whatever noticed it first: its
    # stream failing, its retry finding no device, or (a busy machine) its drain seeing no
    # progress. Which one wins is a race; that it is noticed, once, is the behaviour.
    said = [e.detail for e in speaker_events if isinstance(e, AudioDeviceProblem) and e.device == "default"]
    assert len(said) == 1 and any(w in said[0] for w in SPEAKER_PROBLEMS), said


def heard_whole(audio: np.ndarray, quiet: float = 0.3) -> bool:
    """The capture holds a sound followed by ``quiet`` seconds of silence: called once the
    player has finished, all it played has arrived (the tests then judge what did)."""
    return loud_seconds(audio, SAMPLE_RATE) > 0 and quiet_tail(audio, quiet, SAMPLE_RATE)


def mic_problem(events: list[object]) -> bool:
    """The microphone reported its stream gone: as stopped, or (a busy machine) as silent."""
    details = [e.detail for e in events if isinstance(e, AudioDeviceProblem) and e.device == "default"]
    return any("the stream stopped" in d or d.startswith("no audio for") for d in details)


SPEAKER_PROBLEMS = ("the stream failed", "cannot open", "playback stalled", "no device after")
"""How the speaker words a device that went away (``SpeakerSink._report``)."""

STEP_S = 0.25
STEP_HZ = [300 + 50 * i for i in range(24)]
"""A 6 s "staircase" reply: 24 tones of 250 ms, each naming its place by its pitch."""


def steps_heard(audio: np.ndarray, rate: int = 16000) -> list[int]:
    """The staircase steps found in a recording, in the order heard (repeats merged)."""
    half = int(STEP_S * rate / 2)
    found: list[int] = []
    for i in range(0, len(audio) - half, half):
        part = audio[i : i + half]
        if np.abs(part).mean() < 300:
            continue
        hz = dominant_hz(part, rate)
        step = round((hz - STEP_HZ[0]) / 50)
        if 0 <= step < len(STEP_HZ) and abs(hz - STEP_HZ[step]) < 15 and (not found or found[-1] != step):
            found.append(step)
    return found


@pytest.mark.slow
async def test_a_reply_cut_by_a_pipewire_restart_is_played_to_its_end(tmp_path) -> None:
    from tools.testbed.audiobed import missing

    if missing():
        pytest.skip(f"virtual audio needs {', '.join(missing())}")
    events: list[AudioDeviceProblem] = []
    with VirtualAudio() as bed:  # a bed of its own: this one gets killed
        bed.use_in_process()
        sink = SpeakerSink(AudioConfig(), events.append, retry_delays_s=(2.0, 2.0, 2.0))
        try:
            await sink.open()
            rec = bed.record_speaker()
            staircase = np.concatenate([tone(hz, STEP_S, 22050, amplitude=0.5) for hz in STEP_HZ])
            await sink.play(staircase, 22050)
            await until(lambda: len(steps_heard(rec.samples())) >= 3, PATIENCE_S, "three steps to be heard")
            before = steps_heard(rec.stop())
            # The sink's reopen waits (its one open lock) until the recorder listens again:
            # however slowly PipeWire and parec start, the replay is not played to nobody.
            async with sink._opening:
                await asyncio.to_thread(bed.stop_pipewire)  # PortAudio: "Unanticipated host error"
                await until(lambda: events, PATIENCE_S, "the speaker's failure")
                resume = int(sink.played_seconds() / STEP_S)  # the step the replay starts in
                await asyncio.to_thread(bed.start_pipewire)
                rec = await asyncio.to_thread(bed.record_speaker)
            await asyncio.wait_for(sink.drain(), PATIENCE_S)
            after = steps_heard(rec.stop())
        finally:
            sink.close()
    assert "the stream failed" in events[0].detail
    assert len(before) >= 3 and before == list(range(len(before)))
    assert resume < len(STEP_HZ) - 4, "the reply had ended before PipeWire went away: nothing to test"
    # Everything after what the first stream surely played, in order (the step the replay
    # starts in may be too short a sliver to be recognised).
    assert after, "nothing of the reply was heard after PipeWire came back"
    assert resume >= before[-1] and after[0] in (resume, resume + 1), (resume, after)
    assert after == list(range(after[0], len(STEP_HZ)))
    assert sink.discarded_seconds() == 0.0


def test_a_bed_left_by_a_killed_process_is_reaped(virtual_audio: VirtualAudio) -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from tools.testbed.audiobed import reap_stale

    script = "from tools.testbed.audiobed import VirtualAudio; import time; b = VirtualAudio().start(); "
    script += "print(b.dir, flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        bed_dir = Path(proc.stdout.readline().strip())
        pids = [int(p) for p in (bed_dir / "pids").read_text().split()]
    finally:
        proc.send_signal(signal.SIGKILL)  # no atexit, no cleanup: its daemons live on
        proc.wait()
    assert all(Path(f"/proc/{p}").exists() for p in pids)
    reap_stale()
    assert not bed_dir.exists()
    wait_until(lambda: not any(_alive(p) for p in pids), "the stale bed's daemons to go", every=0.05)
    assert virtual_audio.pactl("get-default-sink") == "iris_speaker"  # a live bed is left alone


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
