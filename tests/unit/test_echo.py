"""IRIS's own voice in the microphone: the software guard, and when PipeWire's echo
canceller can run (``audio/echo.py``, ``voice/echoguard.py``)."""

from __future__ import annotations

import os

import pytest

from iris_voice.audio.echo import EchoCanceller, pipewire_target, unavailable
from iris_voice.config import AudioConfig
from iris_voice.voice.echoguard import ECHO_WINDOW_S, TAIL_S, EchoGuard


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def guard(clock: Clock) -> EchoGuard:
    g = EchoGuard("hey_jarvis", clock=clock)
    g.use("guard", "test")
    return g


def test_a_reply_with_the_wake_phrase_does_not_interrupt_itself(guard: EchoGuard) -> None:
    guard.saying("It is five past three.")
    assert guard.wake_allowed()  # the user may still interrupt an ordinary reply
    guard.saying("You can wake me by saying hey Jarvis.")
    assert not guard.wake_allowed()
    guard.stopped()
    assert guard.wake_allowed()


def test_the_reply_tail_is_not_a_question(guard: EchoGuard, clock: Clock) -> None:
    guard.saying("Twenty three times forty seven is 1081.")
    assert not guard.in_tail()  # only after IRIS stops
    guard.stopped()
    assert guard.in_tail()
    clock.now += TAIL_S + 0.01
    assert not guard.in_tail()


def test_the_canceller_allows_voice_barge_in_and_keeps_the_tail(guard: EchoGuard) -> None:
    assert not guard.voice_barge_in
    guard.use("pipewire-webrtc", "test")
    guard.saying("Hello there.")
    guard.stopped()
    assert guard.in_tail() and guard.voice_barge_in


def test_what_iris_just_said_is_an_echo(guard: EchoGuard, clock: Clock) -> None:
    guard.saying("The largest planet in our solar system is Jupiter.")
    guard.stopped()
    clock.now += 0.5
    assert guard.is_echo("solar system is Jupiter", began_at=clock.now - 1.0)
    assert guard.dropped == 1


@pytest.mark.parametrize(
    "heard",
    [
        "stop",  # a word or two is always the user's
        "thank you",
        "what is the largest moon of Saturn",  # a new question
    ],
)
def test_the_users_own_words_are_not_an_echo(guard: EchoGuard, clock: Clock, heard: str) -> None:
    guard.saying("The largest planet in our solar system is Jupiter. Thank you. Stop.")
    guard.stopped()
    assert not guard.is_echo(heard, began_at=clock.now + 0.2)


def test_a_question_begun_later_may_quote_iris(guard: EchoGuard, clock: Clock) -> None:
    guard.saying("Your pasta timer is done.")
    guard.stopped()
    clock.now += ECHO_WINDOW_S + 2
    assert not guard.is_echo("your pasta timer is done", began_at=clock.now - 1.5)


def test_off_means_no_guard(clock: Clock) -> None:
    g = EchoGuard(clock=clock)
    g.use("off", "headphones")
    g.saying("Say hey Jarvis.")
    assert g.wake_allowed() and g.voice_barge_in
    g.stopped()
    assert not g.in_tail()
    assert not g.is_echo("say hey jarvis to me", began_at=clock.now)


def test_a_device_pipewire_does_not_route_rules_out_the_canceller() -> None:
    why = unavailable(AudioConfig(input_device="hw:1,0"))
    assert why is not None and "audio.input_device" in why


def test_no_pipewire_session_rules_out_the_canceller(tmp_path) -> None:
    why = unavailable(AudioConfig(), env={"PATH": os.environ["PATH"], "XDG_RUNTIME_DIR": str(tmp_path)})
    assert why is not None
    assert "PipeWire" in why or "pipewire" in why


def test_off_and_guard_start_no_canceller(tmp_path) -> None:
    for setting, method in (("off", "off"), ("guard", "guard")):
        ec = EchoCanceller(AudioConfig(echo_cancel=setting), tmp_path)
        state = ec.start()
        assert state.method == method and not state.cancelled
        assert ec.node("input") is None and ec.node("output") is None
        assert not (tmp_path / "echo-cancel.conf").exists()


def test_pipewire_target_sets_the_node_only_while_a_stream_opens(monkeypatch) -> None:
    monkeypatch.setenv("PIPEWIRE_NODE", "user-choice")
    with pipewire_target("iris.echo-cancel.source"):
        assert os.environ["PIPEWIRE_NODE"] == "iris.echo-cancel.source"
    assert os.environ["PIPEWIRE_NODE"] == "user-choice"
    monkeypatch.delenv("PIPEWIRE_NODE")
    with pipewire_target(None):
        assert "PIPEWIRE_NODE" not in os.environ
    with pipewire_target("x"):
        pass
    assert "PIPEWIRE_NODE" not in os.environ


def test_only_speech_louder_than_the_echo_interrupts(guard: EchoGuard, clock: Clock) -> None:
    import numpy as np

    guard.use("pipewire-webrtc", "test")
    playing = {"level": 3000.0}
    guard.reference = lambda since: playing["level"]
    assert guard.gates_barge_in
    rng = np.random.default_rng(1)

    def frame(rms: float) -> np.ndarray:
        return (rng.standard_normal(512) * rms).astype(np.int16)

    # The canceller's residue: mostly faint, with spikes now and then. It never interrupts,
    # even where the VAD calls it speech.
    residue = [30, 20, 40, 250, 30, 25, 300, 20, 35, 30] * 6
    assert not any(guard.talking_over(frame(r), speech=True) for r in residue)
    # Someone talks over IRIS: louder than any of that, most of half a second.
    voice = [guard.talking_over(frame(2500 if i % 3 else 200), speech=True) for i in range(16)]
    assert any(voice)
    # Loud frames the VAD does not call speech (a door) do not interrupt.
    assert not any(guard.talking_over(frame(4000), speech=False) for _ in range(16))
    # IRIS is silent: any speech is louder than its echo.
    playing["level"] = 0.0
    assert guard.near_end(frame(300))


def test_without_the_canceller_the_wake_word_interrupts(clock: Clock) -> None:
    g = EchoGuard(clock=clock)
    g.reference = lambda since: 3000.0
    g.use("guard", "no PipeWire")
    assert not g.voice_barge_in and not g.gates_barge_in
    g.use("pipewire-webrtc", "")
    assert g.voice_barge_in and g.gates_barge_in
    g.use("off", "headphones")
    assert g.voice_barge_in and not g.gates_barge_in


def test_on_the_in_process_canceller_speech_interrupts_once_it_removes_iris(clock: Clock) -> None:
    g = EchoGuard(clock=clock)
    g.reference = lambda since: 3000.0
    g.use("webrtc", "AEC3 in IRIS")
    settled = {"now": False}
    g.converged = lambda: settled["now"]
    # A run of speech on the cleaned microphone decides, not the level gate of PipeWire's
    # residue; and not before AEC3 removes IRIS's voice (the wake word interrupts until then).
    assert g.cancelled and g.voice_barge_in and not g.gates_barge_in
    assert g.barge_in_speech_s is not None and g.barge_in_speech_s < 0.25
    assert not g.voice_barge_in_now()
    settled["now"] = True
    assert g.voice_barge_in_now()
    g.use("pipewire-webrtc", "")
    assert g.barge_in_speech_s is None


def test_webrtc_starts_in_process_or_says_why_not(tmp_path, monkeypatch) -> None:
    from iris_voice.audio import aec

    state = EchoCanceller(AudioConfig(echo_cancel="webrtc"), tmp_path).start()
    assert state.method == "webrtc" and state.cancelled
    assert not (tmp_path / "echo-cancel.conf").exists()  # no PipeWire module: nothing to spawn
    monkeypatch.setattr(aec.importlib.util, "find_spec", lambda name: None)
    state = EchoCanceller(AudioConfig(echo_cancel="webrtc"), tmp_path).start()
    assert state.method == "guard" and "pywebrtc-audio" in state.detail


@pytest.mark.parametrize(
    "setting, ok, words",
    [
        ("off", True, "off (audio.echo_cancel = off"),
        ("guard", None, "software guard only"),
        ("webrtc", True, "AEC3 runs inside IRIS"),
    ],
)
def test_doctor_says_what_iris_does_about_echo(monkeypatch, tmp_path, setting, ok, words) -> None:
    from iris_voice.app.doctor import echo_check
    from iris_voice.config import parse

    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # no daemon answers here
    passed, line = echo_check(parse({"audio": {"echo_cancel": setting}}))
    assert passed is ok and words in line
    if ok is None:
        assert "To enable it" in line


def test_doctor_names_why_the_canceller_cannot_run(monkeypatch, tmp_path) -> None:
    from iris_voice.app.doctor import echo_check
    from iris_voice.config import parse

    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # and no PipeWire session either
    passed, line = echo_check(parse({"audio": {"input_device": "hw:2,0", "echo_cancel": "pipewire"}}))
    assert passed is None
    assert "audio.input_device = 'hw:2,0'" in line and "IRIS will guard in software" in line
