"""The offline echo-canceller benchmark's own arithmetic (tools/bench/aec_offline.py):
the chirp locator, the microphone mix, ERLE, the person's damping, the misaligned
references, the scene; and one short run of each canceller that is installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tools.bench import aec_offline as aec
from tools.bench import aec_scene as sc
from tools.testbed.echopath import Room

RATE = sc.RATE


def _speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    """Noise in bursts (on 2/3 of the time), int16 scale: broadband, like speech, never periodic."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(int(seconds * RATE)) * 3000
    on = (np.arange(len(x)) // (RATE // 5)) % 3 != 2
    return x * on


def test_the_chirp_locator_finds_a_known_delay_and_level():
    ref = np.concatenate([np.zeros(RATE // 2), sc.chirp(RATE) * 32767, np.zeros(RATE)])
    mic = np.zeros_like(ref)
    mic[600:] = 0.3 * ref[:-600]  # 37.5 ms late, -10.5 dB
    mic += np.random.default_rng(1).standard_normal(len(mic)) * 30
    delay_ms, gain_db = sc.locate_delay(mic, ref, RATE)
    assert delay_ms == pytest.approx(37.5)
    assert gain_db == pytest.approx(20 * np.log10(0.3), abs=0.2)


def test_the_chirp_locator_only_looks_at_lags_up_to_its_limit():
    ref = np.concatenate([sc.chirp(RATE) * 32767, np.zeros(RATE)])
    mic = np.zeros_like(ref)
    mic[8000:] = 0.3 * ref[:-8000]  # 500 ms late: beyond a 300 ms search
    delay_ms, gain_db = sc.locate_delay(mic, ref, RATE, max_ms=300)
    assert delay_ms <= 300 and gain_db < -30


def test_the_microphone_is_the_played_samples_through_the_room_plus_person_and_noise():
    played = np.zeros(3 * 22050)
    played[11025 : 11025 + 22050] = sc.chirp(22050) * 32767
    person = np.zeros(3 * RATE)
    person[2 * RATE : 2 * RATE + 4000] = _speechlike(0.25, seed=2)
    scene = sc.Scene(played, 22050, person, replies=(), talks=(), calibration_s=3.0)
    sig = sc.room_signals(scene, Room(delay_ms=40.0, gain_db=-10.0, rt60_ms=0.0))
    assert np.array_equal(sig.person, person[: len(sig.mic)])
    echo = sig.mic - sig.person - sig.noise
    delay_ms, gain_db = sc.locate_delay(echo, sig.ref, RATE)
    assert delay_ms == pytest.approx(40.0, abs=0.5)
    assert gain_db == pytest.approx(-10.0, abs=0.5)
    # The noise sits NOISE_DB under IRIS's voice (here the chirp, 0.5 of full scale).
    noise_db = 20 * np.log10(np.sqrt(np.mean(sig.noise**2)) / (0.5 * 32767 / np.sqrt(2)))
    assert noise_db == pytest.approx(sc.NOISE_DB, abs=0.5)


def test_erle_is_microphone_over_output_energy():
    mic = _speechlike(1.0)
    assert aec.erle_db(mic, mic / 10) == pytest.approx(20.0)
    assert aec.erle_db(mic, mic) == pytest.approx(0.0)


def test_damping_is_the_gain_on_the_person_whatever_else_the_output_holds():
    person = _speechlike(2.0, seed=3)
    assert aec.damping_db(person, person) == pytest.approx(0.0, abs=0.01)
    assert aec.damping_db(0.5 * person, person) == pytest.approx(6.02, abs=0.05)
    # Half a sample late (the canceller's filters) and with residue as loud as the person.
    late = np.fft.irfft(np.fft.rfft(person) * np.exp(-1j * np.pi * np.fft.rfftfreq(len(person))), len(person))
    residue = _speechlike(2.0, seed=4)
    assert aec.damping_db(late + residue, person) == pytest.approx(0.0, abs=0.5)
    assert aec.damping_db(residue, person) > 10


def test_best_lag_finds_the_cancellers_latency():
    person = _speechlike(1.0, seed=5)
    assert aec.best_lag(sc.shifted(person, 128), person) == 128
    assert aec.best_lag(sc.shifted(person, -7), person) == -7


def test_a_late_reference_is_the_samples_later_and_a_drifting_one_falls_slowly_behind():
    ref = _speechlike(4.0, seed=6)
    late = aec.reference(aec.Canceller("late", "livekit", ref_shift_ms=150.0), ref)
    assert np.array_equal(late[2400:], ref[:-2400]) and not late[:2400].any()
    drift = aec.reference(aec.Canceller("drift", "livekit", drift_ppm=1000.0), ref)
    at_start = aec.best_lag(drift[: RATE // 10], ref[: RATE // 10], 100)
    at_end = aec.best_lag(drift[-RATE // 10 :], ref[-RATE // 10 :], 100)
    assert abs(at_start) <= 1 and at_end == pytest.approx(1000e-6 * 3.95 * RATE, abs=2)


def test_the_scene_puts_each_clip_alone_and_part_way_into_a_reply_at_the_set_level():
    rate = 22050
    replies = [_speechlike(2.0 + i, seed=10 + i)[: int((2.0 + i) * rate)] for i in range(sc.ECHO_ONLY + 2)]
    clips = [("one", _speechlike(1.0, seed=20)), ("two", _speechlike(3.5, seed=21))]
    scene = sc.build_scene(replies, rate, clips)
    assert len(scene.talks) == 2 and len(scene.replies) == sc.ECHO_ONLY + 2
    for talk, reply in zip(scene.talks, scene.replies[sc.ECHO_ONLY :], strict=True):
        assert not any(a < talk.alone[1] and talk.alone[0] < b for a, b in scene.replies)
        assert reply[0] + 1.4 < talk.over[0] and talk.over[1] < reply[1]  # IRIS talks on past the person
    clip = scene.person[aec._span(scene.talks[0].alone)]
    voice = sc.rms_active(scene.played[int(scene.calibration_s * rate) :], rate // 100)
    level = 20 * np.log10(sc.rms_active(clip, sc.FRAME) / voice)
    assert level == pytest.approx(sc.PERSON_DB, abs=0.5)
    assert scene.calibration_s <= scene.replies[0][0]


@pytest.mark.parametrize(("engine", "module"), [("livekit", "livekit.rtc"), ("pywebrtc", "pywebrtc_audio")])
def test_a_canceller_fed_the_exact_samples_removes_the_echo_and_keeps_the_person(engine, module):
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        pytest.skip(f"{module} is not installed (pip install -r requirements/bench-aec.txt)")
    far = _speechlike(6.0, seed=7)
    echo = 0.3 * sc.shifted(far, 640)  # 40 ms, -10 dB
    person = np.zeros_like(far)
    person[4 * RATE : 5 * RATE] = _speechlike(1.0, seed=8)
    far[4 * RATE : 5 * RATE] = 0  # the person speaks while IRIS is silent
    echo[4 * RATE + 640 : 5 * RATE + 640] = 0
    out, _ = aec.cancel(aec.engine(aec.Canceller(engine, engine), 40), far, echo + person)
    out = sc.shifted(out, -aec.best_lag(out[4 * RATE :], person[4 * RATE :]))
    assert aec.erle_db(echo[2 * RATE : 4 * RATE], out[2 * RATE : 4 * RATE]) > 20
    span = slice(4 * RATE + 800, 5 * RATE)
    assert aec.damping_db(out[span], person[span]) < 1.5
