"""The room benchmark's pure parts (tools/bench/ear_report.py, ear.py): edges of sound in a
two-channel recording, the latency between them, the token figures and the configurations.

Synthetic signals: tones in digital silence, with the expected edges known to the sample.
"""

from __future__ import annotations

import numpy as np
import pytest

from tools.bench import ear
from tools.bench.ear_report import loud_blocks, offset, onset, report, room_latencies, tokens

RATE = 16000


def tone(seconds: float, amplitude: float = 3000.0) -> np.ndarray:
    """A 440 Hz tone (int16)."""
    t = np.arange(round(seconds * RATE)) / RATE
    return (amplitude * np.sin(2 * np.pi * 440 * t)).astype(np.int16)


def room(question: tuple[float, float], answer: tuple[float, float] | None, total: float) -> np.ndarray:
    """A stereo recording: a tone on the left over ``question`` (start, end s), one on the right
    over ``answer``."""
    out = np.zeros((round(total * RATE), 2), np.int16)
    for channel, span in ((0, question), (1, answer)):
        if span is not None:
            a, b = round(span[0] * RATE), round(span[1] * RATE)
            out[a:b, channel] = tone(span[1] - span[0])
    return out


def test_edges_are_found_to_a_block():
    mono = np.zeros(3 * RATE, np.int16)
    mono[RATE : 2 * RATE] = tone(1.0)
    assert onset(mono, RATE, 0, len(mono)) == RATE
    assert offset(mono, RATE, 0, len(mono)) == 2 * RATE
    assert onset(mono, RATE, 2 * RATE, len(mono)) is None  # silence after it
    assert loud_blocks(mono, RATE).sum() == 100  # 1 s of 10 ms blocks


def test_quiet_noise_is_not_sound():
    rng = np.random.default_rng(1)
    hiss = rng.normal(0, 20, RATE).astype(np.int16)  # about -64 dBFS: a recording's floor, not speech
    assert onset(hiss, RATE, 0, len(hiss)) is None


def test_latency_is_from_the_end_of_the_question_to_the_answer():
    rec = room((0.5, 2.0), (2.75, 4.0), 6.0)
    assert room_latencies(rec, RATE, [(0, len(rec))]) == [750.0]


def test_a_pause_inside_the_question_does_not_end_it():
    rec = room((0.5, 2.0), (3.0, 4.0), 6.0)
    rec[round(1.0 * RATE) : round(1.3 * RATE), 0] = 0  # a 300 ms pause mid-question
    assert room_latencies(rec, RATE, [(0, len(rec))]) == [1000.0]


def test_each_turn_is_measured_in_its_own_window_and_silence_is_none():
    first = room((0.5, 1.5), (2.0, 3.0), 5.0)
    second = room((0.5, 1.5), None, 5.0)  # no answer: lost, as heard
    rec = np.concatenate([first, second])
    got = room_latencies(rec, RATE, [(0, len(first)), (len(first), len(rec))])
    assert got == [500.0, None]


def test_an_answer_that_began_before_the_question_ended_is_not_its_first_audio():
    rec = room((0.5, 2.0), (1.0, 1.5), 6.0)  # IRIS talked over the question, then fell silent
    rec[round(3.0 * RATE) : round(3.5 * RATE), 1] = tone(0.5)  # the answer after it
    assert room_latencies(rec, RATE, [(0, len(rec))]) == [1000.0]


def test_token_figures_skip_the_first_model_turn_and_fast_turns():
    rows = [
        {"turn": 1, "rounds": 1, "evaluated": 900, "own": 20},  # system prompt and tools read once
        {"turn": 2, "rounds": 0, "evaluated": 0},  # the fast path: no model
        {"turn": 3, "rounds": 1, "evaluated": 30, "own": 20},
        {"turn": 4, "rounds": 2, "evaluated": 100, "own": 50},
    ]
    got = tokens(rows)
    assert got["model_turns"] == 3
    assert got["ratio_p50"] == 1.75 and got["ratio_max"] == 2.0
    assert got["evaluated_sum"] == 1030


def test_report_ratios_and_losses(capsys):
    def row(turn: int, group: str, ms: float | None, **kw) -> dict:
        return {"turn": turn, "group": group, "first_audio_ms": ms, "room_ms": ms, "correct": True, **kw}

    naive = [row(1, "everyday", 3000.0), row(2, "chat", 4000.0)]
    iris = [row(1, "everyday", 1000.0), row(2, "chat", None, lost=True, correct=False)]
    figures = report([{"config": "after", "rows": iris}], naive)
    assert figures["after"]["lost"] == ["2"]
    assert figures["after"]["ratios"][0] == 3.5  # naive median 3500 / IRIS 1000
    assert figures["after"]["ratios"][1] is None  # no chat figure to compare
    assert "after room" in capsys.readouterr().out


def test_before_turns_off_only_the_levers_this_checkout_has(monkeypatch):
    monkeypatch.setattr(ear, "LEVERS", {"recheck": ("audio", "end_of_turn_recheck_ms", 0),
                                        "nothing": ("stt", "no_such_key", 1)})  # fmt: skip
    quiet = {"tts": {"late_cue_s": 0}}  # the late cue would be taken for the answer's onset
    assert ear.config_for("after") == quiet
    assert ear.config_for("cue") == {"tts": {"late_cue_s": 2.0}}  # the defaults, the cue with them
    assert ear.config_for("before") == {**quiet, "audio": {"end_of_turn_recheck_ms": 0}}
    assert ear.config_for("recheck") == quiet  # that lever alone: on, as by default
    monkeypatch.setattr(ear, "CANDIDATES", {"pause96": ("stt", "incremental_pause_ms", 96)})
    # on top of the defaults
    assert ear.config_for("pause96") == {**quiet, "stt": {"incremental_pause_ms": 96}}


@pytest.mark.parametrize(
    ("check", "reply", "right"),
    [
        ("re:berlin", "The capital of Germany is Berlin.", True),
        ("re:berlin", "The capital of Germany is Bonn.", False),
        ("multiply", "23 times 47 is 1081.", True),
        ("multiply", "23 times 47 is 1071.", False),
    ],
)
def test_judge(check, reply, right):
    assert ear.judge(check, reply, None) is right
