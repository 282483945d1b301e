"""The barge-in benchmark's own arithmetic (tools/bench/aec_bargein.py): when a run of
speech frames fires, which replies count as falsely interrupted, and how late a person
is heard."""

from __future__ import annotations

import numpy as np

from tools.bench import aec_bargein as bargein
from tools.bench import aec_scene as sc

FRAME_S = bargein.FRAME_S


def test_a_run_fires_when_it_completes_and_then_starts_afresh() -> None:
    speech = np.array([1, 1, 0, 1, 1, 1, 1, 1, 0, 1], bool)
    assert bargein.fired(speech, 2).tolist() == [1, 4, 6]
    assert bargein.fired(speech, 3).tolist() == [5]
    assert bargein.fired(speech, 6).tolist() == []


def test_a_run_with_a_share_louder_than_the_echo_fires_once_that_share_is() -> None:
    speech = np.ones(8, bool)
    near = np.array([0, 1, 0, 0, 1, 0, 1, 1], bool)
    assert bargein.fired(speech, 4, near, 0.5).tolist() == [7]  # 4 of 8; never 2 of 4 before
    assert bargein.fired(speech, 4, near, 0.25).tolist() == [3, 7]
    assert bargein.fired(speech, 4, ~np.ones(8, bool), 0.5).tolist() == []


def _scene() -> sc.Scene:
    """Two replies: one with IRIS alone (0-2 s), one the person talks over from 4.0 s."""
    person = np.zeros(8 * sc.RATE)
    person[int(4.0 * sc.RATE) : int(5.0 * sc.RATE)] = 3000.0
    talk = sc.Talk("stop", alone=(6.5, 7.0), over=(4.0, 5.0))
    return sc.Scene(np.zeros(8 * 22050), 22050, person, ((0.0, 2.0), (3.0, 5.5)), (talk,), 0.0)


def test_only_replies_with_iris_alone_count_as_false_and_delays_run_from_the_persons_voice() -> None:
    scene = _scene()
    frames = int(8 / FRAME_S)
    probs = np.zeros(frames)
    probs[int(1.0 / FRAME_S) : int(1.0 / FRAME_S) + 2] = 0.9  # two frames of "speech" in IRIS's voice
    onset = int(4.0 / FRAME_S) + 1
    probs[onset + 3 : onset + 12] = 0.9  # the person, heard three frames late
    rows = {r["run"]: r for r in bargein.judge(scene, scene.person, probs, 0.5)}
    assert rows[1]["false"] == 1 and rows[2]["false"] == 1 and rows[3]["false"] == 0
    assert rows[2]["replies"] == 2 and rows[2]["detected"] == 1 and rows[2]["over"] == 1
    # From the person's first loud frame to the end of the frame that completed the run.
    assert rows[2]["p50_ms"] > rows[1]["p50_ms"] > 0
    assert rows[8]["detected"] == 1 and rows[8]["p50_ms"] >= 8 * FRAME_S * 1000


def test_frames_not_allowed_interrupt_nothing() -> None:
    scene = _scene()
    probs = np.full(int(8 / FRAME_S), 0.9)
    allowed = np.zeros(len(probs), bool)
    rows = bargein.judge(scene, scene.person, probs, 0.5, allowed)
    assert all(r["false"] == 0 and r["detected"] == 0 for r in rows)


def test_louder_than_echo_takes_the_residue_as_echo_and_a_voice_above_it_as_a_person() -> None:
    rate = 22050
    played = np.zeros(8 * rate)
    played[: 6 * rate] = 8000.0 * np.sin(np.arange(6 * rate) * 0.05)  # IRIS talks for 6 s
    scene = sc.Scene(played, rate, np.zeros(8 * sc.RATE), ((0.0, 6.0),), (), 0.0)
    rng = np.random.default_rng(1)
    out = rng.normal(0, 200.0, 8 * sc.RATE)  # the canceller's residue, well below the speaker
    out[int(4.0 * sc.RATE) : int(4.5 * sc.RATE)] *= 40  # a person, 32 dB above it
    near = bargein.louder_than_echo(scene, out)
    residue = near[int(2.0 / FRAME_S) : int(3.9 / FRAME_S)]
    person = near[int(4.05 / FRAME_S) : int(4.45 / FRAME_S)]
    assert not residue.any() and person.all()
    assert near[int(6.5 / FRAME_S) :].all()  # IRIS silent: nothing to tell apart
