"""The wake word's verifier: asked only from the candidate score, its probability judged by
threshold and patience as the wake model's was, the shipped weights readable, and the
replay the benchmark uses firing where the detector would."""

from __future__ import annotations

import numpy as np
import pytest

from iris_voice.config import WakeConfig
from iris_voice.speech.model_files import ModelMissing
from iris_voice.speech.wake import OpenWakeWordDetector
from iris_voice.speech.wake_verifier import WEIGHTS, WakeVerifier
from tools.bench.wake_features import fires


def verifier(candidate: float = 0.1) -> WakeVerifier:
    """A verifier that says yes exactly when the window's first value is positive."""
    weights = np.zeros(16 * 96, np.float32)
    weights[0] = 40.0
    return WakeVerifier(np.zeros(16 * 96, np.float32), np.ones(16 * 96, np.float32), weights, 0.0, candidate)


def window(first: float) -> np.ndarray:
    w = np.zeros((16, 96), np.float32)
    w[0, 0] = first
    return w


def test_the_verifier_is_asked_only_from_the_candidate_score():
    v = verifier(candidate=0.1)
    assert v.score(0.09, window(1.0)) == 0.0  # below the candidate: not asked, whatever it would say
    assert v.score(0.1, window(1.0)) > 0.99
    assert v.score(0.99, window(-1.0)) < 0.01  # the wake model's certainty does not override it


def test_saved_and_loaded_it_gives_the_same_probabilities(tmp_path):
    rng = np.random.default_rng(1)
    v = WakeVerifier(rng.normal(size=1536), rng.uniform(0.5, 2, 1536), rng.normal(0, 0.05, 1536), -0.3, 0.07)
    v.save(tmp_path / "v.npz")
    back = WakeVerifier.load(tmp_path / "v.npz")
    assert back.candidate == pytest.approx(0.07)
    for _ in range(20):
        w = rng.normal(size=(16, 96))
        assert back.probability(w) == pytest.approx(v.probability(w), abs=0.02)


def test_the_shipped_weights_fit_the_wake_models_window():
    v = WakeVerifier.load(WEIGHTS)
    assert v.weights.shape == v.mean.shape == v.scale.shape == (16 * 96,)
    assert 0 < v.candidate < WakeConfig().threshold  # asked below the usual threshold
    assert np.all(v.scale > 0)


def scripted(detector: OpenWakeWordDetector, steps: list[tuple[float, float]]) -> list[float]:
    """Feed one step per ``process_sync``: (the wake model's score, the window's first value)."""
    out = []
    for base, first in steps:
        detector.steps = lambda chunk, windows=True, b=base, f=first: [(b, window(f))]  # type: ignore[method-assign]
        out.append(detector.process_sync(np.zeros(1280, np.int16)))
    return out


def test_the_detector_judges_the_verifiers_probability_with_patience():
    det = OpenWakeWordDetector(WakeConfig(patience=2, verifier=True))
    det._verifier = verifier(candidate=0.1)
    # a rhyme the wake model is sure of, refused; then the phrase the model hears faintly, kept
    got = scripted(det, [(0.9, -1.0), (0.9, -1.0), (0.2, 1.0), (0.2, 1.0), (0.05, 1.0)])
    assert [s >= 0.5 for s in got] == [False, False, False, True, False]


def test_without_the_verifier_the_model_decides_alone():
    det = OpenWakeWordDetector(WakeConfig(patience=1, verifier=False))
    assert det._verifier is None
    assert scripted(det, [(0.9, -1.0), (0.2, 1.0)]) == [0.9, 0.2]


def test_other_wake_words_run_without_it():
    assert OpenWakeWordDetector(WakeConfig(model="alexa"))._verifier is None


def test_unreadable_weights_name_the_key(monkeypatch, tmp_path):
    bad = tmp_path / "v.npz"
    bad.write_bytes(b"not a verifier")
    monkeypatch.setattr("iris_voice.speech.wake.WEIGHTS", bad)
    with pytest.raises(ModelMissing, match=r"^wake.verifier: cannot read .*wake.verifier = false"):
        OpenWakeWordDetector(WakeConfig(verifier=True))


def test_the_replay_fires_after_patience_then_waits_for_the_refill():
    scores = np.array([0.6, 0.6, 0.6] + [0.9] * 20 + [0.0, 0.7, 0.7])
    assert fires(scores, 0.5, 3) == [2, 20]  # 16 quiet steps, then three in a row again
    assert fires(scores, 0.5, 1) == [0, 16]
    assert fires(np.array([0.6, 0.4, 0.6, 0.4]), 0.5, 2) == []  # not in a row
