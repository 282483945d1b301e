"""Audio a Wyoming client streams in (``audio-start``, ``audio-chunk`` …, ``audio-stop``):
its declared format checked, its bytes held within a budget, and at the end one 16 kHz mono
signal for Whisper.

Shared by the parts of ``iris serve`` that receive audio (``AsrPart``, the hub's satellites).
Every step taken per chunk on the event loop is O(chunk size): a type check, a length check
and one append to a single ``bytearray``. The channel mix and the resampling happen once, at
the end, in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from iris_voice.audio import SAMPLE_RATE
from iris_voice.audio.resample import resample
from iris_voice.speech.stt import as_float32

RATES = (8000, 96000)
"""Sample rates a client may send, in Hz (inclusive)."""
WIDTH = 2
"""Bytes per sample: 16-bit PCM only."""
CHANNELS = (1, 2)
"""Mono or stereo (inclusive)."""


class AudioFormatError(ValueError):
    """An ``audio-start`` or ``audio-chunk`` declares a format IRIS does not take."""


def _shown(value: Any) -> str:
    # A hostile client chooses the value: keep it short in logs and error events.
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def _field(data: Mapping[str, Any], key: str, low: int, high: int, unit: str) -> int:
    value = data.get(key)
    # ``type(...) is int``: bool is an int subclass, and "16000" or 16000.0 are not formats.
    if type(value) is not int:
        raise AudioFormatError(f"audio {key} must be an integer, not {_shown(value)}")
    if not low <= value <= high:
        allowed = f"{low}" if low == high else f"{low} to {high}"
        raise AudioFormatError(f"audio {key} {_shown(value)} is not supported ({allowed}{unit})")
    return value


def audio_format(data: Any) -> tuple[int, int, int]:
    """``(rate, width, channels)`` of an ``audio-start`` or ``audio-chunk`` from the event's
    raw ``data`` (not ``AudioStart.from_event``, which takes any JSON value as it comes).

    Each must be a plain ``int`` (not bool, str or float): rate 8000–96000 Hz, width 2
    (16-bit), channels 1 or 2. Otherwise ``AudioFormatError`` (a ``ValueError``) says which
    field is wrong and what is allowed. Cheap: no allocation beyond the tuple."""
    if not isinstance(data, Mapping):
        raise AudioFormatError(f"audio event data must be an object, not {_shown(data)}")
    rate = _field(data, "rate", *RATES, " Hz")
    width = _field(data, "width", WIDTH, WIDTH, " bytes: 16-bit PCM")
    channels = _field(data, "channels", *CHANNELS, " channels")
    return rate, width, channels


class AudioIntake:
    """The raw 16-bit little-endian PCM of one utterance, at the client's rate and channels,
    held in one growing ``bytearray`` up to ``max_seconds``.

    Chunk boundaries are transport only: the payloads are joined as one byte stream, so a
    sample frame split across two chunks is rejoined; an incomplete frame left at the end
    is dropped by ``to_16k_mono``. Once a payload would take the total past the budget the
    intake refuses it and every later one (``overflow``) and frees what it held — the check
    comes before anything is copied, so an oversized payload costs nothing.
    """

    def __init__(self, rate: int, channels: int, max_seconds: float) -> None:
        if not RATES[0] <= rate <= RATES[1] or channels not in CHANNELS or max_seconds <= 0:
            raise AudioFormatError(f"no intake for {rate} Hz, {channels} channels, {max_seconds} s")
        self.rate = rate
        self.channels = channels
        self.frame_bytes = WIDTH * channels
        """Bytes per sample frame (one sample of every channel)."""
        self.max_bytes = int(max_seconds * rate) * self.frame_bytes
        """The budget: ``max_seconds`` of audio at this rate and channel count."""
        self.overflow = False
        """True once a payload was refused for the budget; the intake then stays empty."""
        # One buffer for the whole utterance: a list of per-chunk arrays would cost about a
        # hundred bytes of object overhead per chunk (240k 2-byte chunks: tens of MB).
        self._pcm = bytearray()

    def add(self, payload: bytes | bytearray | memoryview) -> bool:
        """Append one chunk's bytes. False, copying nothing, when the intake has overflowed
        or this payload would take it past ``max_bytes`` (which sets ``overflow`` and frees
        the audio held so far). O(len(payload))."""
        if self.overflow:
            return False
        if len(self._pcm) + len(payload) > self.max_bytes:
            self.overflow = True
            self._pcm = bytearray()
            return False
        self._pcm += payload
        return True

    @property
    def nbytes(self) -> int:
        """Bytes held (a trailing partial frame included)."""
        return len(self._pcm)

    @property
    def frames(self) -> int:
        """Whole sample frames held."""
        return len(self._pcm) // self.frame_bytes

    @property
    def seconds(self) -> float:
        """Audio held, in seconds at the client's rate."""
        return self.frames / self.rate

    async def to_16k_mono(self, dtype: Literal["int16", "float32"] = "int16") -> np.ndarray:
        """The audio as one 16 kHz mono signal: ``int16`` samples, or ``float32`` in -1..1
        (what ``Transcriber.transcribe`` takes). Stereo is averaged to mono.

        Takes the audio: the intake is empty afterwards (a later ``add`` starts over). The
        mix and resampling run in a worker thread (``asyncio.to_thread``), never on the
        event loop; an empty or overflowed intake gives an empty array."""
        pcm, self._pcm = self._pcm, bytearray()
        return await asyncio.to_thread(_convert, pcm, self.rate, self.channels, dtype)


def _convert(pcm: bytearray, rate: int, channels: int, dtype: str) -> np.ndarray:
    """Whole frames of ``pcm`` → 16 kHz mono ``dtype`` (CPU work: a worker thread's)."""
    usable = len(pcm) - len(pcm) % (WIDTH * channels)
    frames = np.frombuffer(pcm, dtype="<i2", count=usable // WIDTH).reshape(-1, channels)
    mono = resample(frames, rate, SAMPLE_RATE)  # mixes the channels (to_int16) first
    # At 16 kHz mono ``mono`` is a view of ``pcm``, which nothing else holds any more.
    return as_float32(mono) if dtype == "float32" else mono
