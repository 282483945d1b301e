"""The wake-word benchmark's bookkeeping (``tools/bench/rooms_wake.py``): which recordings
are streamed, where a detection is attributed, how the goal is judged."""

from __future__ import annotations

import json
import wave

import numpy as np
import pytest

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import WakeConfig
from tools.bench import rooms_wake, wake_corpus
from tools.bench.wake_corpus import Item


def _wav(path, seconds: float) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(np.ones(round(seconds * SAMPLE_RATE), np.int16).tobytes())


def test_streams_by_kind_without_human_clips_that_say_the_wake_words(tmp_path):
    human = tmp_path / "human"
    human.mkdir()
    clips = [
        ("a.wav", "command", "turn on the lamp", 1.0),
        ("b.wav", "command", "alexa turn off dining room", 1.0),
        ("c.wav", "wakeword", "hey jarvis", 1.0),
        ("d.wav", "other", "this is a test", 2.0),
    ]
    for name, _, _, seconds in clips:
        _wav(human / name, seconds)
    manifest = [{"file": f, "kind": k, "text": t, "duration_s": s} for f, k, t, s in clips]
    (human / "manifest.json").write_text(json.dumps(manifest))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _wav(corpus / "n.wav", 3.0)
    items = [Item("noise", "white", "", "n.wav", 3.0)]

    jarvis = rooms_wake.build_streams(corpus, items, human, WakeConfig())
    assert [(s.kind, [i.name for i in s.items]) for s in jarvis] == [
        ("noise", ["white"]),
        ("human speech", ["a", "b", "d"]),  # never the wake-word recordings
    ]
    alexa = rooms_wake.build_streams(corpus, items, human, WakeConfig(model="alexa"))
    assert [i.name for i in alexa[1].items] == ["a", "d"]  # "alexa turn off…" would be a true accept

    stream = jarvis[1]  # a (1 s), gap, b (1 s), gap, d (2 s), gap
    gap = round(rooms_wake.GAP_S * SAMPLE_RATE)
    assert len(stream.audio) == 4 * SAMPLE_RATE + 3 * gap
    assert stream.starts == [0, SAMPLE_RATE + gap, 2 * (SAMPLE_RATE + gap)]
    # a detection in the silence after a recording belongs to it
    assert stream.item_at((SAMPLE_RATE + gap // 2) // FRAME_SAMPLES).name == "a"
    assert stream.item_at((2 * SAMPLE_RATE + 2 * gap) // FRAME_SAMPLES + 1).name == "d"


def _kinds(replayed: dict[float, int], at_threshold: int, minutes: float = 60.0) -> dict:
    return {
        "kinds": [
            {"kind": "speech", "minutes": minutes, "replayed": {str(t): n for t, n in replayed.items()},
             "at_threshold": at_threshold}
        ]
    }  # fmt: skip


def _rows(real: float, other: float) -> list[dict]:
    return [{"expected": True, "highest": real}, {"expected": False, "highest": other}]


def test_the_goal_needs_the_real_wake_word_no_other_and_few_false_accepts():
    thresholds = [0.3, 0.5, 0.7, 0.9]
    cfg = WakeConfig(threshold=0.5)
    # the configured threshold's count comes from the run with resets, not the replay
    fa = _kinds({0.3: 3, 0.5: 7, 0.7: 0, 0.9: 0}, at_threshold=1, minutes=120)
    s = rooms_wake.summarize(cfg, _rows(real=0.85, other=0.4), fa, thresholds)
    by_t = {row["threshold"]: row for row in s["sweep"]}
    assert by_t[0.5]["false_accepts"] == 1 and by_t[0.5]["per_hour"] == 0.5
    assert by_t[0.3]["per_hour"] == 1.5 and by_t[0.3]["other_wake_words_detected"] == 1
    assert not by_t[0.9]["wake_word_detected"]  # 0.85 < 0.9
    assert s["goal_at_configured"] and s["goal_thresholds"] == [0.5, 0.7]
    assert s["highest_threshold_detecting_it"] == 0.85 and s["one_false_accept_per_hour"] == 0.5

    missed = rooms_wake.summarize(cfg, _rows(real=0.45, other=0.0), fa, thresholds)
    # at 0.3 it is heard but 3 false accepts in 2 h are 1.5 per hour; above, it is missed
    assert not missed["goal_at_configured"] and missed["goal_thresholds"] == []
    assert rooms_wake.summarize(cfg, [], fa, thresholds)["goal_thresholds"] == []  # no real clip: no goal
    short = _kinds({0.3: 0, 0.5: 0, 0.7: 0, 0.9: 0}, at_threshold=0, minutes=20)
    assert rooms_wake.summarize(cfg, _rows(real=0.85, other=0.0), short, thresholds)["goal_thresholds"] == []


def test_no_corpus_sentence_says_the_wake_word(tmp_path, monkeypatch):
    texts = wake_corpus.sentences()
    assert len(texts) >= 100 and len(set(texts)) == len(texts)
    assert not any("jarvis" in t.lower() for t in texts)
    bad = tmp_path / "s.txt"
    bad.write_text("# a comment\nHello there.\nHey Jarvis, what time is it?\n")
    monkeypatch.setattr(wake_corpus, "SENTENCES_FILE", bad)
    with pytest.raises(ValueError, match="contains the wake word"):
        wake_corpus.sentences()
