"""End of turn: is what the user said so far a finished turn, or a pause inside one?

A silence-only endpointer has one knob: a short hangover answers quickly and cuts people
off at every hesitation, a long one never cuts them but makes every answer wait. A turn
detector listens to the last seconds of speech — words, rhythm and intonation — and
says whether the speaker is done: IRIS then ends a finished turn after a short silence
and waits longer after "set a timer for…".

``SmartTurnDetector`` runs Smart Turn v3.2 (pipecat-ai's open model, BSD-2-Clause: a
Whisper-tiny encoder with a classifier head, 8.7 MB of ONNX) on onnxruntime. Its input
is Whisper's log-mel spectrogram of the last 8 s of audio, zero-padded at the front and
normalised to zero mean and unit variance first, as the model was trained; the
spectrogram is faster-whisper's own (``FeatureExtractor``), so no further dependency
is needed. One inference costs tens to a few hundred milliseconds on two cores, so it
runs in a worker thread, at each pause and again while it lasts (``speech.endpoint.TurnEnd``
decides when).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from iris_voice import heavy
from iris_voice.speech.model_files import smart_turn_model
from iris_voice.speech.onnx import onnx_session

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
WINDOW_S = 8
"""Seconds of audio the model reads (the end of the utterance)."""


class TurnDetector(Protocol):
    """Says whether the audio so far ends a finished turn."""

    name: str
    """Model name, for logs and ``iris status``."""

    async def probability(self, audio: np.ndarray) -> float:
        """Probability 0..1 that the utterance in ``audio`` (16 kHz int16 or float, up to
        now, trailing silence included) is complete."""
        ...

    async def warmup(self) -> None:
        """Load the model and run it once."""
        ...


@functools.cache
def _extractor() -> Any:
    # Behind the one import lock: Whisper's own import may be running in another thread.
    FeatureExtractor = heavy.load("faster_whisper.feature_extractor").FeatureExtractor
    return FeatureExtractor(chunk_length=WINDOW_S)  # its mel filter bank is built once


def log_mel(audio: np.ndarray) -> np.ndarray:
    """The model's input for ``audio`` (16 kHz): the last ``WINDOW_S`` seconds, padded with
    silence in front, normalised, as an 80×800 Whisper log-mel spectrogram (float32)."""
    samples = np.asarray(audio)
    x = samples.astype(np.float32) / 32768.0 if samples.dtype == np.int16 else samples.astype(np.float32)
    n = WINDOW_S * SAMPLE_RATE
    x = x[-n:]
    x = np.pad(x, (n - len(x), 0))
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    return _extractor()(x, padding=0)[:, : n // 160].astype(np.float32)


class SmartTurnDetector:
    """``TurnDetector`` on Smart Turn v3.2 (ONNX): one session, one lock, a worker thread."""

    def __init__(self, model_path: str | Path | None = None, threads: int = 1) -> None:
        self.model_path = Path(model_path) if model_path else smart_turn_model()
        self.name = self.model_path.stem
        self._threads = threads
        self._session: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._session is None:
            # One thread: the last words are being transcribed on the other core meanwhile.
            self._session = onnx_session(self.model_path, threads=self._threads, what="the Smart Turn model")
        return self._session

    def probability_sync(self, audio: np.ndarray) -> float:
        """``probability`` in the calling thread (benchmarks, worker threads)."""
        features = log_mel(audio)[np.newaxis]
        with self._lock:
            out = self._load().run(None, {"input_features": features})
        return float(np.ravel(out[0])[0])

    async def probability(self, audio: np.ndarray) -> float:
        """Probability that the turn in ``audio`` is complete (in a worker thread)."""
        return await asyncio.to_thread(self.probability_sync, audio)

    async def warmup(self) -> None:
        """Load the model and run it on a second of silence."""
        await self.probability(np.zeros(SAMPLE_RATE, dtype=np.int16))
