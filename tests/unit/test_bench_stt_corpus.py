"""The speech-to-text benchmarks' pure parts: the generated commands
(``tools/bench/command_corpus.py``) and the end-of-turn replay's policy names
(``tools/bench/endpoint_turn.py``)."""

from __future__ import annotations

import numpy as np

from tools.bench import command_corpus, endpoint_turn


def test_two_hundred_commands_the_same_every_time_and_every_template_used():
    texts = command_corpus.texts()
    assert len(texts) == command_corpus.COUNT == 200
    assert texts == command_corpus.texts()  # seeded: the same corpus on every machine
    assert not any("{" in t or "}" in t for t in texts)  # every placeholder filled
    for template in command_corpus.TEMPLATES:
        head = template.split("{")[0]
        assert any(t.startswith(head) for t in texts), template
    assert not any("jarvis" in t.lower() for t in texts)  # no wake word: these are the question


def test_noise_is_mixed_at_the_asked_signal_to_noise_ratio():
    speech = np.sin(np.linspace(0, 2000 * np.pi, 32000)) * 8000
    for kind in ("white", "brown"):
        for snr in (20, 5):
            mixed = command_corpus._mix(speech, np.random.default_rng(2), kind, snr)
            noise = mixed - speech
            loud = speech[np.abs(speech) > 300]
            ratio_db = 20 * np.log10(np.sqrt(np.mean(loud**2)) / np.sqrt(np.mean(noise**2)))
            assert abs(ratio_db - snr) < 0.5, (kind, snr, ratio_db)


def test_trim_keeps_the_loud_part_only():
    parts = [np.zeros(100), np.full(50, 5000.0), np.zeros(10), np.full(5, -900.0), np.zeros(80)]
    audio = np.concatenate(parts)
    trimmed = command_corpus._trim(audio)
    assert len(trimmed) == 50 + 10 + 5
    assert trimmed[0] == 5000.0 and trimmed[-1] == -900.0
    silent = np.zeros(40)
    assert len(command_corpus._trim(silent)) == 40  # nothing loud: left as it is


def test_policy_names_carry_the_silences_they_change():
    assert endpoint_turn._at("smart_turn@96+words@96", "smart_turn", 0.16) == 0.096
    assert endpoint_turn._at("smart_turn@96+words@96", "words", 0.15) == 0.096
    assert endpoint_turn._at("smart_turn+words@96", "smart_turn", 0.16) == 0.16
    assert endpoint_turn._at("smart_turn+words", "words", 0.15) == 0.15
    assert len(set(endpoint_turn.POLICIES)) == len(endpoint_turn.POLICIES)
