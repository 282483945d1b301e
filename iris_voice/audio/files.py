"""WAV files as audio stages, for file mode (``iris ask --wav IN --out OUT``) and tests.

``WavSource`` is an ``AudioSource`` that yields a recording as 16 kHz int16 frames, as
fast as they are consumed (or in real time), with trailing silence so that endpointing
can end the utterance. ``WavSink`` is an ``AudioSink`` that writes what it is given.
Neither needs PortAudio.
"""

from __future__ import annotations

import asyncio
import os
import time
import wave
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.audio.resample import resample, to_int16
from iris_voice.errors import AudioError, Code


def read_wav(path: str | os.PathLike[str]) -> tuple[np.ndarray, int]:
    """Samples (int16, mono: channels averaged) and rate of a PCM WAV file.

    AudioError ``audio-file-invalid`` for a missing, non-WAV or non-PCM file."""
    path = Path(path)
    try:
        with wave.open(str(path), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            raw = w.readframes(w.getnframes())
    except FileNotFoundError:
        raise AudioError(Code.AUDIO_FILE_INVALID, f"{path}: no such file") from None
    except (wave.Error, EOFError, OSError) as exc:
        raise AudioError(Code.AUDIO_FILE_INVALID, f"{path}: not a PCM WAV file ({exc})") from None
    if width == 1:  # 8-bit WAV is unsigned
        x = (np.frombuffer(raw, np.uint8).astype(np.int16) - 128) << 8
    elif width == 2:
        x = np.frombuffer(raw, "<i2")
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3)
        x = ((b[:, 2].astype(np.int8).astype(np.int32) << 8) | b[:, 1]).astype(np.int16)
    elif width == 4:
        x = (np.frombuffer(raw, "<i4") >> 16).astype(np.int16)
    else:
        raise AudioError(Code.AUDIO_FILE_INVALID, f"{path}: unsupported sample width {width * 8} bits")
    x = x[: len(x) - len(x) % channels].reshape(-1, channels)
    return to_int16(x), rate


class WavSource:
    """An ``AudioSource`` reading a WAV file: 16 kHz mono int16 frames of FRAME_SAMPLES.

    Frames come as fast as the consumer takes them, one per 32 ms of wall-clock time with
    ``realtime`` (like a microphone), or paced by ``pace``: while ``pace()`` is true the
    frames keep real time, otherwise they are fast-forwarded. File mode paces while a
    question is being captured or answered, so the file plays out as it would have
    reached a running daemon (decodes overlap speech, a question that follows waits for
    the answer before it) while silence in between costs nothing.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        trailing_silence_s: float = 1.0,
        realtime: bool = False,
        pace: Callable[[], bool] | None = None,
    ) -> None:
        self.path = Path(path)
        self.trailing_silence_s = trailing_silence_s
        """Silence appended after the recording, so a VAD sees the speech end."""
        self.realtime = realtime
        """Yield one frame per 32 ms of wall-clock time, like a microphone."""
        self.pace = pace
        """While it returns True, frames keep real time (see the class notes)."""
        self.duration_s = 0.0
        """Length of the recording itself (set once reading started)."""
        self._closed = False

    async def frames(self) -> AsyncIterator[np.ndarray]:
        """The recording, resampled to 16 kHz, then the trailing silence, then the end."""
        samples, rate = await asyncio.to_thread(read_wav, self.path)
        if rate != SAMPLE_RATE:
            samples = await asyncio.to_thread(resample, samples, rate, SAMPLE_RATE)
        self.duration_s = len(samples) / SAMPLE_RATE
        silence = int(self.trailing_silence_s * SAMPLE_RATE)
        total = -(-(len(samples) + silence) // FRAME_SAMPLES) * FRAME_SAMPLES
        padded = np.zeros(total, dtype=np.int16)
        padded[: len(samples)] = samples
        anchor: tuple[float, int] | None = None  # (wall clock, sample) where real time resumed
        for i in range(0, total, FRAME_SAMPLES):
            if self._closed:
                return
            if self.realtime or (self.pace is not None and self.pace()):
                if anchor is None:
                    anchor = (time.monotonic(), i)
                due = anchor[0] + (i - anchor[1]) / SAMPLE_RATE
                await asyncio.sleep(max(0.0, due - time.monotonic()))
            else:
                anchor = None
                await asyncio.sleep(0)  # let the consumer's other tasks run between frames
            yield padded[i : i + FRAME_SAMPLES].copy()

    def close(self) -> None:
        """End the frames early."""
        self._closed = True


class WavSink:
    """An ``AudioSink`` writing mono int16 to a WAV file at the rate of the first chunk
    (Piper's 22050 Hz); later chunks at other rates are resampled to it."""

    def __init__(self, path: str | os.PathLike[str], sample_rate: int | None = None) -> None:
        self.path = Path(path)
        self.sample_rate = sample_rate
        """The file's rate (None: taken from the first chunk)."""
        self.first_sample_at: float | None = None
        """``time.monotonic()`` when the first sample was written (for latency figures)."""
        self.first_sample_wall: float | None = None
        """``time.time()`` of the same moment."""
        self._wav: wave.Wave_write | None = None
        self._written = 0

    async def play(self, chunk: np.ndarray, sample_rate: int) -> None:
        """Append the samples to the file (resampled when their rate differs)."""
        samples = to_int16(chunk)
        if len(samples) == 0:
            return
        if self.first_sample_at is None:
            self.first_sample_at, self.first_sample_wall = time.monotonic(), time.time()
        if self.sample_rate is None:
            self.sample_rate = sample_rate
        if sample_rate != self.sample_rate:
            samples = await asyncio.to_thread(resample, samples, sample_rate, self.sample_rate)
        await asyncio.to_thread(self._write, samples)

    def _write(self, samples: np.ndarray) -> None:
        if self._wav is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._wav = wave.open(str(self.path), "wb")
            self._wav.setnchannels(1)
            self._wav.setsampwidth(2)
            self._wav.setframerate(self.sample_rate or SAMPLE_RATE)
        self._wav.writeframes(samples.astype("<i2").tobytes())
        self._written += len(samples)

    async def open(self) -> bool:
        """Nothing to open before the first chunk."""
        return True

    async def drain(self) -> None:
        """Nothing to wait for: every chunk is written when ``play`` returns."""

    def stop(self) -> float:
        """Nothing is queued, so nothing is discarded (what was written stays)."""
        return 0.0

    def played_seconds(self) -> float:
        """Seconds written so far."""
        return self._written / self.sample_rate if self.sample_rate else 0.0

    def close(self) -> None:
        """Finish the file (an empty WAV at the configured rate when nothing was played)."""
        if self._wav is None:
            self._write(np.zeros(0, dtype=np.int16))
        assert self._wav is not None
        self._wav.close()

    def __enter__(self) -> WavSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
