"""Spoken time expressions: IRIS's parser against the parsers on the package registries.

A corpus of durations and moments as speech-to-text writes them ("a couple of minutes",
"half past six", "quarter to 8", "tomorrow morning", "tonight at eight"), each with the
value meant: seconds for a duration; for a moment the wall time meant from a fixed now,
Tuesday 2026-12-01 14:00 UTC (a part of the day alone, "tomorrow morning", is right
anywhere in that part), and a few phrases that name no time at all ("in a bit"), right
only when refused. Each parser reads every phrase; a duration phrase is read as a span
(``dateparser`` has none: it reads "in <phrase>" and the span is its distance from now),
a moment phrase as a moment. One rule is applied to every parser's answer alike: a clock
time said without a day is its next occurrence (am or pm when the words say neither), the
rule a reminder follows. Printed per parser: right, wrong (a value, not the one meant),
not understood (no value), and the median time of one parse after a warm-up.

Run from the repository root as ``python -m tools.bench.time_words`` (``--misses`` lists
each parser's misses). The candidates are not IRIS's dependencies: install them into a
throwaway venv and run the benchmark with its python (it needs only ``pytz`` of IRIS's)::

    python3.11 -m venv /tmp/timeparsers-venv
    /tmp/timeparsers-venv/bin/pip install dateparser timefhuman ctparse recognizers-text-suite \
        'emoji<1' pytz
    /tmp/timeparsers-venv/bin/python -m tools.bench.time_words

``recognizers-text-suite`` (Microsoft Recognizers-Text, last released 2019) needs
``emoji<1``. A parser that is not installed is reported as such.

Each candidate is read as kindly as its output allows: a range ("this evening", ctparse's
"noon" of 11-13) counts at its middle, recognizers-text's separate spans of one duration
("one hour", "fifteen minutes") are added up, and of its alternative readings (last Friday,
next Friday) the next one is taken.

Result (2026-12, 178 phrases: 60 durations and 118 moments, 7 of them naming no time):
IRIS won, so no candidate comes into the runtime or the requirements.

- IRIS (``iris_voice.timers.parse`` over ``spoken_times``): 178 right, 0.1 ms a parse.
  The corpus was written beside that reader, so this is its coverage, not a blind score;
  before it the same corpus got 124 right, 1 wrong, 53 not understood ("a couple of
  minutes", "half past six", "quarter to 8", "tomorrow morning", "friday at noon").
- recognizers-text (Microsoft Recognizers-Text, 2019): 143 right, 24 wrong, 11 not
  understood, 10-25 ms. The best candidate: it knows "half past six" and "quarter to 8"
  (so does ctparse), but "a couple of" is 3 to it, "ten to five", "twenty past nine", "seven oh five", "in
  half an hour" and "in a minute and a half" are unread, "a quarter of an hour" is an hour,
  and it needs ``emoji<1``.
- ctparse (2022): 110 right, 60 wrong, 8 not understood, 4 ms. Spans in minutes at the
  finest: "90 seconds" and "five mins" come back as moments, "an hour and a half" as an
  hour, "seven thirty" as 7:00, "a couple of minutes" as a weekday.
- dateparser: 96 right, 12 wrong, 70 not understood, 1 ms. Written dates, not speech:
  no "half past", "quarter to", "seven thirty", "a couple of", "an hour and a half";
  "tonight at eight" and "tomorrow at 9" keep the present time of day.
- timefhuman: 95 right, 42 wrong, 41 not understood, 0.2 ms. No "half past", "quarter
  to", "a couple of"; "an hour and a half" and "half an hour" are an hour.

None is right on the forms the issue names, and each would bring its dependencies into an
offline daemon; IRIS's reader is about 130 lines of its own.
"""

from __future__ import annotations

import argparse
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from typing import Any

from tools.bench.stats import p50

NOW = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
"""The fixed present: Tuesday 2026-12-01 14:00 UTC."""

H, M = 3600, 60
DURATIONS: list[tuple[str, float | None]] = [
    ("a couple of minutes", 2 * M), ("a couple minutes", 2 * M), ("couple of minutes", 2 * M),
    ("a couple of hours", 2 * H), ("a couple of seconds", 2), ("an hour and a half", 90 * M),
    ("a minute and a half", 90), ("half an hour", 30 * M), ("half a minute", 30),
    ("a quarter of an hour", 15 * M), ("quarter of an hour", 15 * M), ("a quarter hour", 15 * M),
    ("three quarters of an hour", 45 * M), ("an hour and a quarter", 75 * M),
    ("an hour and three quarters", 105 * M), ("two and a half minutes", 150),
    ("two and a half hours", 150 * M), ("one and a half hours", 90 * M), ("1.5 hours", 90 * M),
    ("ten minutes", 10 * M), ("10 minutes", 10 * M), ("five mins", 5 * M), ("5 min", 5 * M),
    ("45 mins", 45 * M), ("90 seconds", 90), ("ninety seconds", 90), ("forty five seconds", 45),
    ("forty-five minutes", 45 * M), ("twenty five minutes", 25 * M), ("an hour", H),
    ("a minute", M), ("one minute", M), ("thirty seconds", 30), ("seven minutes", 7 * M),
    ("twelve minutes", 12 * M), ("fifteen minutes", 15 * M), ("twenty minutes", 20 * M),
    ("eight minutes", 8 * M), ("3 hours", 3 * H), ("six hours", 6 * H),
    ("one hour and fifteen minutes", 75 * M), ("1 hour 15 minutes", 75 * M),
    ("an hour and ten minutes", 70 * M), ("2 hours and 30 minutes", 150 * M),
    ("an hour and forty five minutes", 105 * M), ("one minute thirty", 90),
    ("one hour fifteen", 75 * M), ("two hours fifteen", 135 * M),
    ("three minutes and twenty seconds", 200), ("a half hour", 30 * M), ("a day", 24 * H),
    ("two days", 48 * H), ("a hundred seconds", 100), ("one hundred and twenty seconds", 120),
    ("four minutes thirty seconds", 270), ("for ten minutes", 10 * M), ("about twenty minutes", 20 * M),
    # no duration said: right only when refused
    ("a little while", None), ("a bit", None), ("a while", None),
]  # fmt: skip

_D = {"today": date(2026, 12, 1), "tomorrow": date(2026, 12, 2)}
Expected = tuple[datetime, datetime] | None
"""When a moment is right: from the first to the second (the same for a clock time)."""


def _at(when: str) -> tuple[datetime, datetime]:
    """An exact moment: "today 18:30", "tomorrow 9:00", "12-04 17:00", "today 14:01:30"."""
    day, clock = when.split()
    on = _D[day] if day in _D else date(2026, int(day[:2]), int(day[3:]))
    t = datetime.combine(on, dtime(*map(int, clock.split(":"))), UTC)
    return t, t


def _between(day: str, start: str, end: str) -> tuple[datetime, datetime]:
    """A part of the day: right anywhere from ``start`` to ``end`` (24:00 is midnight after)."""
    lo, hi = _at(f"{day} {start}")[0], _at(f"{day} 00:00")[0] + timedelta(hours=int(end[:2]))
    return lo, hi + timedelta(minutes=int(end[3:]))


MOMENTS: list[tuple[str, Expected]] = [
    # clock idioms
    ("half past six", _at("today 18:30")), ("half past 6", _at("today 18:30")),
    ("at half past six", _at("today 18:30")), ("half past eleven", _at("today 23:30")),
    ("quarter to 8", _at("today 19:45")), ("quarter to eight", _at("today 19:45")),
    ("a quarter past seven", _at("today 19:15")), ("quarter past 3", _at("today 15:15")),
    ("ten to five", _at("today 16:50")), ("at five to six", _at("today 17:55")),
    ("twenty past nine in the evening", _at("today 21:20")), ("twenty past nine", _at("today 21:20")),
    ("five past four", _at("today 16:05")), ("twenty five to four", _at("today 15:35")),
    ("ten past ten", _at("today 22:10")), ("10 minutes past 6", _at("today 18:10")),
    ("half past seven in the morning", _at("tomorrow 07:30")),
    ("quarter to nine tomorrow morning", _at("tomorrow 08:45")),
    ("ten past eight tomorrow morning", _at("tomorrow 08:10")),
    ("at quarter past six in the evening", _at("today 18:15")),
    ("twenty to seven tonight", _at("today 18:40")), ("tonight at half past eight", _at("today 20:30")),
    ("tomorrow at half past seven", _at("tomorrow 07:30")), ("quarter to midnight", _at("today 23:45")),
    ("half past midnight", _at("tomorrow 00:30")),
    # noon, midnight
    ("noon", _at("tomorrow 12:00")), ("at noon", _at("tomorrow 12:00")), ("midday", _at("tomorrow 12:00")),
    ("midnight", _at("tomorrow 00:00")), ("at midnight", _at("tomorrow 00:00")),
    ("tomorrow at noon", _at("tomorrow 12:00")), ("twelve noon", _at("tomorrow 12:00")),
    # clock times
    ("at 6:30 pm", _at("today 18:30")), ("6:30 p.m.", _at("today 18:30")), ("at 6.30pm", _at("today 18:30")),
    ("6 30 pm", _at("today 18:30")), ("18:30", _at("today 18:30")), ("at 7 pm", _at("today 19:00")),
    ("seven pm", _at("today 19:00")), ("7 o'clock", _at("today 19:00")),
    ("seven o'clock in the evening", _at("today 19:00")), ("at eight", _at("today 20:00")),
    ("seven thirty", _at("today 19:30")), ("seven fifteen", _at("today 19:15")),
    ("seven forty five", _at("today 19:45")), ("seven oh five", _at("today 19:05")),
    ("at nine fifteen tonight", _at("today 21:15")), ("tonight at eight", _at("today 20:00")),
    ("at eight tonight", _at("today 20:00")), ("eight tonight", _at("today 20:00")),
    ("this evening at seven", _at("today 19:00")), ("at 3:45", _at("today 15:45")),
    ("3:45 pm", _at("today 15:45")), ("at 4", _at("today 16:00")), ("at 16:00", _at("today 16:00")),
    ("at 9:00 am", _at("tomorrow 09:00")), ("at 9 a.m.", _at("tomorrow 09:00")),
    ("at 11 am", _at("tomorrow 11:00")), ("at 2 pm", _at("tomorrow 14:00")),
    ("at 2:30 pm", _at("today 14:30")), ("five o'clock", _at("today 17:00")), ("at five", _at("today 17:00")),
    ("6 pm", _at("today 18:00")), ("at six", _at("today 18:00")),
    ("three in the afternoon", _at("today 15:00")), ("at 5 in the evening", _at("today 17:00")),
    ("eleven at night", _at("today 23:00")), ("10 at night", _at("today 22:00")),
    ("at 8 in the morning", _at("tomorrow 08:00")), ("six in the morning", _at("tomorrow 06:00")),
    # with a day
    ("tomorrow at 9", _at("tomorrow 09:00")), ("tomorrow at nine am", _at("tomorrow 09:00")),
    ("9 am tomorrow", _at("tomorrow 09:00")), ("tomorrow morning at 7", _at("tomorrow 07:00")),
    ("at 7 tomorrow morning", _at("tomorrow 07:00")), ("tomorrow evening at 6", _at("tomorrow 18:00")),
    ("tomorrow at 6:30 pm", _at("tomorrow 18:30")), ("eight pm tomorrow", _at("tomorrow 20:00")),
    ("nine thirty tomorrow", _at("tomorrow 09:30")),
    ("at nine thirty tomorrow morning", _at("tomorrow 09:30")),
    ("the day after tomorrow at 9 am", _at("12-03 09:00")), ("on friday at 5 pm", _at("12-04 17:00")),
    ("friday at noon", _at("12-04 12:00")), ("saturday at ten am", _at("12-05 10:00")),
    ("wednesday at half past ten", _at("tomorrow 10:30")),
    # a part of the day
    ("tomorrow morning", _between("tomorrow", "05:00", "12:00")),
    ("tomorrow afternoon", _between("tomorrow", "12:00", "18:00")),
    ("tomorrow evening", _between("tomorrow", "16:00", "22:00")),
    ("tomorrow night", _between("tomorrow", "17:00", "24:00")),
    ("in the morning", _between("tomorrow", "05:00", "12:00")),
    ("this afternoon", _between("today", "14:00", "18:00")),
    ("this evening", _between("today", "16:00", "22:00")),
    ("tonight", _between("today", "17:00", "24:00")), ("monday morning", _between("12-07", "05:00", "12:00")),
    # from now
    ("in 10 minutes", _at("today 14:10")), ("in ten minutes", _at("today 14:10")),
    ("in a minute and a half", _at("today 14:01:30")), ("in a couple of minutes", _at("today 14:02")),
    ("in half an hour", _at("today 14:30")), ("in an hour and a half", _at("today 15:30")),
    ("in an hour", _at("today 15:00")), ("in a couple of hours", _at("today 16:00")),
    ("in two hours", _at("today 16:00")), ("in 45 minutes", _at("today 14:45")),
    ("in twenty minutes", _at("today 14:20")), ("in a quarter of an hour", _at("today 14:15")),
    ("an hour from now", _at("today 15:00")), ("two hours from now", _at("today 16:00")),
    ("in 90 seconds", _at("today 14:01:30")), ("in three days", _at("12-04 14:00")),
    ("in a minute", _at("today 14:01")), ("in 5 mins", _at("today 14:05")),
    ("in thirty seconds", _at("today 14:00:30")), ("in an hour and ten minutes", _at("today 15:10")),
    # no moment said: right only when refused
    ("in a bit", None), ("later", None), ("soon", None), ("whenever", None),
]  # fmt: skip

# -- the rule applied to every parser's answer ----------------------------------------------
_DAY_OR_SPAN = re.compile(
    r"\b(?:today|tomorrow|tonight|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
    r"|\bin (?:a|an|half|\d|one|two|three|four|five|ten|twenty|thirty|forty|ninety)\b|\bfrom now\b"
)
_HALF_OF_DAY = re.compile(
    r"\b(?:am|pm|morning|afternoon|evening|night|noon|midday|midnight)\b|\b[ap]\.m\.|\d[ap]m"
)


def settle(text: str, moment: datetime) -> datetime:
    """A parser's answer as a reminder takes it: a clock time said without a day (or a span)
    is its next occurrence after ``NOW``, at either half of the day when the words name none."""
    if _DAY_OR_SPAN.search(text.lower()):
        return moment
    clock = moment.astimezone(UTC).time() if moment.tzinfo else moment.time()
    hours = [clock.hour] if _HALF_OF_DAY.search(text.lower()) else [clock.hour, (clock.hour + 12) % 24]
    options = [
        datetime.combine(NOW.date() + timedelta(days=d), clock.replace(hour=h), UTC)
        for d in (0, 1)
        for h in hours
    ]
    return min(t for t in options if t > NOW)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


MINUTE = timedelta(seconds=59)
"""How far before the moment meant an answer may be (a parser without seconds)."""
WRONG_KIND = math.nan
"""A duration parser's answer that is a moment, not a span (counted wrong)."""


@dataclass
class Parser:
    """A parser under test: a duration reader (seconds) and a moment reader, None for no value."""

    name: str
    duration: Callable[[str], float | None]
    moment: Callable[[str], datetime | None]
    note: str = ""


def _iris() -> Parser:
    from iris_voice.timers.parse import parse_duration, resolve_when

    def duration(text: str) -> float | None:
        try:
            return parse_duration(text)
        except ValueError:
            return None

    def moment(text: str) -> datetime | None:
        try:
            return resolve_when(text, NOW).moment
        except ValueError:
            return None

    return Parser("IRIS", duration, moment)


def _dateparser() -> Parser:
    import dateparser

    settings: Any = {
        "RELATIVE_BASE": NOW.replace(tzinfo=None),
        "PREFER_DATES_FROM": "future",
        "TIMEZONE": "UTC",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }

    def moment(text: str) -> datetime | None:
        got = dateparser.parse(text, languages=["en"], settings=settings)
        return _aware(got) if got else None

    def duration(text: str) -> float | None:  # no spans: "in <text>", less now
        got = moment(f"in {text}")
        return (got - NOW).total_seconds() if got else None

    return Parser("dateparser", duration, moment)


def _timefhuman() -> Parser:
    from timefhuman import tfhConfig, timefhuman

    config = tfhConfig(now=NOW.replace(tzinfo=None), infer_datetimes=False)

    def first(text: str) -> Any:
        got = timefhuman(text, config)
        got = got[0] if isinstance(got, list) and got else got
        return got[0] if isinstance(got, tuple) and got else got  # a range: its start

    def duration(text: str) -> float | None:
        got = first(text)
        if isinstance(got, timedelta):
            return got.total_seconds()
        return WRONG_KIND if got else None

    def moment(text: str) -> datetime | None:
        got = first(text)
        if isinstance(got, timedelta):
            return NOW + got
        if isinstance(got, datetime):
            return _aware(got)
        if isinstance(got, dtime):
            return datetime.combine(NOW.date(), got, UTC)
        if isinstance(got, date):
            return datetime.combine(got, dtime(0), UTC)
        return None

    return Parser("timefhuman", duration, moment)


def _ctparse() -> Parser:
    from ctparse import ctparse
    from ctparse.types import Duration, Interval, Time

    per_unit = {"minutes": M, "hours": H, "days": 24 * H, "nights": 24 * H, "weeks": 7 * 24 * H}

    def read(text: str) -> Any:
        got = ctparse(text, ts=NOW.replace(tzinfo=None), timeout=1.0)
        return got.resolution if got else None

    def duration(text: str) -> float | None:
        got = read(text)
        if isinstance(got, Duration):
            return float(got.value * per_unit.get(got.unit.value, math.nan))
        return WRONG_KIND if got is not None else None

    def moment(text: str) -> datetime | None:
        got = read(text)
        if isinstance(got, Duration):
            return NOW + timedelta(seconds=got.value * per_unit.get(got.unit.value, 0))
        if isinstance(got, Interval):
            got = got.start
        if not isinstance(got, Time):
            return None
        t = got.start  # a part of the day ("noon" is 11-13): its middle
        on = date(t.year, t.month, t.day) if t.year and t.month and t.day else NOW.date()
        middle = timedelta(hours=((got.end.hour or 0) - (t.hour or 0)) / 2 if got.hour is None else 0)
        return datetime.combine(on, dtime(t.hour or 0, t.minute or 0), UTC) + middle

    return Parser("ctparse", duration, moment)


def _recognizers() -> Parser:
    from recognizers_date_time import recognize_datetime
    from recognizers_text import Culture

    def found(text: str) -> list[tuple[str, list[dict[str, str]]]]:
        read = recognize_datetime(text, Culture.English, reference=NOW.replace(tzinfo=None))
        read.sort(key=lambda r: -len(r.text))  # the longest span read first
        return [(r.type_name.rsplit(".", 1)[-1], (r.resolution or {}).get("values", [])) for r in read]

    def read(text: str) -> tuple[str, list[dict[str, str]]] | None:
        return next(iter(found(text)), None)

    def duration(text: str) -> float | None:
        spans = found(text)  # "one hour and fifteen minutes" comes as two: added up
        if not spans:
            return None
        if any(kind != "duration" or not values for kind, values in spans):
            return WRONG_KIND
        return sum(float(values[0]["value"]) for _, values in spans)

    def when(value: dict[str, str]) -> datetime | None:
        if value.get("start") and value.get("end"):  # a range ("this evening"): its middle
            start, end = (when({"value": value[k]}) for k in ("start", "end"))
            return start + (end - start) / 2 if start and end else None
        raw = value.get("value") or value.get("start")
        if not raw:
            return None
        if re.fullmatch(r"\d\d:\d\d:\d\d", raw):
            return datetime.combine(NOW.date(), dtime.fromisoformat(raw), UTC)
        if re.fullmatch(r"\d{4}-\d\d-\d\d", raw):
            return datetime.combine(date.fromisoformat(raw), dtime(0), UTC)
        if re.fullmatch(r"\d+", raw):  # a duration read for a moment: from now
            return NOW + timedelta(seconds=int(raw))
        return datetime.fromisoformat(raw).replace(tzinfo=UTC)

    def moment(text: str) -> datetime | None:
        got = read(text)
        if got is None:
            return None
        # several values are the readings of an ambiguous time (6:30 and 18:30, last friday
        # and next friday): the next one
        options = [m for m in map(when, got[1]) if m is not None]
        coming = [m for m in options if settle(text, m) > NOW] or options
        return min(coming, key=lambda m: settle(text, m)) if coming else None

    return Parser("recognizers-text", duration, moment)


CANDIDATES = {
    "dateparser": _dateparser,
    "timefhuman": _timefhuman,
    "ctparse": _ctparse,
    "recognizers-text": _recognizers,
}


@dataclass
class Score:
    right: int = 0
    wrong: int = 0
    unread: int = 0
    times_ms: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)


def _timed(read: Callable[[str], Any], text: str, score: Score) -> Any:
    t0 = time.perf_counter()
    try:
        got = read(text)
    except Exception:  # a parser's crash is its "not understood"  # noqa: BLE001
        got = None
    score.times_ms.append((time.perf_counter() - t0) * 1000)
    return got


def _mark(score: Score, text: str, ok: bool, got: Any) -> None:
    if ok:
        score.right += 1
        return
    score.wrong += got is not None
    score.unread += got is None
    score.misses.append(f"{text!r} -> {'not understood' if got is None else got}")


def run(parser: Parser) -> Score:
    """Every phrase of the corpus through ``parser``, after one warm-up of each reader."""
    score = Score()
    parser.duration("ten minutes"), parser.moment("at 7 pm")  # load models, compile rules
    for text, seconds in DURATIONS:
        got = _timed(parser.duration, text, score)
        ok = got is None if seconds is None else got is not None and abs(got - seconds) < 1
        _mark(score, text, ok, None if got is None else "a moment" if math.isnan(got) else f"{got:g} s")
    for text, span in MOMENTS:
        got = _timed(parser.moment, text, score)
        at = settle(text, got) if got is not None else None
        ok = at is None if span is None else at is not None and span[0] - MINUTE <= at <= span[1]
        _mark(score, text, ok, None if at is None else f"{at:%m-%d %H:%M:%S}")
    return score


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--misses", action="store_true", help="list each parser's wrong and unread phrases")
    args = ap.parse_args()
    counts = f"{len(DURATIONS) + len(MOMENTS)} phrases ({len(DURATIONS)} durations, {len(MOMENTS)} moments)"
    print(f"{counts}, now {NOW:%a %Y-%m-%d %H:%M} UTC")
    print(f"{'parser':18} {'right':>6} {'wrong':>6} {'not understood':>15} {'median ms':>10}")
    scores: dict[str, Score] = {}
    for name, make in {"IRIS": _iris, **CANDIDATES}.items():
        try:
            parser = make()
        except ImportError as exc:
            print(f"{name:18} not installed ({exc.name}): see this module's docstring")
            continue
        scores[name] = s = run(parser)
        print(f"{name:18} {s.right:6} {s.wrong:6} {s.unread:15} {p50(s.times_ms):10.3f}")
    if args.misses:
        for name, s in scores.items():
            print(f"\n{name}: {len(s.misses)} missed")
            for miss in s.misses:
                print(f"  {miss}")


if __name__ == "__main__":
    main()
