"""IRIS in a room: its replies leak back into the virtual microphone (40 ms late, −10 dB,
a 250 ms reverb tail; ``tools/testbed/echopath.py``), with the real daemon, the real speech
models and PipeWire's echo canceller started by IRIS itself (``audio.echo_cancel = "pipewire"``).

No language model: every question here is answered on the fast path (the model URL is dead;
the daemon's one "cannot reach" sentence at start is waited out).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.voice_helpers import loud_spans

pytestmark = [pytest.mark.slow, pytest.mark.speech, pytest.mark.timeout(600)]

DEAD_LLM = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def room(virtual_audio, speech_manifest):
    """The bed with its room; taken away after this module."""
    from tools.testbed.echopath import EchoPath, Room

    with EchoPath(virtual_audio, Room(delay_ms=40, gain_db=-10, rt60_ms=250)) as path:
        yield path


def daemon(bed, tmp_path, **audio: Any):
    from tools.testbed.voicebed import LiveDaemon

    config = {"audio": {"follow_up_s": 3.0, "echo_cancel": "pipewire", **audio}, "tools": {"timezone": "UTC"}}
    return LiveDaemon(bed, DEAD_LLM, tmp_path, config)


def wait_idle(iris, seconds: float, timeout: float = 60) -> None:
    """Until IRIS has been idle for ``seconds`` in a row."""
    since, deadline = None, time.monotonic() + timeout
    while time.monotonic() < deadline:
        if iris.status()["state"] == "idle":
            since = since or time.monotonic()
            if time.monotonic() - since >= seconds:
                return
        else:
            since = None
        time.sleep(0.1)
    raise TimeoutError(iris.log_tail())


def test_iris_does_not_answer_or_interrupt_itself(virtual_audio, room, tmp_path):
    from tools.testbed.fixtures import fixture

    with daemon(virtual_audio, tmp_path) as iris:
        wait_idle(iris, 2.0)
        echo = iris.status()["echo"]
        assert echo["method"] == "pipewire-webrtc", echo
        # A reply that says the wake phrase plays to the end…
        for text in ("You can wake me by saying hey Jarvis, then your question.", "Hey Jarvis is my name."):
            said = iris.request("say", text=text, timeout=60)
            assert said["spoken"] == text and not said["interrupted"], said
            wait_idle(iris, 1.5)
        # …and a spoken question gets exactly one turn: the reply's echo in the follow-up
        # window is not a second question.
        before = iris.status()["turn_count"]
        virtual_audio.play_into_mic(fixture("bench_multiply"))
        turn = iris.wait_turn(after=before, timeout=60)
        assert "1081" in turn["reply"].replace(",", ""), turn
        wait_idle(iris, 4.0)  # the follow-up window (3 s) has closed
        assert iris.status()["turn_count"] == before + 1, iris.log_tail()


def test_talking_over_iris_stops_it_and_the_question_is_answered(virtual_audio, room, tmp_path):
    from tools.testbed.fixtures import fixture, load_manifest

    story = (
        "Here is a long story about the sea. A small boat left the harbour at dawn with a "
        "fisherman, his daughter and an old grey dog, and for hours they saw only gulls."
    )
    with daemon(virtual_audio, tmp_path, barge_in="voice") as iris:
        wait_idle(iris, 2.0)
        before = iris.status()["turn_count"]
        rec = virtual_audio.record_speaker()
        said: dict[str, Any] = {}
        sayer = threading.Thread(target=lambda: said.update(iris.request("say", text=story, timeout=120)))
        sayer.start()
        iris.wait_state("speaking", timeout=30)
        time.sleep(2.0)
        started = time.monotonic()
        virtual_audio.play_into_mic(fixture("time_tokyo"), wait=False)
        speech_at = started + load_manifest()["time_tokyo"]["speech_start"] / 16000
        sayer.join(120)
        turn = iris.wait_turn(after=before, timeout=60)
        audio = rec.stop()
    assert said["interrupted"] and said["spoken"] != story, "the story was cut off"
    assert turn["trigger"] == "barge_in"
    assert "tokyo" in turn["transcript"].lower(), turn
    # the story stopped soon after the person started speaking (not before: no self-interruption)
    # The reply to Tokyo cannot start within 1.5 s of the question's start (it is 1.4 s long):
    # what is loud before then is the story.
    at = [(rec.wall_time(int(a * 16000)), rec.wall_time(int(b * 16000))) for a, b in loud_spans(audio)]
    story_end = max(end for start, end in at if start < speech_at + 1.5)
    stopped_after = story_end - speech_at
    assert -0.05 < stopped_after < 1.5, f"IRIS went quiet {stopped_after:.2f} s after the question began"
