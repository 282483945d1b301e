"""Wake word: openWakeWord's models through pyopen-wakeword (TensorFlow Lite, bundled).

pyopen-wakeword ships the built-in models (``hey_jarvis``, ``alexa``, ``hey_mycroft``,
``hey_rhasspy``, ``okay_nabu``), the melspectrogram and embedding models and the
TFLite C runtime in one wheel, and streams 16 kHz int16 audio. The model steps every
1280 samples (80 ms), so ``process`` collects 512-sample frames and runs the model
only when a whole step is there: two frames in five reach a worker thread.

The library creates its TFLite interpreters with the default thread count; IRIS
recreates the two feature interpreters (melspectrogram, embedding) single-threaded,
which halves the CPU an always-on detector costs (the embedding model dominates).

``scan`` runs a detector over a whole recording as the listener feeds it (``iris wake
--wav``, the wake-word benchmark); ``detections_at`` replays another threshold from a scan.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from iris_voice import heavy
from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import WakeConfig
from iris_voice.errors import Code, SpeechError
from iris_voice.speech.model_files import ModelMissing
from iris_voice.speech.wake_verifier import WEIGHTS, WakeVerifier

log = logging.getLogger(__name__)

STEP_SAMPLES = 1280
"""Samples per openWakeWord step (80 ms at 16 kHz)."""
BUILTIN_MODELS = ("hey_jarvis", "alexa", "hey_mycroft", "hey_rhasspy", "okay_nabu")
"""Wake words bundled with pyopen-wakeword, usable by name in ``wake.model``."""


class WakeDetector(Protocol):
    """Spots the wake word in a stream of frames."""

    name: str
    """The wake word model, e.g. ``hey_jarvis``."""
    late_s: float
    """How much later than the model's first high score a detection fires (``wake.patience``):
    the listener keeps that much more audio from before it, so the question's first word stays."""

    async def process(self, frame: np.ndarray) -> float:
        """Feed one frame (int16); the highest wake-word score seen in it, 0..1."""
        ...

    def reset(self) -> None:
        """Forget buffered audio (after a detection, so one phrase fires once)."""
        ...

    async def warmup(self) -> None:
        """Load the models and run them once."""
        ...


def resolve_wake_model(model: str) -> str | Path:
    """A built-in model name, or the path of a custom ``.tflite`` model.

    Raises ``ModelMissing`` (key ``wake.model``) for anything else."""
    if model in BUILTIN_MODELS:
        return model
    path = Path(model).expanduser()
    if path.suffix == ".onnx":
        raise ModelMissing(
            "wake.model",
            f"{path}: IRIS runs openWakeWord's TensorFlow Lite models; use the .tflite "
            "export of this model, or a built-in name (" + ", ".join(BUILTIN_MODELS) + ")",
        )
    if path.suffix == ".tflite":
        if not path.is_file():
            raise ModelMissing("wake.model", f"no wake word model at {path}")
        return path
    raise ModelMissing(
        "wake.model",
        f"{model!r} is neither a built-in wake word (" + ", ".join(BUILTIN_MODELS) + ") nor a .tflite file",
    )


class OpenWakeWordDetector:
    """``WakeDetector`` on openWakeWord (pyopen-wakeword).

    ``process`` returns the highest score of the model steps the frame completed, or
    0.0 when it completed none; the caller compares it with ``threshold``. With
    ``wake.patience`` k > 1 a step's score is the lowest of the last k steps', so it
    reaches the threshold only when k steps in a row did.
    Feed frames in order, one ``process`` at a time.
    """

    def __init__(self, cfg: WakeConfig) -> None:
        self.cfg = cfg
        self.threshold = cfg.threshold
        """Score at or above which the wake word counts as heard (``wake.threshold``)."""
        self._model = resolve_wake_model(cfg.model)
        self.name = self._model if isinstance(self._model, str) else self._model.stem
        self._pending = np.zeros(0, dtype=np.int16)  # touched only by the event loop
        self._lock = threading.Lock()  # one model step at a time on these interpreters
        self._reset_pending = False
        self._recent: deque[float] = deque(maxlen=cfg.patience)  # the last steps' scores
        self.late_s = (cfg.patience - 1) * STEP_SAMPLES / SAMPLE_RATE
        self._ww: Any = None
        self._features: Any = None
        self._verifier = _verifier(cfg) if self._model == "hey_jarvis" else None

    @property
    def verified(self) -> bool:
        """Whether the verifier judges this detector's steps."""
        return self._verifier is not None

    def _load(self) -> None:
        if self._ww is not None:
            return
        try:
            oww = heavy.load("pyopen_wakeword")  # one heavy import at a time (iris_voice.heavy)
            Model, OpenWakeWord, OpenWakeWordFeatures = oww.Model, oww.OpenWakeWord, oww.OpenWakeWordFeatures
        except ImportError as exc:
            raise ModelMissing("wake.model", "pyopen-wakeword is not installed in IRIS's virtualenv") from exc
        start = time.perf_counter()
        try:
            if isinstance(self._model, str):
                ww = OpenWakeWord.from_builtin(Model(self._model))
            else:
                ww = OpenWakeWord.from_model(self._model)
            features = OpenWakeWordFeatures.from_builtin()
        except (OSError, RuntimeError, ValueError) as exc:
            raise SpeechError(Code.MODEL_INVALID, f"wake.model: cannot load {self._model}: {exc}") from exc
        _single_threaded(features)
        self._ww, self._features = ww, features
        log.info("loaded wake word %s in %.2f s", self.name, time.perf_counter() - start)

    def steps(self, chunk: np.ndarray, windows: bool = True) -> list[tuple[float, np.ndarray | None]]:
        """Run the models over whole 80 ms steps of audio: for each step the wake model's
        own score and the window of embeddings it scored (16 x 96; None unless ``windows``)."""
        out = []
        with self._lock:
            self._load()
            if self._reset_pending:
                self._reset_pending = False
                # The wake model forgets its window and needs 16 fresh embeddings (1.28 s)
                # before it scores again, so one phrase fires once. The feature extractor
                # keeps its audio history: resetting it would recompute ~8 s of zero-filled
                # start (~0.6 s of CPU) right when STT and the LLM need the cores.
                self._ww.reset()
                self._recent.clear()
            for embedding in self._features.process_streaming(chunk.tobytes()):
                for score in self._ww.process_streaming(embedding):
                    # A copy: the model shifts its embeddings in place at the next step.
                    window = self._ww.embeddings[-self._ww.input_windows :].copy() if windows else None
                    out.append((float(score), window))
        return out

    def _run(self, chunk: np.ndarray) -> float:
        best = 0.0
        # Only the verifier needs the windows: without it no step copies one.
        for score, window in self.steps(chunk, windows=self._verifier is not None):
            if self._verifier is not None and window is not None:
                score = self._verifier.score(score, window)
            self._recent.append(score)
            if len(self._recent) == self._recent.maxlen:
                best = max(best, min(self._recent))
        return best

    def _take_steps(self, frame: np.ndarray) -> np.ndarray | None:
        samples = np.asarray(frame)
        if samples.ndim != 1:
            raise ValueError(f"expected mono int16 frames, got shape {samples.shape}")
        if samples.dtype != np.int16:
            samples = (np.clip(samples, -1.0, 1.0) * 32767).astype(np.int16)
        pending = np.concatenate([self._pending, samples])
        usable = len(pending) - len(pending) % STEP_SAMPLES
        self._pending = pending[usable:]
        return pending[:usable] if usable else None

    async def process(self, frame: np.ndarray) -> float:
        """Feed one frame (int16; float -1..1 is converted); the highest score it produced."""
        chunk = self._take_steps(frame)
        if chunk is None:
            return 0.0
        return await asyncio.to_thread(self._run, chunk)

    def process_sync(self, frame: np.ndarray) -> float:
        """``process`` in the calling thread (for benchmarks and offline scoring)."""
        chunk = self._take_steps(frame)
        return 0.0 if chunk is None else self._run(chunk)

    def reset(self) -> None:
        """Forget buffered audio and the model's window; never blocks (applied on the next step)."""
        self._pending = np.zeros(0, dtype=np.int16)
        self._reset_pending = True

    async def warmup(self) -> None:
        """Load the models and run the first step, which fills the feature buffers."""
        await asyncio.to_thread(self._run, np.zeros(STEP_SAMPLES, dtype=np.int16))
        self.reset()


@dataclass(frozen=True)
class WakeScan:
    """The wake detector's verdicts over one recording (``scan``)."""

    detections: tuple[tuple[float, float], ...]
    """(time in seconds of the frame that fired, its score) for each detection."""
    best_score: float
    """The highest score seen anywhere in the recording."""
    best_time_s: float
    """When the highest score was seen (seconds from the start)."""
    scores: tuple[float, ...]
    """The score of every frame fed, in order (0.0 for a frame that completed no model step)."""
    duration_s: float
    """Seconds of audio fed (whole frames)."""


class _Scannable(Protocol):
    def process_sync(self, frame: np.ndarray) -> float: ...

    def reset(self) -> None: ...


def scan(detector: _Scannable, samples: np.ndarray, threshold: float | None) -> WakeScan:
    """Feed ``samples`` (16 kHz mono int16) to ``detector`` frame by frame as the daemon's
    listener does: ``FRAME_SAMPLES`` at a time, and a ``reset`` after each score at or
    above ``threshold``, so one phrase fires once. ``threshold=None`` never resets (every
    score is kept: what ``detections_at`` needs to replay other thresholds).

    A trailing part shorter than a frame is left out, as a capture would not deliver it yet."""
    detections: list[tuple[float, float]] = []
    scores: list[float] = []
    for start in range(0, len(samples) - FRAME_SAMPLES + 1, FRAME_SAMPLES):
        score = detector.process_sync(samples[start : start + FRAME_SAMPLES])
        scores.append(score)
        if threshold is not None and score >= threshold:
            detections.append(((start + FRAME_SAMPLES) / SAMPLE_RATE, score))
            detector.reset()
    best = int(np.argmax(scores)) if scores else 0
    return WakeScan(
        detections=tuple(detections),
        best_score=scores[best] if scores else 0.0,
        best_time_s=(best + 1) * FRAME_SAMPLES / SAMPLE_RATE if scores else 0.0,
        scores=tuple(scores),
        duration_s=len(scores) * FRAME_SAMPLES / SAMPLE_RATE,
    )


REFRACTORY_FRAMES = 16 * STEP_SAMPLES // FRAME_SAMPLES
"""Frames after a detection before a reset detector scores again: the model's window of 16
embeddings (one per 80 ms step) is refilled, 1.28 s."""


def detections_at(scores: tuple[float, ...] | list[float], threshold: float) -> list[int]:
    """The frames at which a detector would fire at ``threshold``, from the scores of a scan
    that never reset (``scan(…, None)``): a score at or above it fires, and the next
    ``REFRACTORY_FRAMES - 1`` frames are skipped, as a reset silences the model that long.
    After it the model's window holds only audio from after the detection, as with a reset
    (the reset also drops the part-step of audio buffered then, so later steps may fall up
    to 80 ms apart from these: a replay, not the daemon's exact run)."""
    fired: list[int] = []
    quiet_until = -1
    for i, score in enumerate(scores):
        if i >= quiet_until and score >= threshold:
            fired.append(i)
            quiet_until = i + REFRACTORY_FRAMES
    return fired


def _verifier(cfg: WakeConfig) -> WakeVerifier | None:
    if not cfg.verifier:
        return None
    try:
        return WakeVerifier.load(WEIGHTS)
    except (OSError, KeyError, ValueError) as exc:
        raise ModelMissing(
            "wake.verifier", f"cannot read {WEIGHTS}: {exc} (or set wake.verifier = false)"
        ) from exc


def _single_threaded(features: Any) -> None:
    """Recreate pyopen-wakeword's feature interpreters with one thread each.

    pyopen-wakeword 1.1.0 passes no interpreter options, so TFLite picks several threads
    that mostly spin: ~6 ms of CPU per 80 ms step instead of ~3.5 ms on one thread, with
    the same scores. If the library's internals differ, the defaults stay (logged)."""
    internals = heavy.load("pyopen_wakeword.openwakeword")
    EMB_SHAPE, MEL_SHAPE = internals.EMB_SHAPE, internals.MEL_SHAPE

    lib = features.lib
    try:
        lib.TfLiteInterpreterOptionsCreate.restype = ctypes.c_void_p
        lib.TfLiteInterpreterOptionsSetNumThreads.argtypes = [ctypes.c_void_p, ctypes.c_int32]
        lib.TfLiteInterpreterOptionsDelete.argtypes = [ctypes.c_void_p]
        for name, shape in (("mel", MEL_SHAPE), ("emb", EMB_SHAPE)):
            model = getattr(features, f"{name}_model")
            old = getattr(features, f"{name}_interpreter")
            options = lib.TfLiteInterpreterOptionsCreate()
            lib.TfLiteInterpreterOptionsSetNumThreads(options, 1)
            interpreter = lib.TfLiteInterpreterCreate(model, options)
            lib.TfLiteInterpreterOptionsDelete(options)  # the interpreter keeps a copy
            if not interpreter:
                raise RuntimeError(f"TfLiteInterpreterCreate failed for the {name} model")
            dims = (ctypes.c_int32 * len(shape))(*shape)
            lib.TfLiteInterpreterResizeInputTensor(
                interpreter, ctypes.c_int32(0), dims, ctypes.c_int32(len(shape))
            )
            lib.TfLiteInterpreterAllocateTensors(interpreter)
            setattr(features, f"{name}_interpreter", interpreter)
            setattr(features, f"{name}_input_tensor", lib.TfLiteInterpreterGetInputTensor(interpreter, 0))
            setattr(features, f"{name}_output_tensor", lib.TfLiteInterpreterGetOutputTensor(interpreter, 0))
            lib.TfLiteInterpreterDelete(old)
    except (AttributeError, RuntimeError) as exc:
        log.warning("wake word: keeping TFLite's default threads (%s)", exc)
