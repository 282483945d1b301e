"""The voice benchmark's judges and its timer set-up (tools/bench/checks.py, timer_state.py).

A benchmark that calls a wrong fast answer right hides exactly what the benchmark must count, so the
checks are tested on right and wrong replies of both the fast path's and a model's kind.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
import pytz

from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerStore
from tools.bench.checks import correct, hours_now
from tools.bench.timer_state import pasta_left, prepare
from tools.testbed.fixtures import BENCH


def test_every_benchmark_question_has_a_check():
    for name in BENCH:
        assert not correct(name, "I am not sure."), name  # a non-answer is never right


@pytest.mark.parametrize(
    ("name", "right", "wrong"),
    [
        ("multiply", "23 times 47 is 1081.", "23 times 47 is 1071."),
        ("divide", "100 divided by 8 is 12.5.", "100 divided by 8 is 12."),
        ("plus", "17 plus 25 is 42.", "17 plus 25 is 32."),
        ("percent", "15 percent of 80 is 12.", "15 percent of 80 is 1200."),
        ("pasta_timer", "Pasta timer set for 8 minutes.", "Pasta timer set for 18 minutes."),
        ("cancel_all", "Cancelled the timer for 10 minutes.", "There are no timers to cancel."),
        ("list_timers", "You have 2 timers: pasta with 9 minutes left and …", "You have no timers."),
        ("romeo", "William Shakespeare", "Christopher Marlowe"),
    ],
)
def test_checks_tell_right_from_wrong(name, right, wrong):
    assert correct(name, right)
    assert not correct(name, wrong)


def test_time_in_a_place_must_say_the_hour_there():
    hour = datetime.now(pytz.timezone("Asia/Tokyo")).hour
    assert correct("time_tokyo", f"It is {hour % 12 or 12}:05 {'AM' if hour < 12 else 'PM'} in Tokyo.")
    wrong = next(h for h in range(1, 13) if h not in hours_now("Asia/Tokyo"))
    assert not correct("time_tokyo", f"It is {wrong}:05 PM in Tokyo.")


def test_a_reminder_must_be_due_in_about_ten_minutes():
    due = datetime.now(pytz.utc) + timedelta(minutes=10)
    assert correct("remind_mom", f"I'll remind you to call mom at {due.hour % 12 or 12}:{due.minute:02d} PM.")
    late = due + timedelta(hours=2, minutes=7)
    said = f"{late.hour % 12 or 12}:{late.minute:02d}"
    assert not correct("remind_mom", f"I'll remind you to call mom at {said}.")


def test_time_left_is_checked_against_the_timer_itself():
    assert correct("left_pasta", "The pasta timer has 7 minutes 50 seconds left.", pasta_left_s=475)
    assert not correct("left_pasta", "The pasta timer has 10 minutes left.", pasta_left_s=475)
    # 8 minutes left, plus two: "added 2 minutes … 10 minutes left" right, "4 minutes left" wrong
    assert correct("add_pasta", "Added 2 minutes to the pasta timer. It has 9 minutes 58 seconds left.", 480)
    assert not correct("add_pasta", "It has 4 minutes left.", 480)
    assert correct("less_pasta", "Took one minute off. It has seven minutes left.", 480)


async def test_prepare_makes_the_state_each_timer_question_assumes(tmp_path: Path):
    timers = TimerService(TimerStore(tmp_path / "t.db"), lambda e: None)
    assert await prepare("pause_pasta", timers) == "set a pasta timer"
    assert 470 < (await pasta_left(timers) or 0) <= 480
    assert await prepare("pause_pasta", timers) == ""  # already there: nothing to do
    assert await prepare("resume_pasta", timers) == "paused it"
    assert await prepare("left_pasta", timers) == "resumed it"
    assert await prepare("pasta_timer", timers) == "cancelled the pasta timer left from before"
    assert await pasta_left(timers) is None
    assert await prepare("cancel_all", timers) == "set a ten-minute timer"
