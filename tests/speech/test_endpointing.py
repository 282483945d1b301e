"""Endpointing with the real Silero VAD on sentences with a pause inside.

The ``endpoint_*`` fixtures are Piper sentences with 0.3, 0.5 or 0.7 s of silence
mid-sentence; the ``bench_*`` ones are the benchmark's questions, each with the comma
pause of "Hey Jarvis, …". The VAD's probabilities go through IRIS's ``Segmenter`` with the
listener's threshold and hysteresis (tools/bench/endpoint.py). These tests pin down the
trade-off ``audio.vad_hangover_ms`` makes: what the shipped default keeps whole, what it
still cuts, and what it costs.
"""

from __future__ import annotations

import pytest

from iris_voice.config import AudioConfig
from tools.bench.endpoint import judge, probabilities
from tools.testbed.fixtures import BENCH, ENDPOINT, read_wav

pytestmark = pytest.mark.speech

DEFAULT_MS = AudioConfig().vad_hangover_ms


@pytest.fixture(scope="module")
def probs(speech_manifest) -> dict[str, list[float]]:
    """Silero's per-frame speech probabilities of every pause fixture and benchmark question."""
    from iris_voice.speech.vad import SileroDetector

    det = SileroDetector()
    names = ["pause", *ENDPOINT, *(f"bench_{n}" for n in BENCH)]
    return {name: probabilities(det, read_wav(name)) for name in names}


def verdict(probs, manifest, name: str, hangover_ms: int) -> dict:
    return judge(probs[name], manifest[name], hangover_ms, AudioConfig())


@pytest.mark.parametrize("name", [n for n, (_, pause) in ENDPOINT.items() if pause <= 0.3])
def test_the_default_hangover_keeps_a_short_pause_inside_the_sentence(probs, speech_manifest, name):
    v = verdict(probs, speech_manifest, name, DEFAULT_MS)
    assert not v["cut"], f"{name} cut in two at {DEFAULT_MS} ms"


def test_the_default_hangover_keeps_the_comma_after_the_wake_word(probs, speech_manifest):
    # In always-listening and follow-up turns "Hey Jarvis, what is…" must stay one question.
    cut = [n for n in BENCH if verdict(probs, speech_manifest, f"bench_{n}", DEFAULT_MS)["cut"]]
    assert cut == []


def test_the_default_hangover_costs_about_itself(probs, speech_manifest):
    # From the true end of speech to the decision: the hangover plus Silero's lag on the
    # last syllable, whole 32 ms frames; never less than the hangover minus that lag.
    costs = [verdict(probs, speech_manifest, f"bench_{n}", DEFAULT_MS)["cost_ms"] for n in BENCH]
    assert all(DEFAULT_MS - 100 <= c <= DEFAULT_MS + 150 for c in costs), costs


@pytest.mark.parametrize("name", [n for n, (_, pause) in ENDPOINT.items() if pause >= 0.7])
def test_the_trade_off_a_long_pause_is_cut_at_the_default_and_kept_at_800_ms(probs, speech_manifest, name):
    # The price of a fast endpoint: a 0.7 s hesitation ends the question. 800 ms would keep
    # it, at about 400 ms more on every answer (tools/bench/endpoint.py prints the figures).
    # A 0.5 s pause is cut too, by some sentences (it needs about 600 ms).
    assert verdict(probs, speech_manifest, name, DEFAULT_MS)["cut"]
    assert not verdict(probs, speech_manifest, name, 800)["cut"]
