"""The wake model's view of the long corpus, computed once: per 80 ms step, its score and
the embedding the step added (``tools/bench/wake_long.py``).

Each clip is fed as the daemon's listener feeds the detector, in one continuous stream per
worker (0.5 s of silence between clips, never reset), so a clip's first windows hold the
end of the one before, as a microphone's would. Kept in
``$IRIS_CACHE/wake-long/<recipe>/features-<version>.npz``: for every clip its step scores
(float32) and embeddings (float16, 96 per step); the 16-embedding window a step scored is
the step's embedding and the 15 before it.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from iris_voice.audio import SAMPLE_RATE
from iris_voice.config import WakeConfig
from iris_voice.speech.wake import STEP_SAMPLES, OpenWakeWordDetector
from tools.bench.wake_corpus import _load16k
from tools.bench.wake_long import Clip, ensure_corpus

WINDOW = 16
"""Embeddings the wake model scores at once (1.28 s)."""
GAP = np.zeros(SAMPLE_RATE // 2, np.int16)


@dataclass
class ClipSteps:
    """One clip's steps: ``scores[i]`` is the model's score of the window ending with
    ``emb[i]``, after ``(i + 1) * 80 ms`` of the clip."""

    clip: Clip
    scores: np.ndarray
    emb: np.ndarray
    """(steps + 15, 96): the 15 embeddings before the clip's first step, then one per step."""

    def window(self, i: int) -> np.ndarray:
        """The 16 x 96 window the model scored at step ``i``."""
        return self.emb[i : i + WINDOW].astype(np.float32)


def _extract(job: tuple[str, list[Clip]]) -> list[tuple[np.ndarray, np.ndarray]]:
    root, clips = job
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    detector = OpenWakeWordDetector(WakeConfig(patience=1, verifier=False))
    warm = detector.steps(np.zeros(50 * STEP_SAMPLES, np.int16))  # 4 s: the model scores every step after it
    history = [window[-1].copy() for _, window in warm]
    out = []
    for clip in clips:
        audio = np.concatenate([_load16k(Path(root) / clip.file), GAP])
        audio = audio[: len(audio) - len(audio) % STEP_SAMPLES]
        scores, embs = [], list(history[-(WINDOW - 1) :])
        for start in range(0, len(audio), STEP_SAMPLES):
            for score, window in detector.steps(audio[start : start + STEP_SAMPLES]):
                scores.append(score)
                embs.append(window[-1].copy())
        history = embs
        out.append((np.asarray(scores, np.float32), np.asarray(embs, np.float16)))
    return out


def features(log=print, workers: int = 2) -> tuple[Path, list[ClipSteps]]:
    """Every clip's steps, computed once per corpus (about 1 minute of CPU per 15 of audio)."""
    root, clips = ensure_corpus(log)
    cache = root / f"features-{version('pyopen-wakeword')}.npz"
    if not cache.is_file():
        hours = sum(c.seconds for c in clips) / 3600
        log(f"computing the wake model's steps over {hours:.1f} h, {workers} workers")
        jobs = [(str(root), clips[k::workers]) for k in range(workers)]
        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(_extract, jobs))
        arrays = {}
        for k, part in enumerate(parts):
            for n, (scores, emb) in enumerate(part):
                index = k + n * workers
                arrays[f"s{index}"], arrays[f"e{index}"] = scores, emb
        tmp = cache.with_suffix(".tmp.npz")
        np.savez(tmp, **arrays)
        tmp.rename(cache)
    data = np.load(cache)
    return root, [ClipSteps(c, data[f"s{i}"], data[f"e{i}"]) for i, c in enumerate(clips)]


if __name__ == "__main__":
    _, steps = features()
    hours = sum(s.clip.seconds for s in steps) / 3600
    print(f"{len(steps)} clips, {hours:.1f} h, {sum(len(s.scores) for s in steps)} steps", file=sys.stderr)


REFRACTORY_STEPS = 16
"""Steps after a detection before the reset model scores again (its window refilled)."""


def fires(scores: np.ndarray, threshold: float, patience: int) -> list[int]:
    """The steps at which a detector with these per-step scores fires: ``patience`` steps in
    a row at or above ``threshold``, then ``REFRACTORY_STEPS`` without a score (the reset)."""
    out: list[int] = []
    run, quiet_until = 0, -1
    for i, s in enumerate(scores):
        if i < quiet_until:
            continue
        run = run + 1 if s >= threshold else 0
        if run >= patience:
            out.append(i)
            run, quiet_until = 0, i + REFRACTORY_STEPS
    return out


def step_scores(steps: ClipSteps, verifier) -> np.ndarray:
    """A clip's per-step scores as the detector sees them: the wake model's own, or with
    ``verifier`` (``WakeVerifier``) its probability where the model reaches the candidate."""
    if verifier is None:
        return steps.scores
    out = np.zeros(len(steps.scores), np.float32)
    asked = np.nonzero(steps.scores >= verifier.candidate)[0]
    if asked.size:
        windows = np.stack([steps.window(i).reshape(-1) for i in asked])
        z = ((windows - verifier.mean) / verifier.scale) @ verifier.weights + verifier.bias
        out[asked] = 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))
    return out
