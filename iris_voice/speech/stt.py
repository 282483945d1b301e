"""Speech to text: the ``Transcriber`` Protocol the pipeline sees, and its adapters.

The pipeline hands over one utterance as float32 mono samples at 16 kHz and gets text
back. Adapters run the whole decode — model call and the consumption of any lazy
result — in a worker thread, one lock per model instance.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from iris_voice import heavy
from iris_voice.config import SttConfig
from iris_voice.errors import Code, SpeechError
from iris_voice.speech.model_files import whisper_model_dir
from iris_voice.speech.whisper_window import ShortWindow

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
"""Every Transcriber takes 16 kHz mono audio."""


class DecodeSession(Protocol):
    """One utterance decoded while it is spoken (``Transcriber.open_session``)."""

    def feed(self, frame: np.ndarray, speech: bool) -> None:
        """One captured frame and the VAD's verdict on it; never blocks."""
        ...

    async def finish(self, audio: np.ndarray | None = None) -> str:
        """The transcript of the whole utterance (``audio``: the frames fed, joined)."""
        ...

    def cancel(self) -> None:
        """Discard the session (barge-in, stop, no speech)."""
        ...

    def words(self) -> tuple[str | None, bool]:
        """The transcript up to the current pause once decoded (else None), and whether a
        decode of it is still running (the end of turn waits for it)."""
        ...

    def speculation(self) -> str | None:
        """The transcript so far when the speaker paused and a decode of it is ready (the
        pipeline may start answering before the end of turn is decided); else None."""
        ...

    def timings(self) -> dict[str, Any]:
        """Figures for the turn's trace."""
        ...


class Transcriber(Protocol):
    """Turns one utterance into text."""

    name: str
    """Model name or path, for logs and ``iris status``."""
    supports_streaming: bool
    """True when ``open_session`` decodes an utterance while it is being spoken; the
    pipeline reads it once to choose how utterances are transcribed."""

    async def transcribe(self, audio: np.ndarray, lead: str = "") -> str:
        """Text of ``audio`` (float32 mono, 16 kHz, -1..1); "" when nothing was said.

        ``lead``: words known to open the audio (the wake phrase a wake-word capture keeps,
        "Hey Jarvis,"). A transcriber may give them to its model as the first words; the
        text it returns may still start with them (the pipeline strips the wake phrase)."""
        ...

    def open_session(self, lead: str = "") -> DecodeSession:
        """A decode of the utterance now being captured (only with ``supports_streaming``);
        ``lead`` as for ``transcribe``."""
        ...

    async def warmup(self) -> None:
        """Load the model and run it once, so the first real utterance is fast."""
        ...


class FasterWhisperTranscriber:
    """``Transcriber`` on faster-whisper (CTranslate2) on the CPU.

    The model is found by ``iris_voice.speech.model_files.whisper_model_dir(cfg.model)`` and loaded
    on ``warmup`` or the first utterance. IRIS has already endpointed the audio, so
    Whisper's own VAD is off; each utterance is decoded on its own
    (``condition_on_previous_text=False``) without timestamps. For pieces of one
    utterance (``stt_stream``) the text before a piece is passed as ``prompt``.
    """

    supports_streaming = False
    """One decode per utterance (``StreamingTranscriber`` wraps it to decode while speaking)."""

    def __init__(self, cfg: SttConfig) -> None:
        self.cfg = cfg
        self.name = cfg.model
        self.model_dir: Path | None = None
        """The CTranslate2 directory in use, once loaded."""
        self._model: Any = None
        self._window: ShortWindow | None = None  # made with the model (stt.window = "short")
        self._lock = threading.Lock()  # one decode at a time on this model instance

    def _load(self) -> Any:
        # Called in a worker thread with the lock held.
        if self._model is None:
            self.model_dir = whisper_model_dir(self.cfg.model)
            try:
                # One heavy import at a time (iris_voice.heavy): the warm-up runs in threads.
                WhisperModel = heavy.load("faster_whisper").WhisperModel
            except ImportError as exc:
                raise SpeechError(
                    Code.MODEL_MISSING, f"stt.model: faster-whisper cannot be imported: {exc}"
                ) from exc

            start = time.perf_counter()
            try:
                self._model = WhisperModel(
                    str(self.model_dir),
                    device="cpu",
                    compute_type=self.cfg.compute_type,
                    cpu_threads=self.cfg.threads,
                )
            except (RuntimeError, ValueError, OSError) as exc:
                raise SpeechError(
                    Code.MODEL_INVALID, f"stt.model: cannot load {self.model_dir}: {exc}"
                ) from exc
            log.info(
                "loaded Whisper %s from %s in %.2f s", self.name, self.model_dir, time.perf_counter() - start
            )
        return self._model

    def transcribe_sync(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> str:
        """``transcribe`` in the calling thread (benchmarks, worker threads)."""
        return self._decode(as_float32(audio), prompt, lead)

    def _decode(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> str:
        with self._lock:
            model = self._load()
            try:
                # "auto": the short window only for a decode from the utterance's start (a
                # short question, the words at a pause); pieces that continue a prompt lost
                # words on it (tools/bench/rooms_speech), so they keep the full window.
                if self.cfg.window == "short" or (self.cfg.window == "auto" and not prompt):
                    if self._window is None:
                        self._window = ShortWindow(
                            model, self.cfg.window_pad_s, self.cfg.beam_size, self.cfg.language
                        )
                    text = self._window.decode(audio, prompt, self._full, lead)
                else:
                    text = self._full(audio, prompt, lead)
            except Exception as exc:  # any engine failure becomes one coded error
                raise SpeechError(Code.STT_FAILED, f"speech recognition failed: {exc}") from exc
        return drop_lead(" ".join(text.split()), lead)

    def _full(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> str:
        """faster-whisper's own ``transcribe``: the 30 s window (lock held by the caller)."""
        segments, _info = self._model.transcribe(
            audio,
            language=self.cfg.language or None,
            beam_size=self.cfg.beam_size,
            vad_filter=False,
            condition_on_previous_text=False,
            without_timestamps=True,
            # The text said just before this audio, when it is the rest of an
            # utterance decoded in pieces (stt_stream): Whisper continues it.
            initial_prompt=prompt or None,
            # The words the audio is known to start with (the wake phrase): the decoder
            # begins after them, so it neither mishears them nor takes the question's
            # first words for the end of the phrase.
            prefix=lead or None,
        )
        # The segments are a lazy generator: the decoding happens here, in this thread.
        return "".join(segment.text for segment in segments)

    def timings(self) -> dict[str, Any]:
        """Decode counts for traces and logs: with ``stt.window = "short"``, the decodes
        kept on the short window, the fallbacks to the full one (and why), the last one's reason."""
        if self._window is None:
            return {"stt_window": self.cfg.window}
        counts = self._window.counts
        return {
            "stt_window": self.cfg.window,
            "stt_short": counts["short"],
            "stt_fallbacks": counts["fallback"],
            "stt_fallback_reasons": {k: v for k, v in counts.items() if k not in ("short", "fallback")},
            "stt_last_fallback": self._window.last,
        }

    async def transcribe(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> str:
        """Text of ``audio`` (float32 mono, 16 kHz, -1..1; int16 is converted); "" for nothing.

        ``prompt`` is the text spoken just before ``audio`` (Whisper's ``initial_prompt``);
        ``lead`` the words ``audio`` starts with (Whisper's ``prefix``), left out of the text.
        """
        samples = as_float32(audio)
        if samples.size == 0:
            return ""
        start = time.perf_counter()
        text = await asyncio.to_thread(self._decode, samples, prompt, lead)
        log.debug(
            "transcribed %.2f s in %.3f s: %r", samples.size / SAMPLE_RATE, time.perf_counter() - start, text
        )
        return text

    def open_session(self, lead: str = "") -> DecodeSession:
        """Not offered: see ``supports_streaming``."""
        raise NotImplementedError("FasterWhisperTranscriber decodes whole utterances only")

    async def warmup(self) -> None:
        """Load the model and decode one second of silence."""
        await asyncio.to_thread(self._decode, np.zeros(SAMPLE_RATE, dtype=np.float32))


def drop_lead(text: str, lead: str) -> str:
    """``text`` without ``lead`` at its start (Whisper repeats a forced prefix in its
    output), compared word by word, ignoring case and punctuation; else ``text``."""
    words = re.findall(r"\w+", lead.lower())
    if not words:
        return text
    m = re.match(r"^\W*" + r"\W+".join(map(re.escape, words)) + r"\b\W*", text, re.IGNORECASE)
    return text[m.end() :] if m else text


def as_float32(audio: np.ndarray) -> np.ndarray:
    """Mono float32 in -1..1 from float or int16 samples (rejects other shapes)."""
    samples = np.asarray(audio)
    if samples.ndim != 1:
        raise ValueError(f"expected mono samples (1-D), got shape {samples.shape}")
    if samples.dtype == np.int16:
        return samples.astype(np.float32) / 32768.0
    return samples.astype(np.float32, copy=False)
