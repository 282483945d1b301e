"""Is a benchmark answer right? One check per question of tools/testbed/fixtures.py ``BENCH``.

Checks are on meaning, not wording, so both a fast-path template and a model's sentence
can pass; they are strict on the figure that matters (the hour in Tokyo, 1081, 12.5),
so a fast answer with a wrong number counts as a wrong fast answer.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytz

ZONES = {
    "time_tokyo": "Asia/Tokyo",
    "time_london": "Europe/London",
    "time_new_york": "America/New_York",
    "time_berlin": "Europe/Berlin",
    "time_here": "UTC",  # the benchmark runs IRIS with tools.timezone = "UTC"
}
EXPECT = {
    "multiply": r"\b1,?081\b",
    "percent": r"\b12(\.0+)?\b",
    "sqrt": r"\b12(\.0+)?\b",
    "divide": r"\b12\.5\b|twelve point five|twelve and a half",
    "plus": r"\b42\b|forty.two",
    "pasta_timer": r"\b(8|eight)\b.*minute",
    "ten_minute_timer": r"\b(10|ten)\b.*minute",
    # 8 + 2 minutes: "added 2 minutes", or about ten left (a few seconds may have passed)
    "add_pasta": r"\b(2|two) minutes\b|\b(9|10|nine|ten) minutes?\b",  # without pasta_left_s
    "pause_pasta": r"\bpaus",
    "resume_pasta": r"\b(resum|unpaus|continu|running|restart)",
    "left_pasta": r"\b(9|10|nine|ten) minutes?\b",
    "list_timers": r"pasta",
    "less_pasta": r"\b(1|one) minute\b|\b(8|9|eight|nine) minutes?\b",
    "cancel_pasta": r"(cancel|stop|delet|remov)",
    "cancel_all": r"(cancel|stop|delet|remov)",
    "octopus": r"octop",
    "france": r"paris",
    "hello": r"\b(hello|hi)\b",
    "romeo": r"shakespeare",
    "planet": r"jupiter",
    "spider": r"\b(8|eight)\b",
    "boiling": r"\b100\b|hundred",
    "gracias": r"gracias",
    "mix_colors": r"green",
    "gold": r"\bau\b",
    "mona_lisa": r"leonardo|da vinci|vinci",
}
WRONG = {
    "list_timers": r"\bno timers?\b|don't have any",
    "cancel_pasta": r"\bno (pasta )?timer|couldn't|could not|not find",
    "cancel_all": r"\bno timers?\b|couldn't|could not|not find",
}
"""A reply that matches here is wrong even if it matched ``EXPECT`` ("no timer to cancel")."""


def hours_now(zone: str) -> set[int]:
    """The hour in ``zone`` now (and the next, for answers given across the turn of an hour),
    on the 12- and 24-hour clocks."""
    now = datetime.now(pytz.timezone(zone))
    hours = {now.hour, (now.hour + 1) % 24}
    return hours | {h % 12 or 12 for h in hours}


def _date_ok(name: str, text: str) -> bool:
    """Today's weekday (``day_today``) or month and day (``date_today``), in UTC."""
    today = datetime.now(pytz.utc)
    days = {today.strftime("%A").lower(), (today + timedelta(minutes=5)).strftime("%A").lower()}
    if name == "day_today":
        return any(d in text for d in days)
    month = today.strftime("%B").lower()
    return month in text and bool(re.search(rf"\b{today.day}(st|nd|rd|th)?\b", text))


def _reminder_ok(text: str) -> bool:
    """About calling mom, due in ten minutes: said as such, or as a clock time ~10 min away."""
    if not re.search(r"\b(mom|call)", text):
        return False
    if re.search(r"\b(10|ten) minutes\b", text):
        return True
    now = datetime.now(pytz.utc)
    for h, m in re.findall(r"\b(\d{1,2}):(\d{2})", text):
        for due in (now + timedelta(minutes=k) for k in range(8, 13)):
            if int(m) == due.minute and int(h) in {due.hour, due.hour % 12 or 12}:
                return True
    return False


SHIFT = {"left_pasta": 0, "add_pasta": 120, "less_pasta": -60}
"""Seconds the question changes the pasta timer by: the answer's "N minutes left" must be
the time left before the question plus this (within a minute)."""
_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}  # fmt: skip


def _spoken_left(text: str) -> list[float]:
    """Durations said as "7 minutes 50 seconds", "ten minutes", in seconds."""
    num = r"(\d+|" + "|".join(_WORDS) + r")"
    out = []
    for m, s in re.findall(rf"\b{num} minutes?(?:,? (?:and )?{num} seconds?)?", text):
        out.append(60 * int(_WORDS.get(m, m)) + (int(_WORDS.get(s, s)) if s else 0))
    return out


def correct(name: str, reply: str, pasta_left_s: float | None = None) -> bool:
    """True when ``reply`` answers question ``name`` correctly. ``pasta_left_s``: seconds
    left on the pasta timer before the question, when there was one (tools/bench/timer_state.py)."""
    text = reply.lower()
    if name in SHIFT and pasta_left_s is not None:
        want = pasta_left_s + SHIFT[name]
        said = _spoken_left(text)
        # "Added 2 minutes… it has 10 minutes left": the change itself may be said too.
        return any(abs(s - want) <= 60 for s in said) or (
            name != "left_pasta" and bool(said) and abs(said[0] - abs(SHIFT[name])) < 1 and len(said) == 1
        )
    if name in ZONES:
        said = {int(h) for h in re.findall(r"\b(\d{1,2})(?::\d{2}|\s*[ap]\.?m)", text)}
        return bool(said & hours_now(ZONES[name]))
    if name in ("date_today", "day_today"):
        return _date_ok(name, text)
    if name == "remind_mom":
        return _reminder_ok(text)
    pattern = EXPECT.get(name)
    if name in WRONG and re.search(WRONG[name], text):
        return False
    return bool(pattern and re.search(pattern, text))
