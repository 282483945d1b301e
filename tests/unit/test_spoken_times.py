"""Times as people say them: "a couple of minutes", "half past six", "quarter to 8",
"tomorrow morning", through the parser, the grounding checks and the fast path."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from iris_voice.conversation.fastpath import IntentMatcher
from iris_voice.timers.parse import parse_duration, resolve_when
from iris_voice.tools.builtin.grounding import moment_said, said_durations, said_moments
from iris_voice.tools.spoken import digits
from tests.support.fakes import builtin_registry

NOW = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)  # Tuesday 2:00 PM


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("a couple of minutes", 120),
        ("a couple minutes", 120),
        ("couple of hours", 7200),
        ("a minute and a half", 90),
        ("three quarters of an hour", 2700),
        ("an hour and a quarter", 4500),
        ("an hour and three quarters", 6300),
        ("a hundred seconds", 100),
        ("one hundred and twenty seconds", 120),
        ("two hundred seconds", 200),
        ("a couple of minutes and thirty seconds", 150),
    ],
)
def test_spoken_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    assert parse_duration(digits(text)) == seconds  # as the fast path and grounding see it


@pytest.mark.parametrize("text", ["a few minutes", "a while", "a couple", "quarters of an hour"])
def test_vague_durations_are_not_guessed(text: str) -> None:
    with pytest.raises(ValueError, match="Try '8 minutes'"):
        parse_duration(text)


MOMENTS = [
    ("half past six", at(1, 18, 30)),  # the next 6:30, as "at 6:30" is
    ("at half past 6", at(1, 18, 30)),
    ("quarter to 8", at(1, 19, 45)),
    ("a quarter past seven", at(1, 19, 15)),
    ("ten to five", at(1, 16, 50)),
    ("twenty five to four", at(1, 15, 35)),
    ("ten after nine", at(1, 21, 10)),
    ("10 minutes past 6", at(1, 18, 10)),
    ("twenty past nine in the evening", at(1, 21, 20)),
    ("half past seven in the morning", at(2, 7, 30)),
    ("quarter to nine tomorrow morning", at(2, 8, 45)),
    ("tomorrow at half past seven", at(2, 7, 30)),  # a day named: the hour as said
    ("quarter to midnight", at(1, 23, 45)),
    ("half past midnight", at(2, 0, 30)),
    ("quarter to 1", at(2, 0, 45)),  # 12:45 PM has passed
    ("quarter to 8 pm", at(1, 19, 45)),
    ("seven thirty", at(1, 19, 30)),
    ("seven oh five", at(1, 19, 5)),
    ("at 9 15 tonight", at(1, 21, 15)),
    ("tonight at eight", at(1, 20, 0)),
    ("eleven at night", at(1, 23, 0)),
    ("twelve noon", at(2, 12, 0)),
    ("tomorrow morning", at(2, 9, 0)),
    ("tomorrow afternoon", at(2, 15, 0)),
    ("tomorrow evening", at(2, 19, 0)),
    ("tomorrow at morning", at(2, 9, 0)),  # the fast path's "tomorrow at {tomorrow}"
    ("in the morning", at(2, 9, 0)),
    ("this afternoon", at(1, 15, 0)),
    ("tonight", at(1, 20, 0)),
    ("the day after tomorrow at 9 am", at(3, 9, 0)),
    ("on friday at 5 pm", at(4, 17, 0)),
    ("friday at noon", at(4, 12, 0)),
    ("monday morning", at(7, 9, 0)),
    ("tuesday at 3 pm", at(1, 15, 0)),  # today, still to come
    ("tuesday at 9 am", at(8, 9, 0)),  # today's has passed: a week on
    ("in a couple of minutes", at(1, 14, 2)),
    ("in a minute and a half", at(1, 14, 1, 30)),
    ("a couple of hours from now", at(1, 16, 0)),
    ("at 7 o clock", at(1, 19, 0)),
]


@pytest.mark.parametrize(("text", "expected"), MOMENTS)
def test_spoken_moments(text: str, expected: datetime) -> None:
    assert resolve_when(text, NOW).moment == expected
    assert resolve_when(digits(text), NOW).moment == expected


@pytest.mark.parametrize(
    "text",
    [
        "in a bit",
        "later",
        "soon",
        "half to six",  # no such time
        "quarter past 25",
        "70 past 6",
        "next friday at 5",  # which friday: asked, not guessed
        "tomorrow on friday",
        "this morning tonight",
        "past 6",
    ],
)
def test_unclear_moments_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="Try 'in 10 minutes'"):
        resolve_when(text, NOW)


def test_a_couple_of_minutes_is_a_duration_said() -> None:
    assert 120.0 in said_durations("Set a timer for a couple of minutes.")
    assert 2700.0 in said_durations("Set a timer for three quarters of an hour.")
    assert 4500.0 in said_durations("Start a timer for an hour and a quarter")
    assert said_durations("Pause the second timer.") == set()


def test_half_past_six_is_a_moment_said() -> None:
    request = "Remind me at half past six to call mom."
    assert at(1, 18, 30).timestamp() in said_moments(request, NOW)
    assert resolve_when("at 6:30", NOW).moment.timestamp() in said_moments(request, NOW)
    assert moment_said(request, NOW) == "at half past 6"
    assert at(1, 16, 50).timestamp() in said_moments("Remind me at ten to five to leave.", NOW)
    assert at(2, 9, 0).timestamp() in said_moments("Remind me tomorrow morning to water the plants.", NOW)
    assert at(4, 17, 0).timestamp() in said_moments("Remind me on Friday at 5 pm to pay rent.", NOW)
    assert said_moments("Turn the volume up.", NOW) == set()
    # a part of the day alone is no moment said: a reminder for "tonight" asks when
    assert said_moments("Book a table for two tonight.", NOW) == set()
    assert at(1, 20, 0).timestamp() in said_moments("Remind me at eight tonight to call mom.", NOW)


async def test_the_tools_run_for_the_spoken_forms() -> None:
    registry = builtin_registry()
    request = "Set a timer for a couple of minutes."
    result = await registry.call("set_timer", {"duration": "2 minutes"}, request=request)
    assert result.ok and result.result == "Timer set for 2 minutes.", result.result
    request = "Remind me at half past six to call mom."
    result = await registry.call("set_reminder", {"when": "6:30", "message": "call mom"}, request=request)
    assert result.ok and not result.refusal and "6:30" in result.result, result.result
    # the model's own time, when it is not the one said, is mended to the words
    request = "Remind me at quarter to eight to call mom."
    result = await registry.call("set_reminder", {"when": "at 8", "message": "call mom"}, request=request)
    assert result.ok and "7:45" in result.result, result.result


@pytest.mark.parametrize(
    ("text", "tool", "arguments"),
    [
        ("set a timer for a couple of minutes", "set_timer", {"duration": "120 seconds"}),
        (
            "set a tea timer for three quarters of an hour",
            "set_timer",
            {"duration": "2700 seconds", "label": "tea"},
        ),
        (
            "remind me at half past six to call mom",
            "set_reminder",
            {"when": "at half past 6", "message": "call mom"},
        ),
        (
            "remind me to call mom at quarter to eight",
            "set_reminder",
            {"when": "at quarter to 8", "message": "call mom"},
        ),
        (
            "remind me tomorrow morning to water the plants",
            "set_reminder",
            {"when": "tomorrow at morning", "message": "water the plants"},
        ),
    ],
)
def test_the_fast_path_takes_the_spoken_forms(text: str, tool: str, arguments: dict) -> None:
    match = IntentMatcher(builtin_registry().intents()).match(text)
    assert match is not None, text
    assert (match.action.tool, match.action.arguments) == (tool, arguments)
