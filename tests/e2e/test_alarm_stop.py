"""A ringing timer silenced by a real person saying "stop" (tests/fixtures/human/mycroft_stop.wav)
into the virtual microphone, without the wake word, as on any smart speaker: in the quiet
between two rings and over the ring itself. The daemon runs in wake-word mode with the real
speech models; the timer is set through its fast path, so no language model is needed."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.support.voice_helpers import loud_spans
from tests.support.waiting import PATIENCE_S, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.speech, pytest.mark.timeout(600)]

STOP = Path(__file__).resolve().parents[1] / "fixtures" / "human" / "mycroft_stop.wav"
REPEAT_S = 4.0
"""``audio.alarm_repeat_s`` here: short, so a ring that was not dismissed shows soon."""
DRAIN_S = 0.5
"""Sound ending this soon after the turn is recorded is the cut ring leaving the speaker's
buffers, not a new ring."""


@pytest.fixture(scope="module")
def iris(virtual_audio, speech_manifest, tmp_path_factory):
    """The voice daemon on the virtual devices, in wake-word mode, with no model server."""
    from tools.testbed.voicebed import LiveDaemon

    work = tmp_path_factory.mktemp("iris-alarm")
    config = {"audio": {"alarm_repeat_s": REPEAT_S, "alarm_timeout_s": 120.0}, "tools": {"timezone": "UTC"}}
    with LiveDaemon(virtual_audio, "http://127.0.0.1:9", work, config) as daemon:
        yield daemon


def _ring(iris) -> int:
    """Set a 2-second timer by a typed request and wait until it rings; the turn count then."""
    trace = iris.request("ask", text="set a timer for 2 seconds")["trace"]
    assert trace["execution_path"] == "fast" and trace["tool_calls"][0]["ok"], trace
    count = iris.status()["turn_count"]
    wait_until(lambda: iris.status()["alarm_ringing"] is not None, f"the timer to ring:\n{iris.log_tail()}")
    return count


def _assert_dismissed(virtual_audio, iris, count: int) -> None:
    """ "stop" was heard as an alarm's stop, the alarm is over and does not ring again, and
    the timer is gone."""
    turn = iris.wait_turn(after=count, timeout=PATIENCE_S)
    assert re.findall(r"[a-z]+", turn["transcript"].lower()) == ["stop"], turn
    assert turn["trigger"] == "alarm" and turn["command"] == "stop", turn
    assert iris.status()["alarm_ringing"] is None
    rec = virtual_audio.record_speaker()
    time.sleep(REPEAT_S + 2.0)  # a ring would come within REPEAT_S: a window for nothing to happen
    audio = rec.stop()
    # What was already in the speaker's buffers when "stop" was heard may still reach the
    # recording at its start (a loaded run recorded 20 ms of the cut ring at 0.0 s); a ring
    # is the chime and a sentence, and the next one is due REPEAT_S after the last began.
    rang = [(start, end) for start, end in loud_spans(audio) if end > DRAIN_S]
    assert rang == [], f"the alarm rang again after 'stop' {rang}:\n{iris.log_tail()}"
    assert iris.request("timers")["timers"] == []


def test_stop_alone_between_two_rings_dismisses_the_timer(virtual_audio, iris):
    count = _ring(iris)
    iris.wait_state("idle", timeout=PATIENCE_S)  # the first ring has played; the next is due in REPEAT_S
    assert iris.status()["alarm_ringing"] is not None
    virtual_audio.play_into_mic(STOP)
    _assert_dismissed(virtual_audio, iris, count)


def test_stop_alone_over_the_ring_dismisses_the_timer(virtual_audio, iris):
    count = _ring(iris)
    iris.wait_state("speaking", timeout=PATIENCE_S)  # the chime and "Your timer is done." are playing
    virtual_audio.play_into_mic(STOP)
    _assert_dismissed(virtual_audio, iris, count)
