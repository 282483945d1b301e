"""Text to speech: the ``Synthesizer`` Protocol the pipeline sees, and its adapters.

Speech is streamed: ``stream(text)`` yields int16 mono chunks as the engine produces
them, each produced in a worker thread, so the first chunk plays while later ones are
still being synthesized.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

import numpy as np

from iris_voice import heavy
from iris_voice.config import TtsConfig
from iris_voice.errors import Code, SpeechError
from iris_voice.speech.model_files import piper_voice_files

log = logging.getLogger(__name__)


class Synthesizer(Protocol):
    """Turns text into audio."""

    name: str
    """Voice name or path, for logs and ``iris status``."""
    sample_rate: int
    """Rate of every chunk ``stream`` yields (Piper medium voices: 22050)."""

    def stream(self, text: str) -> AsyncIterator[np.ndarray]:
        """Speak ``text``: int16 mono chunks at ``sample_rate``, as they are ready."""
        ...

    async def warmup(self) -> None:
        """Load the voice and synthesize once, so the first reply is fast."""
        ...


class PiperSynthesizer:
    """``Synthesizer`` on Piper (piper-tts, ONNX) on the CPU.

    Piper yields one chunk per sentence; each is produced in a worker thread with
    ``await asyncio.to_thread(next, …)``, so the first sentence plays while the next
    is synthesized. ``tts.length_scale`` multiplies the voice's own rate, ``tts.volume``
    scales the (peak-normalized) samples.
    """

    def __init__(self, cfg: TtsConfig) -> None:
        self.cfg = cfg
        self.model_path, self.config_path = piper_voice_files(cfg.voice)
        self.name = self.model_path.stem.removesuffix(".onnx")
        try:
            voice_config = json.loads(self.config_path.read_text(encoding="utf-8"))
            self.sample_rate = int(voice_config["audio"]["sample_rate"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SpeechError(
                Code.MODEL_INVALID, f"tts.voice: bad voice config {self.config_path}: {exc}"
            ) from exc
        self._voice: Any = None
        self._syn_config: Any = None
        self._lock = threading.Lock()  # one synthesis step at a time on this voice

    def _load(self) -> Any:
        # Called in a worker thread with the lock held.
        if self._voice is None:
            try:
                piper = heavy.load("piper")  # one heavy import at a time (iris_voice.heavy)
                PiperVoice, SynthesisConfig = piper.PiperVoice, piper.SynthesisConfig
            except ImportError as exc:
                raise SpeechError(
                    Code.MODEL_MISSING, f"tts.voice: piper-tts cannot be imported: {exc}"
                ) from exc

            start = time.perf_counter()
            try:
                voice = PiperVoice.load(self.model_path, config_path=self.config_path)
            except Exception as exc:  # onnxruntime raises its own exception types
                raise SpeechError(
                    Code.MODEL_INVALID, f"tts.voice: cannot load {self.model_path}: {exc}"
                ) from exc
            self._syn_config = SynthesisConfig(
                length_scale=voice.config.length_scale * self.cfg.length_scale,
                volume=self.cfg.volume,
            )
            self._voice = voice
            log.info("loaded Piper voice %s in %.2f s", self.name, time.perf_counter() - start)
        return self._voice

    def _start(self, text: str) -> Iterator[Any]:
        with self._lock:
            voice = self._load()
            # A generator: nothing is synthesized until the first next().
            return iter(voice.synthesize(text, syn_config=self._syn_config))

    def _next(self, chunks: Iterator[Any]) -> np.ndarray | None:
        with self._lock:
            try:
                chunk = next(chunks, None)
            except Exception as exc:  # any engine failure becomes one coded error
                raise SpeechError(Code.TTS_FAILED, f"speech synthesis failed: {exc}") from exc
        return None if chunk is None else chunk.audio_int16_array

    async def stream(self, text: str) -> AsyncIterator[np.ndarray]:
        """Speak ``text``: one int16 mono chunk per sentence at ``sample_rate``, as each
        is ready. Text with nothing speakable (empty, only punctuation) yields nothing. A
        run of more than ``MAX_PIECE_CHARS`` without a sentence end is spoken in pieces
        (``pieces``): Piper's decoder holds the whole sentence's audio in its tensors, and
        five 2,000-character sentences grew the process by 828 MB that it never gave back."""
        clean = speakable(text)
        if not clean:
            return
        for piece in pieces(clean):
            chunks = await asyncio.to_thread(self._start, piece)
            while True:
                audio = await asyncio.to_thread(self._next, chunks)
                if audio is None:
                    break
                if audio.size:
                    yield audio

    async def warmup(self) -> None:
        """Load the voice and synthesize a word."""
        async for _ in self.stream("Ready."):
            pass


MAX_PIECE_CHARS = 160
"""The longest text one synthesis step is given (about 10 s of speech); English sentences
rarely pass it, so ordinary replies are synthesized as they are."""


def pieces(text: str, limit: int = MAX_PIECE_CHARS) -> list[str]:
    """``text`` in runs of at most ``limit`` characters, cut at a sentence end, else a clause
    break (``,`` ``;`` ``:``), else a space, within each run's last two thirds."""
    out: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = -1
        for marks in ((". ", "! ", "? "), (", ", "; ", ": "), (" ",)):
            cut = max(window.rfind(mark) for mark in marks)
            if cut >= limit // 3:
                break
        if cut < limit // 3:
            cut = limit - 1  # one word longer than a piece: cut inside it
        out.append(rest[: cut + 1].strip())
        rest = rest[cut + 1 :].strip()
    return [*out, rest] if rest else out


# Markdown and Piper's own [[ phoneme ]] escape must never reach the voice.
_MARKUP = re.compile(r"\[\[|\]\]|[*_`#~|]+")


def speakable(text: str) -> str:
    """``text`` as Piper should read it: markup removed, whitespace collapsed; "" when
    nothing is left to pronounce (no letter or digit)."""
    text = _MARKUP.sub(" ", text).replace("×", " times ")
    text = " ".join(text.split())
    return text if any(ch.isalnum() for ch in text) else ""
