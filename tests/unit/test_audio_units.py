"""Unit tests of the audio stages that need no audio server: WAV files, resampling, the
chime, device lookup (on a fake PortAudio device list) and the capture/playback buffers."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import wave
from types import SimpleNamespace

import numpy as np
import pytest

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE, devices
from iris_voice.audio.capture import MicCapture
from iris_voice.audio.chime import NOTES_HZ, chime
from iris_voice.audio.files import WavSink, WavSource, read_wav
from iris_voice.audio.playback import SpeakerSink
from iris_voice.audio.playbuffer import PlaybackBuffer
from iris_voice.audio.resample import StreamResampler, resample, to_int16
from iris_voice.config import AudioConfig
from iris_voice.errors import AudioError
from tests.support.audiosignals import dominant_hz, tone, write_wav

# ---- WAV files ----------------------------------------------------------------------


def _write_raw(path, raw: bytes, width: int, channels: int, rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(raw)


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_read_wav_converts_every_pcm_width_to_int16(tmp_path, width: int) -> None:
    x = tone(500, 0.1, 8000, amplitude=0.5)
    if width == 1:
        raw = ((x >> 8) + 128).astype(np.uint8).tobytes()
    elif width == 2:
        raw = x.astype("<i2").tobytes()
    elif width == 3:
        v = x.astype(np.int32) << 8
        raw = np.stack([v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF], axis=1).astype(np.uint8).tobytes()
    else:
        raw = (x.astype(np.int32) << 16).astype("<i4").tobytes()
    _write_raw(tmp_path / "a.wav", raw, width, 1, 8000)
    got, rate = read_wav(tmp_path / "a.wav")
    assert rate == 8000 and got.dtype == np.int16 and len(got) == len(x)
    assert np.abs(got.astype(np.int32) - x).max() <= (256 if width == 1 else 1)


def test_read_wav_mixes_stereo_to_mono(tmp_path) -> None:
    left, right = tone(500, 0.1, 8000), np.zeros(800, np.int16)
    _write_raw(tmp_path / "s.wav", np.stack([left, right], axis=1).astype("<i2").tobytes(), 2, 2, 8000)
    got, _ = read_wav(tmp_path / "s.wav")
    assert np.abs(got.astype(np.int32) - left // 2).max() <= 1


def test_read_wav_errors_name_the_file(tmp_path) -> None:
    with pytest.raises(AudioError, match="no such file") as err:
        read_wav(tmp_path / "missing.wav")
    assert err.value.code == "audio-file-invalid"
    (tmp_path / "text.wav").write_text("not audio")
    with pytest.raises(AudioError, match=r"text\.wav: not a PCM WAV file"):
        read_wav(tmp_path / "text.wav")


async def test_wav_source_yields_16k_frames_with_trailing_silence(tmp_path) -> None:
    wav = write_wav(tmp_path / "in.wav", tone(700, 0.5, 44100), 44100, channels=2)
    source = WavSource(wav, trailing_silence_s=1.0)
    frames = [f async for f in source.frames()]
    assert all(f.dtype == np.int16 and f.shape == (FRAME_SAMPLES,) for f in frames)
    assert len(frames) == -(-(8000 + 16000) // FRAME_SAMPLES)
    audio = np.concatenate(frames)
    assert source.duration_s == pytest.approx(0.5, abs=0.001)
    assert dominant_hz(audio[:8000], SAMPLE_RATE) == pytest.approx(700, abs=2)
    assert np.abs(audio[8100:]).max() == 0  # the silence is silent


async def test_wav_source_realtime_is_paced_like_a_microphone(tmp_path) -> None:
    wav = write_wav(tmp_path / "in.wav", tone(700, 0.3, 16000), 16000)
    start = time.monotonic()
    frames = [f async for f in WavSource(wav, trailing_silence_s=0.0, realtime=True).frames()]
    # the last frame is released (n-1) frame periods after the first
    assert time.monotonic() - start >= (len(frames) - 1) * FRAME_SAMPLES / SAMPLE_RATE * 0.95


async def test_wav_sink_writes_at_the_first_chunk_rate(tmp_path) -> None:
    sink = WavSink(tmp_path / "out" / "reply.wav")
    await sink.play(tone(440, 1.0, 22050), 22050)
    await sink.play(tone(880, 0.5, 16000), 16000)  # resampled to 22050
    assert sink.first_sample_at is not None and sink.first_sample_wall is not None
    assert sink.stop() == 0.0
    await sink.drain()
    assert sink.played_seconds() == pytest.approx(1.5, abs=0.001)
    sink.close()
    samples, rate = read_wav(tmp_path / "out" / "reply.wav")
    assert rate == 22050 and len(samples) == pytest.approx(1.5 * 22050, abs=2)
    assert dominant_hz(samples[22050 + 1000 :], 22050) == pytest.approx(880, abs=3)


def test_wav_sink_with_nothing_played_writes_an_empty_wav(tmp_path) -> None:
    with WavSink(tmp_path / "empty.wav", sample_rate=22050):
        pass
    samples, rate = read_wav(tmp_path / "empty.wav")
    assert rate == 22050 and len(samples) == 0


# ---- resampling and the chime -------------------------------------------------------


def test_resample_keeps_pitch_and_length() -> None:
    y = resample(tone(1000, 1.0, 48000), 48000, 16000)
    assert y.dtype == np.int16 and len(y) == 16000
    assert dominant_hz(y, 16000) == pytest.approx(1000, abs=1)


def test_stream_resampler_matches_one_shot_resampling() -> None:
    x = tone(440, 1.0, 44100)
    stream = StreamResampler(44100, 16000)
    parts = [stream.process(x[i : i + 1411]) for i in range(0, len(x), 1411)]
    parts.append(stream.process(np.zeros(0, np.int16), last=True))
    y = np.concatenate(parts)
    assert abs(len(y) - 16000) <= 2
    assert dominant_hz(y, 16000) == pytest.approx(440, abs=1)


def test_to_int16_clips_floats_and_mixes_channels() -> None:
    assert to_int16(np.array([0.5, 2.0, -2.0])).tolist() == [16383, 32767, -32767]
    assert to_int16(np.array([[100, 300]], dtype=np.int16)).tolist() == [200]


def test_chime_is_two_rising_notes_without_clicks() -> None:
    x = chime(22050, volume=0.5)
    assert x.dtype == np.int16 and 0.4 < len(x) / 22050 < 1.0
    assert np.abs(x).max() == pytest.approx(0.5 * 32767, abs=2)
    assert abs(int(x[0])) < 2000 and abs(int(x[-1])) < 50  # soft attack, faded end
    third = len(x) // 3
    assert dominant_hz(x[:third], 22050) == pytest.approx(NOTES_HZ[0], abs=5)
    assert dominant_hz(x[-third:], 22050) == pytest.approx(NOTES_HZ[1], abs=5)
    assert len(chime(16000)) / 16000 == pytest.approx(len(x) / 22050, abs=0.001)


# ---- device lookup on a fake PortAudio ----------------------------------------------


class _FakePortAudio:
    """Just enough of the sounddevice module for devices.py."""

    def __init__(self, devs: list[tuple[str, int, int]], default: tuple[int, int]) -> None:
        self._devs = [
            {"index": i, "name": n, "hostapi": 0, "max_input_channels": ci, "max_output_channels": co,
             "default_samplerate": 48000.0}
            for i, (n, ci, co) in enumerate(devs)
        ]  # fmt: skip
        self.default = SimpleNamespace(device=list(default))

    def query_devices(self):
        return self._devs

    def query_hostapis(self, index=None):
        return ({"name": "ALSA"},)


@pytest.fixture
def fake_devices(monkeypatch):
    fake = _FakePortAudio(
        [("HDA Intel: ALC Analog (hw:0,0)", 2, 2), ("USB Mic (hw:1,0)", 1, 0), ("pipewire", 64, 64),
         ("default", 64, 64), ("HDMI 0 (hw:0,3)", 0, 8)],
        default=(3, 3),
    )  # fmt: skip
    monkeypatch.setattr(devices, "sounddevice", lambda: fake)
    return fake


def test_resolve_by_default_index_and_name(fake_devices) -> None:
    assert devices.resolve("", "input").name == "default"
    assert devices.resolve("1", "input").name == "USB Mic (hw:1,0)"
    assert devices.resolve(" usb ", "input").index == 1
    assert devices.resolve("hdmi", "output").index == 4
    assert devices.resolve("Default", "output").index == 3  # an exact name beats "pipewire"…


def test_resolve_errors_name_the_key_and_list_the_devices(fake_devices) -> None:
    with pytest.raises(AudioError) as err:
        devices.resolve("hdmi", "input")  # HDMI has no input channels
    msg = err.value.message
    assert msg.startswith("audio.input_device: no input device name contains 'hdmi'")
    assert "0 HDA Intel: ALC Analog (hw:0,0), 1 USB Mic (hw:1,0), 2 pipewire, 3 default*" in msg
    assert "HDMI" not in msg.split(";", 1)[1]  # only inputs are listed
    with pytest.raises(
        AudioError, match=r"audio.output_device: device 1 \(USB Mic \(hw:1,0\)\) has no output"
    ):
        devices.resolve(1, "output")
    fake_devices._devs = []
    with pytest.raises(AudioError, match="audio.output_device: no output device found"):
        devices.resolve("", "output")


def test_list_devices_marks_the_defaults(fake_devices) -> None:
    listed = devices.list_devices()
    assert [d.index for d in listed if d.is_default_input] == [3]
    assert listed[4].input_channels == 0 and listed[4].output_channels == 8
    assert devices.describe(listed, "output").endswith("3 default*, 4 HDMI 0 (hw:0,3)")


def test_missing_sounddevice_is_an_audio_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", None)
    with pytest.raises(AudioError) as err:
        devices.sounddevice()
    assert err.value.code == "audio-unavailable"


# ---- capture and playback buffers ---------------------------------------------------


async def test_capture_queue_drops_the_oldest_blocks_when_full() -> None:
    capture = MicCapture(AudioConfig(), queue_blocks=4)
    capture._loop = asyncio.get_running_loop()
    capture._queue = asyncio.Queue(capture.queue_blocks)
    capture._gen = 1
    callback, _ = capture._callbacks(1)
    stale, _ = capture._callbacks(0)
    status = SimpleNamespace(input_overflow=False)

    def portaudio_thread() -> None:  # the callback runs on PortAudio's thread
        stale(np.full((FRAME_SAMPLES, 1), -1, np.int16), FRAME_SAMPLES, None, status)
        for i in range(10):
            callback(np.full((FRAME_SAMPLES, 1), i, np.int16), FRAME_SAMPLES, None, status)

    thread = threading.Thread(target=portaudio_thread)
    thread.start()
    thread.join()
    await asyncio.sleep(0.05)  # let the loop run the handed-over puts
    kept = [int(capture._queue.get_nowait()[0, 0]) for _ in range(capture._queue.qsize())]
    assert kept == [6, 7, 8, 9]
    assert capture.dropped == 6


async def test_capture_mixes_resamples_and_reframes_a_48k_stereo_device() -> None:
    capture = MicCapture(AudioConfig(), stall_timeout_s=0.5)
    capture._loop = asyncio.get_running_loop()
    capture._queue = asyncio.Queue(200)
    capture.stream_rate, capture.stream_channels = 48000, 2
    x = tone(1000, 1.0, 48000)
    for i in range(0, len(x), 1536):  # 32 ms device blocks, stereo
        capture._put(0, np.stack([x[i : i + 1536]] * 2, axis=1))
    frames = []
    async for frame in capture._read():  # ends after stall_timeout_s without blocks
        frames.append(frame)
    assert all(f.shape == (FRAME_SAMPLES,) and f.dtype == np.int16 for f in frames)
    audio = np.concatenate(frames)
    assert abs(len(audio) - 16000) <= 2 * FRAME_SAMPLES  # soxr holds a few back; a partial frame waits
    assert dominant_hz(audio, SAMPLE_RATE) == pytest.approx(1000, abs=2)


def test_speaker_buffer_plays_in_order_and_stop_reports_what_it_dropped() -> None:
    sink = SpeakerSink(AudioConfig())
    sink.stream_rate = 1000
    buffer = sink._buffer
    buffer.put(np.arange(1, 6, dtype=np.int16))
    buffer.put(np.arange(6, 9, dtype=np.int16))
    out = np.zeros((4, 2), np.int16)
    assert buffer.fill(out, 1000) == (4, False, True)  # four samples, more queued, a burst begins
    assert sink.played_seconds() == pytest.approx(0.004)
    assert out[:, 0].tolist() == [1, 2, 3, 4] and out[:, 1].tolist() == [1, 2, 3, 4]  # mono to both channels
    assert sink.stop() == pytest.approx(0.004)  # 5, 6, 7, 8 were still queued
    assert buffer.fill(out, 1000) == (0, False, False) and not out.any()  # silence after stop
    buffer.put(np.array([9, 10], np.int16))
    assert buffer.fill(out, 1000) == (2, True, True)  # emptied: drain() may return
    assert out[:, 0].tolist() == [9, 10, 0, 0]


def test_speaker_buffer_puts_back_what_the_device_may_not_have_played() -> None:
    buffer = PlaybackBuffer()
    buffer.remember(3)  # the device holds two writes, plus the one being written
    buffer.put(np.arange(1, 12, dtype=np.int16))
    out = np.zeros((2, 1), np.int16)
    for _ in range(4):  # 1 2 | 3 4 | 5 6 | 7 8 handed out; the last write fails
        buffer.fill(out, 1000)
    assert buffer.queued == 3
    assert buffer.requeue_unheard(1000) == 6  # 3 … 8 again, in front of 9 10 11
    assert buffer.played_s == pytest.approx(0.002)  # only 1 2 surely reached the speaker
    assert buffer.take().tolist() == [3, 4, 5, 6, 7, 8, 9, 10, 11]
    buffer.put(np.array([1, 2, 3], np.int16))
    for _ in range(3):  # 1 2 | 3 + silence | silence: the reply had ended when the write failed
        buffer.fill(out, 1000)
    assert buffer.requeue_unheard(1000) == 0 and buffer.queued == 0
    buffer.put(np.array([1, 2, 3], np.int16))
    buffer.fill(out, 1000)
    buffer.clear()  # stop(): nothing to put back after a barge-in either
    assert buffer.requeue_unheard(1000) == 0
