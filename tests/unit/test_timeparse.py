"""Timer and reminder parsing: durations, moments ("at 7 pm", "tomorrow at noon"), and how
a duration is spoken."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
import pytz

from iris_voice.timers import parse as timeparse
from iris_voice.timers.parse import parse_duration, parse_when, speak_duration, speak_when

# --- parsing -------------------------------------------------------------------------------------

DURATIONS = [
    (300, 300),
    (2.5, 2.5),
    ("300", 300),
    ("8 minutes", 480),
    ("8 min", 480),
    ("8 mins", 480),
    ("8m", 480),
    ("1h30m", 5400),
    ("1 hour 30 minutes", 5400),
    ("1 hour and 30 minutes", 5400),
    ("an hour and a half", 5400),
    ("one and a half hours", 5400),
    ("half an hour", 1800),
    ("a half hour", 1800),
    ("a quarter of an hour", 900),
    ("90s", 90),
    ("90 seconds", 90),
    ("2.5 hours", 9000),
    ("1:30", 90),
    ("1:00:00", 3600),
    ("five minutes", 300),
    ("twenty five seconds", 25),
    ("twenty-five seconds", 25),
    ("an hour", 3600),
    ("a minute", 60),
    ("1 minute 30", 90),
    ("for 10 minutes.", 600),
    ("  10 Minutes ", 600),
    ("7 days", 7 * 86400),
]


@pytest.mark.parametrize(("text", "seconds"), DURATIONS)
def test_parse_duration(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (0, "longer than zero"),
        (-5, "longer than zero"),
        ("0 minutes", "longer than zero"),
        ("-5 minutes", "longer than zero"),
        ("minus 5 minutes", "longer than zero"),
        ("8 days", "at most 7 days"),
        (700000, "at most 7 days"),
        ("banana", "Try '8 minutes'"),
        ("", "Try '8 minutes'"),
        ("minutes", "Try '8 minutes'"),
        ("half", "Try '8 minutes'"),
        ("5 ms", "Try '8 minutes'"),
        ("3 hours ago", "Try '8 minutes'"),
        ("1:75", "Try '8 minutes'"),
        ("8 minutes pasta", "Try '8 minutes'"),
        (True, "Try '8 minutes'"),
        (float("nan"), "longer than zero"),
    ],
)
def test_parse_duration_refuses(text: str | float, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_duration(text)


PARIS = pytz.timezone("Europe/Paris")
NOW = PARIS.localize(datetime(2027, 1, 15, 15, 0))  # Friday 3:00 PM


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("in 2 hours", (15, 17, 0)),
        ("in 10 minutes", (15, 15, 10)),
        ("in an hour and a half", (15, 16, 30)),
        ("2 hours from now", (15, 17, 0)),
        ("at 7 pm", (15, 19, 0)),
        ("7pm", (15, 19, 0)),
        ("9 p.m.", (15, 21, 0)),
        ("7:30", (15, 19, 30)),  # the next 7:30 is this evening
        ("19:30", (15, 19, 30)),
        ("07:30", (16, 7, 30)),  # explicit 24-hour, already past today
        ("at 7:30 am tomorrow", (16, 7, 30)),
        ("tomorrow at 9", (16, 9, 0)),
        ("tomorrow at 9 pm", (16, 21, 0)),
        ("tomorrow morning at 7", (16, 7, 0)),
        ("at 7 tonight", (15, 19, 0)),
        ("at 10 o'clock", (15, 22, 0)),
        ("seven thirty pm", (15, 19, 30)),
        ("noon", (16, 12, 0)),  # past today -> tomorrow
        ("midnight", (16, 0, 0)),
        ("at 2 pm", (16, 14, 0)),  # past today -> tomorrow
        ("at 3", (16, 3, 0)),  # 3 AM passed, 3 PM is now: the next 3 o'clock is tomorrow night
        ("15:00", (16, 15, 0)),  # exactly now is not in the future
    ],
)
def test_parse_when(text: str, expected: tuple[int, int, int]) -> None:
    got = parse_when(text, NOW)
    assert got.tzinfo is not None
    assert (got.day, got.hour, got.minute) == expected
    assert got > NOW


def test_parse_when_noon_before_noon_is_today() -> None:
    morning = PARIS.localize(datetime(2027, 1, 15, 9, 0))
    assert parse_when("noon", morning) == PARIS.localize(datetime(2027, 1, 15, 12, 0))


def test_parse_when_respects_dst_with_pytz() -> None:
    # the night of 2027-03-28 Paris moves from +01:00 to +02:00
    before = PARIS.localize(datetime(2027, 3, 27, 20, 0))
    got = parse_when("tomorrow at 9", before)
    assert got.utcoffset() == timedelta(hours=2)
    assert got.timestamp() == datetime(2027, 3, 28, 7, 0, tzinfo=UTC).timestamp()
    later = parse_when("in 24 hours", before)
    assert later.timestamp() - before.timestamp() == 86400
    assert (later.hour, later.utcoffset()) == (21, timedelta(hours=2))


# The 2026 changes: Berlin goes 02:00 CET -> 03:00 CEST on March 29 (01:00 UTC) and back
# 03:00 CEST -> 02:00 CET on October 25 (01:00 UTC); New York 02:00 EST -> 03:00 EDT on
# March 8 (07:00 UTC) and 02:00 EDT -> 01:00 EST on November 1 (06:00 UTC).
DST_CASES = [
    # the hour repeated: the first occurrence still to come
    ("Europe/Berlin", (2026, 10, 25, 0, 10), "at 2:30", (2026, 10, 25, 0, 30), None),  # 02:10 CEST: 20 min
    (
        "Europe/Berlin",
        (2026, 10, 25, 0, 40),
        "at 2:30",
        (2026, 10, 25, 1, 30),
        None,
    ),  # 02:40 CEST: the CET one
    ("Europe/Berlin", (2026, 10, 25, 1, 10), "at 2:30", (2026, 10, 25, 1, 30), None),  # 02:10 CET: 20 min
    ("Europe/Berlin", (2026, 10, 24, 20, 0), "tomorrow at 2:30", (2026, 10, 25, 0, 30), None),
    ("America/New_York", (2026, 11, 1, 5, 10), "at 1:30", (2026, 11, 1, 5, 30), None),  # 01:10 EDT
    ("America/New_York", (2026, 11, 1, 5, 40), "1:30 am", (2026, 11, 1, 6, 30), None),  # 01:40 EDT: EST
    # the hour skipped: the time after the jump, and which time was asked for
    ("Europe/Berlin", (2026, 3, 29, 0, 50), "at 2:30", (2026, 3, 29, 1, 30), (2, 30)),  # 01:50 CET -> 3:30
    ("Europe/Berlin", (2026, 3, 28, 21, 0), "at 2:30", (2026, 3, 29, 1, 30), (2, 30)),  # Sat 22:00
    ("Europe/Berlin", (2026, 3, 28, 9, 0), "tomorrow at 2:15 am", (2026, 3, 29, 1, 15), (2, 15)),
    ("America/New_York", (2026, 3, 8, 6, 50), "at 2:30", (2026, 3, 8, 7, 30), (2, 30)),  # 01:50 EST -> 3:30
    # the moments around a change are untouched
    ("Europe/Berlin", (2026, 3, 29, 0, 50), "at 3:30", (2026, 3, 29, 1, 30), None),
    ("Europe/Berlin", (2026, 3, 29, 0, 50), "in 30 minutes", (2026, 3, 29, 1, 20), None),
]


@pytest.mark.parametrize("library", [pytz.timezone, ZoneInfo], ids=["pytz", "zoneinfo"])
@pytest.mark.parametrize(("zone", "now_utc", "text", "due_utc", "skipped"), DST_CASES)
def test_parse_when_across_daylight_saving_changes(library, zone, now_utc, text, due_utc, skipped) -> None:
    now = datetime(*now_utc, tzinfo=UTC).astimezone(library(zone))
    moment = parse_when(text, now)
    assert moment.timestamp() == datetime(*due_utc, tzinfo=UTC).timestamp()
    real = datetime.fromtimestamp(moment.timestamp(), library(zone))
    assert moment.replace(tzinfo=None) == real.replace(tzinfo=None)  # the clock it will show
    skip = timeparse.resolve_when(text, now).skipped  # what the answer must own up to
    assert (None if skip is None else (skip.hour, skip.minute)) == skipped


@pytest.mark.parametrize("library", [pytz.timezone, ZoneInfo], ids=["pytz", "zoneinfo"])
def test_speak_when_says_which_of_two_equal_clock_times(library) -> None:
    berlin = library("Europe/Berlin")
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC).astimezone(berlin)
    second = datetime(2026, 10, 25, 1, 30, tzinfo=UTC).astimezone(berlin)
    evening = datetime(2026, 10, 24, 20, 0, tzinfo=UTC).astimezone(berlin)
    assert speak_when(first, evening) == "tomorrow at 2:30 AM, before the clocks go back"
    assert speak_when(second, evening) == "tomorrow at 2:30 AM, after the clocks go back"
    after_change = datetime(2026, 10, 25, 1, 10, tzinfo=UTC).astimezone(berlin)  # 02:10 CET
    assert speak_when(second, after_change) == "at 2:30 AM, after the clocks went back"
    three = datetime(2026, 10, 25, 2, 0, tzinfo=UTC).astimezone(berlin)  # 3:00 CET happens once
    assert speak_when(three, evening) == "tomorrow at 3:00 AM"


def test_parse_when_with_fixed_offset_zone() -> None:
    now = datetime(2027, 1, 15, 15, 0, tzinfo=timezone(timedelta(hours=-5)))
    assert parse_when("at 7 pm", now) == now.replace(hour=19)


@pytest.mark.parametrize(
    "text", ["next tuesday", "at 25", "13 pm", "7:61", "tomorrow", "in pasta", "soon", ""]
)
def test_parse_when_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="Try 'in 10 minutes'"):
        parse_when(text, NOW)


def test_parse_when_keeps_range_errors_and_needs_aware_now() -> None:
    with pytest.raises(ValueError, match="at most 7 days"):
        parse_when("in 9 days", NOW)
    with pytest.raises(ValueError, match="aware"):
        parse_when("at 7 pm", datetime(2027, 1, 15, 15, 0))


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (480, "8 minutes"),
        (5400, "1 hour 30 minutes"),
        (45, "45 seconds"),
        (1, "1 second"),
        (460.4, "7 minutes 40 seconds"),
        (3600, "1 hour"),
        (5405, "1 hour 30 minutes"),  # seconds are noise past an hour
        (90061, "1 day 1 hour 1 minute"),
        (0.2, "less than a second"),
    ],
)
def test_speak_duration(seconds: float, said: str) -> None:
    assert speak_duration(seconds) == said
