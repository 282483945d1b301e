"""Voice activity: the pure endpointing state machine and the Silero speech detector.

``Segmenter`` decides when an utterance starts and ends from a stream of
``(chunk_seconds, is_speech)`` pairs; it knows nothing about audio, models or time,
so it is tested with booleans (modelled on Home Assistant's ``VoiceCommandSegmenter``,
with IRIS's parameters). ``SileroDetector`` turns a frame into the probability the
pipeline compares with ``audio.vad_threshold`` to get ``is_speech``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from iris_voice.audio import FRAME_SAMPLES
from iris_voice.errors import Code, SpeechError
from iris_voice.speech.onnx import onnx_session

log = logging.getLogger(__name__)

SILERO_ASSET = "silero_vad_v6.onnx"
"""The Silero model file in faster-whisper's ``assets`` directory."""

# Summing float chunk lengths drifts (0.032 * 10 != 0.32); compare with a small slack
# so a hangover of exactly N frames ends on the Nth frame, not the N+1th.
_EPS = 1e-9


class SpeechDetector(Protocol):
    """Voice activity: the probability that a frame contains speech."""

    async def probability(self, frame: np.ndarray) -> float:
        """Speech probability 0..1 of one frame (int16, FRAME_SAMPLES samples)."""
        ...

    def reset(self) -> None:
        """Forget the recurrent state (between utterances)."""
        ...

    async def warmup(self) -> None:
        """Load the model and run it once."""
        ...


@dataclass(frozen=True)
class UtteranceStarted:
    """Enough speech was heard: an utterance has begun."""

    start_s: float
    """Position (seconds since ``reset``) where the speech run that confirmed it began."""


@dataclass(frozen=True)
class UtteranceEnded:
    """The utterance is over: silence lasted the hangover, or it grew too long."""

    start_s: float
    """Where the utterance's speech began (seconds since ``reset``)."""
    end_s: float
    """Where its last speech ended: the true end of speech as the detector saw it."""
    silence_s: float
    """Silence heard after ``end_s`` before deciding (``hangover_seconds`` or a little
    more with whole chunks; 0 when cut at ``max_seconds`` mid-speech). The speech end is
    this many seconds before the end of the audio fed so far."""
    reason: Literal["silence", "max_length", "turn_complete"]
    """``silence``: the hangover elapsed; ``max_length``: ``max_seconds`` was reached;
    ``turn_complete``: ended early by the caller (``end_turn``: a turn detector's verdict)."""


@dataclass(frozen=True)
class NoSpeech:
    """Nobody spoke within ``timeout_seconds`` after ``reset``."""

    waited_s: float
    """Seconds of audio fed without an utterance starting."""


SegmenterEvent = UtteranceStarted | UtteranceEnded | NoSpeech
"""What ``Segmenter.process`` can return (besides ``None`` for "nothing new")."""


class SegmenterState(Enum):
    """Where the segmenter is."""

    WAITING = "waiting"
    """No utterance yet."""
    SPEAKING = "speaking"
    """Inside an utterance (including short pauses within it)."""
    DONE = "done"
    """Ended or timed out; ``reset`` to listen again."""


class Segmenter:
    """Endpointing state machine fed ``(chunk_seconds, is_speech)``.

    - An utterance starts after ``speech_seconds`` of consecutive speech.
    - It ends once ``hangover_seconds`` of silence follow its last speech; a pause
      shorter than that (between words, a breath mid-sentence) does not end it.
      Inside an utterance a speech run shorter than ``speech_seconds`` (a click, a
      cough-sized blip) counts as silence, so noise cannot hold it open; the decision
      waits while such a run is in progress, so a word that starts just before the
      hangover runs out continues the utterance.
    - It ends anyway ``max_seconds`` after it started.
    - ``NoSpeech`` is returned if nothing starts within ``timeout_seconds`` of the
      reset (``None`` waits for ever, for always-listening mode).

    Positions are seconds of audio fed since ``reset``, so the caller can translate
    them into sample indices of its own buffer.
    """

    def __init__(
        self,
        *,
        speech_seconds: float = 0.1,
        hangover_seconds: float = 0.3,
        max_seconds: float = 15.0,
        timeout_seconds: float | None = 6.0,
    ) -> None:
        if speech_seconds < 0 or hangover_seconds <= 0 or max_seconds <= 0:
            raise ValueError("speech_seconds must be >= 0, hangover and max_seconds > 0")
        if timeout_seconds is not None and timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be > 0 or None")
        self.speech_seconds = speech_seconds
        self.hangover_seconds = hangover_seconds
        self.max_seconds = max_seconds
        self.timeout_seconds = timeout_seconds
        self.reset()

    def reset(self) -> None:
        """Forget everything and wait for a new utterance; positions restart at 0."""
        self.state = SegmenterState.WAITING
        self.elapsed_s = 0.0
        """Seconds of audio fed since the reset."""
        self._run_start: float | None = None  # where the current speech run began
        self._start_s = 0.0
        self._end_s = 0.0  # end of the last confirmed speech inside the utterance

    @property
    def in_utterance(self) -> bool:
        """True between ``UtteranceStarted`` and ``UtteranceEnded``."""
        return self.state is SegmenterState.SPEAKING

    @property
    def silence_s(self) -> float:
        """Inside an utterance, the silence since its last speech (0 while a speech run,
        even a short one, is going on); 0 outside one."""
        if self.state is not SegmenterState.SPEAKING or self._run_start is not None:
            return 0.0
        return self.elapsed_s - self._end_s

    def end_turn(self) -> UtteranceEnded | None:
        """End the utterance now, during a silence (a turn detector said it is complete);
        None when not inside an utterance or while a speech run is going on."""
        if self.state is not SegmenterState.SPEAKING or self._run_start is not None:
            return None
        return self._finish("turn_complete")

    def process(self, chunk_seconds: float, is_speech: bool) -> SegmenterEvent | None:
        """Feed one chunk; the event it caused, if any."""
        if chunk_seconds < 0:
            raise ValueError("chunk_seconds must be >= 0")
        if self.state is SegmenterState.DONE:
            return None
        before = self.elapsed_s
        self.elapsed_s += chunk_seconds
        if is_speech:
            if self._run_start is None:
                self._run_start = before
        else:
            self._run_start = None
        if self.state is SegmenterState.WAITING:
            return self._waiting()
        return self._speaking(is_speech)

    def _run_length(self) -> float:
        return 0.0 if self._run_start is None else self.elapsed_s - self._run_start

    def _waiting(self) -> SegmenterEvent | None:
        if self._run_start is not None and self._run_length() + _EPS >= self.speech_seconds:
            self.state = SegmenterState.SPEAKING
            self._start_s = self._run_start
            self._end_s = self.elapsed_s
            log.debug("utterance started at %.3f s", self._start_s)
            return UtteranceStarted(self._start_s)
        if self.timeout_seconds is not None and self.elapsed_s + _EPS >= self.timeout_seconds:
            self.state = SegmenterState.DONE
            log.debug("no speech within %.1f s", self.timeout_seconds)
            return NoSpeech(self.elapsed_s)
        return None

    def _speaking(self, is_speech: bool) -> SegmenterEvent | None:
        if is_speech and self._run_length() + _EPS >= self.speech_seconds:
            self._end_s = self.elapsed_s  # a confirmed run: speech goes on
        if self.elapsed_s - self._start_s + _EPS >= self.max_seconds:
            return self._finish("max_length")
        # While a speech run is still too short to count, wait: if it grows into
        # speech the utterance goes on, if it stops it was a blip and counts as silence.
        if self._run_start is None and self.elapsed_s - self._end_s + _EPS >= self.hangover_seconds:
            return self._finish("silence")
        return None

    def _finish(self, reason: Literal["silence", "max_length", "turn_complete"]) -> UtteranceEnded:
        self.state = SegmenterState.DONE
        event = UtteranceEnded(
            start_s=self._start_s,
            end_s=self._end_s,
            silence_s=self.elapsed_s - self._end_s,
            reason=reason,
        )
        log.debug("utterance ended: %s", event)
        return event


class SileroDetector:
    """``SpeechDetector`` on Silero VAD v6, the ONNX model faster-whisper ships.

    Streaming use of the model: each 512-sample frame (32 ms at 16 kHz) goes in with
    the last 64 samples of the previous frame in front of it (the context Silero v5/v6
    expect at 16 kHz), and the LSTM state (``h``, ``c``: 1×1×128) is carried from frame
    to frame. One intra-op thread: a frame costs well under a millisecond, and more
    threads only add wake-ups to an always-on loop.
    """

    CONTEXT_SAMPLES = 64
    """Samples of the previous frame prepended to each frame."""

    def __init__(self, model_path: str | os.PathLike[str] | None = None) -> None:
        self.model_path = Path(model_path) if model_path else _silero_path()
        self._session: Any = None
        self._lock = threading.Lock()  # one inference at a time; the state is sequential
        self._reset_pending = False
        self._clear_state()

    def _clear_state(self) -> None:
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(self.CONTEXT_SAMPLES, dtype=np.float32)

    def _load(self) -> Any:
        if self._session is None:
            self._session = onnx_session(self.model_path, threads=1, what="Silero VAD")
        return self._session

    def probability_sync(self, frame: np.ndarray) -> float:
        """``probability`` in the calling thread (for benchmarks and worker threads)."""
        samples = np.asarray(frame)
        if samples.shape != (FRAME_SAMPLES,):
            raise ValueError(f"Silero needs frames of {FRAME_SAMPLES} samples, got shape {samples.shape}")
        if samples.dtype == np.int16:
            samples = samples.astype(np.float32) / 32768.0
        else:
            samples = samples.astype(np.float32, copy=False)
        with self._lock:
            session = self._load()
            if self._reset_pending:
                self._reset_pending = False
                self._clear_state()
            x = np.concatenate([self._context, samples])[np.newaxis, :]
            out, self._h, self._c = session.run(None, {"input": x, "h": self._h, "c": self._c})
            self._context = samples[-self.CONTEXT_SAMPLES :].copy()
        return float(np.ravel(out)[0])

    async def probability(self, frame: np.ndarray) -> float:
        """Speech probability 0..1 of one frame (int16 or float32, ``FRAME_SAMPLES`` samples)."""
        return await asyncio.to_thread(self.probability_sync, frame)

    def reset(self) -> None:
        """Forget the recurrent state; applied before the next frame (never blocks)."""
        self._reset_pending = True

    async def warmup(self) -> None:
        """Load the model and run one frame of silence."""
        await self.probability(np.zeros(FRAME_SAMPLES, dtype=np.int16))
        self.reset()


def _silero_path() -> Path:
    spec = importlib.util.find_spec("faster_whisper")
    if spec is None or spec.origin is None:
        raise SpeechError(Code.MODEL_MISSING, "Silero VAD ships with faster-whisper, which is not installed")
    path = Path(spec.origin).parent / "assets" / SILERO_ASSET
    if not path.is_file():
        raise SpeechError(
            Code.MODEL_MISSING, f"Silero VAD model missing at {path} (reinstall faster-whisper)"
        )
    return path
