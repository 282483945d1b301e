"""microWakeWord's ``hey_jarvis`` (``pymicro-wakeword``) over the long corpus, computed once.

Each clip is fed as one continuous stream per worker (0.5 s of silence between clips),
as ``wake_features`` feeds openWakeWord. Kept in
``$IRIS_CACHE/wake-long/<recipe>/micro-<version>.npz``: per clip, the detector's
probability (the mean of its sliding window, as it compares with its cutoff) every 30 ms.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from importlib.metadata import version
from pathlib import Path

import numpy as np

from tools.bench.wake_corpus import _load16k
from tools.bench.wake_features import GAP
from tools.bench.wake_long import Clip, ensure_corpus

MICRO_STEP_S = 0.03
"""The model's stride: 3 feature frames of 10 ms."""


def micro_probabilities(detector, features, audio: np.ndarray) -> np.ndarray:
    """The sliding-window mean probability after every model step of ``audio``."""
    out = []
    for frame in features.process_streaming(audio.astype("<i2").tobytes()):
        p = detector.process_streaming_prob(frame)
        if p is not None and len(detector._features) == 0:
            out.append(p)
    return np.asarray(out, np.float32)


def micro_clip(audio: np.ndarray) -> np.ndarray:
    """A fresh detector's probabilities over one clip."""
    from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

    return micro_probabilities(MicroWakeWord.from_builtin(Model.HEY_JARVIS), MicroWakeWordFeatures(), audio)


def micro_fires(probs: np.ndarray, cutoff: float) -> list[int]:
    """The steps where the detector fires: above ``cutoff``, then quiet for 1.26 s (a refill)."""
    out: list[int] = []
    quiet_until = -1
    for i, p in enumerate(probs):
        if i >= quiet_until and p > cutoff:
            out.append(i)
            quiet_until = i + 42
    return out


def _extract(job: tuple[str, list[Clip]]) -> list[np.ndarray]:
    from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

    root, clips = job
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    detector = MicroWakeWord.from_builtin(Model.HEY_JARVIS)
    feats = MicroWakeWordFeatures()
    micro_probabilities(detector, feats, np.zeros(16000 * 2, np.int16))
    return [
        micro_probabilities(detector, feats, np.concatenate([_load16k(Path(root) / c.file), GAP]))
        for c in clips
    ]


def micro(log=print, workers: int = 2) -> list[np.ndarray]:
    """Every clip's microWakeWord probabilities, in ``ensure_corpus`` order (ImportError
    without ``pymicro-wakeword``)."""
    import pymicro_wakeword  # noqa: F401  (fail before the pool does)

    root, clips = ensure_corpus(log)
    cache = root / f"micro-{version('pymicro-wakeword')}.npz"
    if not cache.is_file():
        log(f"running microWakeWord over {sum(c.seconds for c in clips) / 3600:.1f} h, {workers} workers")
        jobs = [(str(root), clips[k::workers]) for k in range(workers)]
        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(_extract, jobs))
        arrays = {f"p{k + n * workers}": p for k, part in enumerate(parts) for n, p in enumerate(part)}
        tmp = cache.with_suffix(".tmp.npz")
        np.savez(tmp, **arrays)
        tmp.rename(cache)
    data = np.load(cache)
    return [data[f"p{i}"] for i in range(len(clips))]


if __name__ == "__main__":
    probs = micro()
    print(f"{len(probs)} clips, {sum(len(p) for p in probs)} steps", file=sys.stderr)
