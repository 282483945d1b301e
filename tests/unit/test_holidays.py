"""A holiday's next date, from today in the user's zone, and the everyday sentences the fast
path answers with it."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from iris_voice.conversation.fastpath import IntentMatcher
from iris_voice.errors import ToolError
from iris_voice.tools.builtin.holidays import holiday_key, make_holiday_tool, next_date
from tests.support.fakes import builtin_registry


def ask(holiday: str, now: datetime) -> str:
    return make_holiday_tool("UTC", now=lambda: now).handler(holiday=holiday)


@pytest.mark.parametrize(
    ("key", "year", "day"),
    [
        ("easter", 2024, date(2024, 3, 31)),
        ("easter", 2025, date(2025, 4, 20)),
        ("easter", 2027, date(2027, 3, 28)),
        ("good friday", 2026, date(2026, 4, 3)),
        ("thanksgiving", 2026, date(2026, 11, 26)),
        ("mother's day", 2026, date(2026, 5, 10)),
        ("memorial day", 2026, date(2026, 5, 25)),
        ("labor day", 2026, date(2026, 9, 7)),
        ("christmas", 2026, date(2026, 12, 25)),
    ],
)
def test_each_holiday_falls_on_its_day(key, year, day):
    assert next_date(key, date(year, 1, 1)) == day


def test_the_next_time_it_comes_today_included():
    now = datetime(2026, 12, 4, 12, tzinfo=UTC)
    assert ask("Christmas", now) == "Christmas is in 21 days, on Friday, December 25, 2026."
    assert ask("thanksgiving", now) == "Thanksgiving is in 356 days, on Thursday, November 25, 2027."
    assert ask("Christmas Eve", datetime(2026, 12, 23, 9, tzinfo=UTC)).startswith("Christmas Eve is tomorrow")
    assert (
        ask("xmas", datetime(2026, 12, 25, 9, tzinfo=UTC)) == "Christmas is today, Friday, December 25, 2026."
    )


def test_today_is_the_users_day_not_utcs():
    late = datetime(2026, 12, 25, 3, tzinfo=UTC)  # still the 24th in New York
    said = make_holiday_tool("America/New_York", now=lambda: late).handler(holiday="Christmas")
    assert said.startswith("Christmas is tomorrow"), said


def test_a_holiday_it_does_not_know_is_a_clear_error():
    assert holiday_key("the fourth of July") == "independence day"
    assert holiday_key("my birthday") is None
    with pytest.raises(ToolError, match="unknown holiday 'my birthday'"):
        ask("my birthday", datetime(2026, 12, 4, tzinfo=UTC))


@pytest.fixture(scope="module")
def matcher() -> IntentMatcher:
    return IntentMatcher(builtin_registry().intents())


@pytest.mark.parametrize(
    ("text", "holiday"),
    [
        ("What day is Christmas?", "Christmas"),
        ("When is Thanksgiving?", "Thanksgiving"),
        ("How many days until Halloween?", "Halloween"),
        ("what day of the week is new year's day", "New Year's Day"),
        ("What day does the fourth of July fall on?", "Independence Day"),
    ],
)
def test_everyday_holiday_questions_take_the_fast_path(matcher, text, holiday):
    found = matcher.match(text)
    assert found is not None and found.action.tool == "get_holiday_date", text
    assert found.action.arguments == {"holiday": holiday}


@pytest.mark.parametrize("text", ["When is my birthday?", "What day is it?", "When is the pasta ready?"])
def test_other_when_questions_are_left_alone(matcher, text):
    found = matcher.match(text)
    assert found is None or found.action.tool != "get_holiday_date", (text, found)
