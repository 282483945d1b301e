"""Train the wake word's verifier on the development half of the long corpus.

``python -m tools.train_wake_verifier [--out PATH] [--candidate C] [--l2 L]``
(``make wake-verifier``). Reads ``tools/bench/wake_features.py``'s steps of the development
half only; the held-out half is for ``tools/bench/wake_verifier_bench.py``.

- Positives: the windows of each "Hey Jarvis" clip whose end falls from the end of the
  phrase to ``POS_AFTER_S`` after it (where the wake model's own score peaks), among those
  the wake model scores at least ``candidate``.
- Negatives: every step of prose, names and speech in noise the wake model scores at least
  ``candidate`` (the ones the verifier will be asked about), plus the commands after the
  phrase (``NEG_AFTER_S`` on).

First the regularization is chosen by leaving voices out (each fold trains without three
development voices and is judged on them); then the verifier is trained on the whole half.
Logistic regression by full-batch Adam: deterministic, numpy only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from iris_voice.speech.wake_verifier import WEIGHTS, WakeVerifier
from tools.bench.wake_features import ClipSteps, features

POS_AFTER_S = (0.0, 0.48)
"""Window ends, relative to the end of the phrase, that count as the phrase."""
NEG_AFTER_S = 1.6
"""Window ends this long after the phrase hold only the command."""
STEP_S = 0.08
CANDIDATE = 0.05
L2 = (1e-3, 1e-2, 1e-1)


def _rows(steps: list[ClipSteps], candidate: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Windows (flattened), labels, and each row's voice (for the folds)."""
    xs, ys, voices = [], [], []
    for s in steps:
        ends = (np.arange(len(s.scores)) + 1) * STEP_S
        asked = s.scores >= candidate
        voice = " ".join(s.clip.voice.split()[:2])
        if s.clip.kind == "wake":
            after = ends - s.clip.wake_end_s
            pos = asked & (after >= POS_AFTER_S[0]) & (after <= POS_AFTER_S[1])
            neg = asked & (after >= NEG_AFTER_S)
        else:
            pos, neg = np.zeros_like(asked), asked
        for label, chosen in ((1, pos), (0, neg)):
            for i in np.nonzero(chosen)[0]:
                xs.append(s.window(i).reshape(-1))
                ys.append(label)
                voices.append(voice)
    return np.asarray(xs, np.float32), np.asarray(ys, np.float32), np.asarray(voices)


def fit(
    x: np.ndarray, y: np.ndarray, l2: float, epochs: int = 400
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Weights, bias, mean and scale of a class-balanced logistic regression."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-3
    z = (x - mean) / scale
    balance = np.where(y == 1, 0.5 / max(1, y.sum()), 0.5 / max(1, (1 - y).sum()))
    w, b = np.zeros(z.shape[1], np.float64), 0.0
    m, v, mb, vb = np.zeros_like(w), np.zeros_like(w), 0.0, 0.0
    rate, beta1, beta2 = 0.01, 0.9, 0.999
    for t in range(1, epochs + 1):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w + b, -50, 50)))
        err = (p - y) * balance
        gw, gb = z.T @ err + l2 * w, float(err.sum())
        m, v = beta1 * m + (1 - beta1) * gw, beta2 * v + (1 - beta2) * gw**2
        mb, vb = beta1 * mb + (1 - beta1) * gb, beta2 * vb + (1 - beta2) * gb**2
        w -= rate * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + 1e-8)
        b -= rate * (mb / (1 - beta1**t)) / (np.sqrt(vb / (1 - beta2**t)) + 1e-8)
    return w.astype(np.float32), b, mean, scale


def _judge(x, y, w, b, mean, scale) -> tuple[float, float]:
    p = 1.0 / (1.0 + np.exp(-np.clip(((x - mean) / scale) @ w + b, -50, 50)))
    return float((p[y == 1] >= 0.5).mean()), float((p[y == 0] >= 0.5).mean())


def main(argv: list[str] | None = None) -> int:
    """Train on the development half and write the verifier."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    parser.add_argument("--candidate", type=float, default=CANDIDATE)
    parser.add_argument("--l2", type=float, default=None, help="skip the folds and use this")
    args = parser.parse_args(argv)
    _, steps = features()
    dev = [s for s in steps if s.clip.half == "dev"]
    x, y, voices = _rows(dev, args.candidate)
    print(f"development half: {int(y.sum())} phrase windows, {int((1 - y).sum())} others", file=sys.stderr)
    l2 = args.l2
    if l2 is None:
        names = sorted(set(voices))
        folds = [names[k::4] for k in range(4)]
        best = None
        for lam in L2:
            hits, false = [], []
            for fold in folds:
                out = np.isin(voices, fold)
                w, b, mean, scale = fit(x[~out], y[~out], lam)
                hit, fa = _judge(x[out], y[out], w, b, mean, scale)
                hits.append(hit)
                false.append(fa)
            print(
                f"  l2 {lam:g}: voices left out: phrase windows kept {np.mean(hits):.3f}, "
                f"others passed {np.mean(false):.4f}"
            )
            key = np.mean(hits) - 10 * np.mean(false)
            if best is None or key > best[0]:
                best = (key, lam)
        l2 = best[1]
    w, b, mean, scale = fit(x, y, l2)
    hit, fa = _judge(x, y, w, b, mean, scale)
    print(
        f"trained (l2 {l2:g}): phrase windows kept {hit:.3f}, others passed {fa:.4f}; written to {args.out}"
    )
    WakeVerifier(mean, scale, w, float(b), args.candidate).save(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
