"""A second opinion on "hey jarvis": a small classifier on the wake model's own window.

openWakeWord scores each 80 ms step from a window of 16 speech embeddings (1.28 s). Its
``hey_jarvis`` model was trained on one synthetic voice family: it misses some voices and
rhymes ("Hey Travis", "I told Purvis") can score 0.6–0.9. The verifier is logistic
regression over the same window (standardized, 16 x 96 values) trained on hours of other
voices saying the phrase and not saying it (``tools/train_wake_verifier.py`` on the
development half of ``tools/bench/wake_long.py``). It is asked only when the wake model's
score reaches ``candidate`` — far below the usual threshold, so voices the wake model
hears faintly get their say — and its probability becomes the step's score, which
``wake.threshold`` and ``wake.patience`` then judge as before.

The weights ship with IRIS (``data/hey_jarvis_verifier.npz``, ~6 KB of float16): nothing is
downloaded. The verifier is for ``hey_jarvis`` only; other models run alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

WEIGHTS = Path(__file__).with_name("data") / "hey_jarvis_verifier.npz"
"""The shipped verifier of the built-in ``hey_jarvis`` model."""


@dataclass(frozen=True)
class WakeVerifier:
    """Logistic regression over a standardized 16 x 96 embedding window."""

    mean: np.ndarray
    """Per-feature mean of the training windows (1536)."""
    scale: np.ndarray
    """Per-feature standard deviation (1536)."""
    weights: np.ndarray
    """One weight per standardized feature (1536)."""
    bias: float
    candidate: float
    """The wake model's score from which the verifier is asked; below it a step scores 0."""

    def probability(self, window: np.ndarray) -> float:
        """The verifier's probability that this window ends with the wake phrase."""
        x = (np.asarray(window, np.float32).reshape(-1) - self.mean) / self.scale
        z = float(x @ self.weights) + self.bias
        return float(1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0))))

    def score(self, base: float, window: np.ndarray) -> float:
        """A step's score: the verifier's probability when the wake model's ``base`` score
        reaches ``candidate``, else 0."""
        return self.probability(window) if base >= self.candidate else 0.0

    def save(self, path: Path) -> None:
        """Write the verifier as float16 arrays (its probabilities move by < 0.01)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            path,
            mean=self.mean.astype(np.float16),
            scale=self.scale.astype(np.float16),
            weights=self.weights.astype(np.float16),
            bias=np.float32(self.bias),
            candidate=np.float32(self.candidate),
        )

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> WakeVerifier:
        """Read a verifier written by ``save``."""
        with np.load(path) as data:
            return cls(
                mean=data["mean"].astype(np.float32),
                scale=data["scale"].astype(np.float32),
                weights=data["weights"].astype(np.float32),
                bias=float(data["bias"]),
                candidate=float(data["candidate"]),
            )
