"""Spoken time phrases, both ways: "an hour and a half" -> 5400.0, 5400.0 -> "1 hour 30 minutes".

Pure functions, no I/O except reading which time zone the system uses. Speech-to-text
writes numbers inconsistently ("8 minutes", "eight minutes", "8 min"), so parsing is
forgiving about form but strict about meaning: anything not fully understood is a
``ValueError`` whose message lists forms that work, because that message goes back to
the model (or the user) as the way to fix the request.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from datetime import time as dtime

import pytz

from iris_voice.timers.spoken_times import read_moment, tokens
from iris_voice.timers.wallclock import after_gap, occurrences, repeat_note

MAX_DURATION = 7 * 24 * 3600.0
"""The longest timer, in seconds; longer ones are almost certainly mishearings."""

DURATION_HELP = "Try '8 minutes', '1h30m', '90 seconds', 'half an hour' or '1:30'."
ORDINALS = {
    "first": 0,
    "1st": 0,
    "second": 1,
    "2nd": 1,
    "third": 2,
    "3rd": 2,
    "fourth": 3,
    "4th": 3,
    "fifth": 4,
}
"""A timer named by its place among those running, oldest first ("stop the first one")."""
WHEN_HELP = "Try 'in 10 minutes', 'at 7 pm', '19:30', 'tomorrow at 9' or 'noon'."

_UNITS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
}
_UNCLEAR = "I couldn't understand"
_FILLER = {"and", "&", ",", "plus"}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_FRACTIONS = {"half": 0.5, "quarter": 0.25}
_AND_A_PART = {"and a half": 0.5, "and a quarter": 0.25, "and 3 quarters": 0.75}


def _checked(seconds: float, text: object) -> float:
    """Apply the limits every duration must respect."""
    if math.isnan(seconds) or seconds <= 0:
        raise ValueError(f"The duration {text!r} must be longer than zero. {DURATION_HELP}")
    if seconds > MAX_DURATION:
        raise ValueError(f"The duration {text!r} is too long: timers can last at most 7 days.")
    return float(seconds)


def parse_duration(text: str | int | float) -> float:
    """Seconds in a spoken or written duration; ``ValueError`` saying what works otherwise.

    Accepts numbers (seconds), "300", "8 minutes", "8 min", "1h30m", "1 hour 30 minutes",
    "an hour and a half", "an hour and a quarter", "half an hour", "three quarters of an
    hour", "a couple of minutes", "90s", "2.5 hours", "1:30" (m:ss, or h:mm:ss), "five
    minutes", "twenty five seconds", "a hundred seconds" and a trailing bare number after
    a unit ("1 minute 30" is 90 s, as people say it). "A few minutes" is refused: no guess.
    """
    if isinstance(text, bool):  # bool is an int, but True seconds is a bug upstream
        raise ValueError(f"The duration {text!r} is not a duration. {DURATION_HELP}")
    if isinstance(text, int | float):
        return _checked(float(text), text)
    raw = str(text).strip().lower().rstrip(".!?").strip()
    if re.match(r"(-|minus\b|negative\b)", raw):
        raise ValueError(f"The duration {text!r} must be longer than zero. {DURATION_HELP}")
    raw = re.sub(r"^(for|about|around)\s+", "", raw)
    if m := re.fullmatch(r"(\d+):([0-5]\d)(?::([0-5]\d))?", raw):
        a, b, c = int(m[1]), int(m[2]), m[3]
        return _checked(a * 3600 + b * 60 + int(c) if c else a * 60 + b, text)
    total = _sum_tokens(tokens(raw), text)
    return _checked(total, text)


def _sum_tokens(toks: list[str], text: object) -> float:
    """Add up ``number unit`` pairs, with the few idioms people use around them."""
    bad = ValueError(f"{_UNCLEAR} the duration {text!r}. {DURATION_HELP}")
    total, i, last_unit, pairs = 0.0, 0, 0, 0

    def at(j: int) -> str:
        return toks[j] if j < len(toks) else ""

    def and_a_part(j: int) -> tuple[float, int]:
        """The fraction said at ``j`` ("and a half", "and a quarter", "and 3 quarters"), and its length."""
        value = _AND_A_PART.get(" ".join(toks[j : j + 3]), 0.0)
        return value, 3 if value else 0

    while i < len(toks):
        tok = toks[i]
        if tok in _FILLER:
            i += 1
            continue
        if tok in ("a", "an") and at(i + 1) in ("half", "quarter"):
            i += 1  # "a half hour", "a quarter of an hour"
            tok = toks[i]
        if tok in ("half", "quarter") or (tok == "3" and at(i + 1) == "quarters"):
            value, i = (0.75, i + 2) if tok == "3" else (_FRACTIONS[tok], i + 1)
            tok = "quarter"  # "three quarters of an hour": a fraction needs its unit
            i += at(i) == "of"
            i += at(i) in ("a", "an")
        elif tok in ("a", "an") and at(i + 1) in _UNITS:
            value, i = 1.0, i + 1  # "an hour"
        elif _NUMBER.fullmatch(tok):
            value, i = float(tok), i + 1
            part, skip = and_a_part(i)  # "one and a half hours"
            value, i = value + part, i + skip
        else:
            raise bad
        if at(i) in _UNITS:
            unit, i = _UNITS[toks[i]], i + 1
        elif i == len(toks) and pairs == 0 and tok not in ("half", "quarter", "a", "an"):
            unit = 1  # a bare number is seconds
        elif i == len(toks) and last_unit in (60, 3600):
            unit = last_unit // 60  # "1 minute 30": the next smaller unit
        else:
            raise bad
        part, skip = and_a_part(i)  # "an hour and a half", "an hour and a quarter"
        value, i = value + part, i + skip
        total, last_unit, pairs = total + value * unit, unit, pairs + 1
    if pairs == 0:
        raise bad
    return total


def plural(n: int, word: str) -> str:
    """Count for speech: "1 minute", "2 minutes" (regular plurals only)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def speak_list(items: list[str]) -> str:
    """Join for speech: "a", "a and b", "a, b, and c"."""
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + ", and " + items[-1]


def speak_duration(seconds: float) -> str:
    """A duration as it is said: "8 minutes", "1 hour 30 minutes", "45 seconds".

    Rounded to the second, or to the minute from one hour up, because "1 hour 29
    minutes 58 seconds" is noise when spoken.
    """
    if seconds < 0.5:
        return "less than a second"
    total = round(seconds)
    if total >= 3600:
        total = round(total / 60) * 60
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "day"), (hours, "hour"), (minutes, "minute"), (secs, "second")]
    return " ".join(plural(n, w) for n, w in parts if n)


def resolve_tz(tz_name: str | None) -> tzinfo:
    """The named IANA zone, or the system's zone (with its DST rules when it can be found)."""
    if tz_name:
        try:
            return pytz.timezone(tz_name)
        except pytz.UnknownTimeZoneError:
            raise ValueError(f"unknown time zone {tz_name!r} (e.g. Europe/Paris)") from None
    # a fixed UTC offset would put tomorrow's reminder an hour off across a DST change,
    # so prefer the zone's name: $TZ, then the /etc/localtime symlink
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    if os.path.islink("/etc/localtime"):
        candidates.append(os.path.realpath("/etc/localtime").partition("zoneinfo/")[2])
    for name in candidates:
        if name in pytz.all_timezones_set:
            return pytz.timezone(name)
    return datetime.now().astimezone().tzinfo or pytz.utc


@dataclass(frozen=True)
class When:
    """What a spoken time resolved to."""

    moment: datetime
    """The moment, aware, in the zone of the ``now`` it was resolved against."""
    skipped: datetime | None = None
    """The clock time asked for (naive) when it does not exist that night because the
    clocks go forward; ``moment`` is then the time after the jump (2:30 → 3:30)."""


def _at(day: date, hours: list[int], minute: int, tz: tzinfo) -> list[When]:
    """Every moment ``hour:minute`` (for each of ``hours``) happens on ``day`` in ``tz``:
    both on the night the clocks go back, the time after the jump in a skipped hour."""
    found = []
    for hour in hours:
        wall = datetime.combine(day, dtime(hour, minute))
        moments = occurrences(wall, tz)
        found += [When(m) for m in moments] or [When(after_gap(wall, tz), skipped=wall)]
    return found


def parse_when(text: str, now: datetime) -> datetime:
    """The moment a spoken time refers to, after ``now`` (aware), in ``now``'s zone.

    ``resolve_when(text, now).moment``; see there.
    """
    return resolve_when(text, now).moment


def resolve_when(text: str, now: datetime) -> When:
    """The moment a spoken time refers to, after ``now`` (aware), in ``now``'s zone.

    Understands "in 2 hours", "in a couple of minutes", "2 hours from now", "at 7 pm",
    "7:30", "seven thirty", "19:30", "half past 6", "quarter to 8", "ten past nine in the
    evening", "at 7:30 am tomorrow", "tomorrow at 9", "tonight at 8", "friday at noon",
    "noon" and "midnight"; a part of the day alone is its usual hour ("tomorrow morning"
    is 9:00, ``spoken_times.PARTS_OF_DAY``). A clock time already past today means
    tomorrow. Without am/pm an hour up to 12 means its next occurrence ("7:30" at 10:00
    is 19:30 today), except on a day named ("tomorrow", "friday"), where it is taken as
    written (morning). Across a daylight-saving change a clock time is its first
    occurrence still to come (the repeated hour happens twice), and a time the clocks
    skip becomes the time after the jump, with ``skipped`` set so the answer can say so.
    ``ValueError`` with the forms that work otherwise.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    bad = ValueError(f"{_UNCLEAR} the time {text!r}. {WHEN_HELP}")
    s = " ".join(str(text).lower().replace("a.m.", "am").replace("p.m.", "pm").split()).rstrip(".!?")
    if m := re.fullmatch(r"in (.+)|(.+) from now", s):
        try:
            seconds = parse_duration(m[1] or m[2])
            return When(datetime.fromtimestamp(now.timestamp() + seconds, now.tzinfo))
        except ValueError as exc:  # keep "too long"/"zero"; "in the evening" is no span
            if not str(exc).startswith(_UNCLEAR):
                raise
    said = read_moment(" ".join(tokens(re.sub(r"\bo'? ?clock\b", "", s).replace(":", " : "))))
    if said is None:
        raise bad
    # by timestamp: datetimes sharing a zoneinfo tzinfo compare by wall time, which makes
    # the second 2:30 of the night the clocks go back look earlier than 2:40
    at, today = now.timestamp(), now.astimezone(now.tzinfo).date()
    days = said.days or 0
    if said.weekday is not None:  # the next such day: today only while the time is to come
        days = (said.weekday - today.weekday()) % 7
    if days:  # a day named: the hour as said
        return min(_at(today + timedelta(days), said.hours[:1], said.minute, now.tzinfo), key=_stamp)
    upcoming = [w for w in _at(today, said.hours, said.minute, now.tzinfo) if w.moment.timestamp() > at]
    if not upcoming:  # past today: the next day (a week on for a weekday), at the hour as said
        later = timedelta(days=1 if said.weekday is None else 7)
        upcoming = _at(today + later, said.hours[:1], said.minute, now.tzinfo)
    return min(upcoming, key=_stamp)


def _stamp(when: When) -> float:
    return when.moment.timestamp()


def speak_clock(moment: datetime) -> str:
    """``7:00 PM``: the 12-hour clock people say, independent of the C locale."""
    return f"{moment.hour % 12 or 12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


def _day(moment: datetime, now: datetime) -> str:
    """The day of ``moment`` as said from ``now``: "", "tomorrow", "on Monday", "on March 29"."""
    days = (moment.date() - now.date()).days
    if days == 0:
        return ""
    if days in (1, -1):
        return "tomorrow" if days == 1 else "yesterday"
    if -7 < days < 7:
        return f"on {moment.strftime('%A')}"
    return f"on {moment.strftime('%B')} {moment.day}"


def speak_when(moment: datetime, now: datetime) -> str:
    """A moment relative to now: "at 7:00 PM", "tomorrow at 9:00 AM", "on Monday at 3:05 PM".

    A clock time that happens twice (the night the clocks go back) says which one:
    "at 2:30 AM, before the clocks go back". ``moment`` and ``now`` share a zone.
    """
    day = _day(moment, now)
    return f"{day + ' ' if day else ''}at {speak_clock(moment)}{repeat_note(moment, now)}"


def speak_skipped(wall: datetime, now: datetime) -> str:
    """Why a clock time was moved: "2:30 AM doesn't exist tonight because the clocks go forward".

    ``wall`` is the naive clock time asked for (``When.skipped``), ``now`` the aware present.
    """
    day = _day(wall, now.replace(tzinfo=None))
    if day in ("", "tomorrow") and (day == "" or now.hour >= 18):
        day = "tonight"  # the clocks change in the small hours: today's or the coming night
    return f"{speak_clock(wall)} doesn't exist {day} because the clocks go forward"
