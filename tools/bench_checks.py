"""Is a benchmark answer right? One check per question of tools/fixtures.py ``BENCH``."""

from __future__ import annotations

import re
from datetime import datetime

import pytz

ZONES = {"time_tokyo": "Asia/Tokyo", "time_london": "Europe/London", "time_new_york": "America/New_York"}
EXPECT = {
    "multiply": r"\b1,?081\b",
    "percent": r"\b12(\.0+)?\b",
    "sqrt": r"\b12(\.0+)?\b",
    "pasta_timer": r"\b(8|eight)\b.*minute",
    "ten_minute_timer": r"\b(10|ten)\b.*minute",
    "list_timers": r"timer",
    "octopus": r"octop",
    "france": r"paris",
    "hello": r"\b(hello|hi)\b",
}


def hours_now(zone: str) -> set[int]:
    """The hour in ``zone`` now (and the next, for answers given across the turn of an hour),
    on the 12- and 24-hour clocks."""
    now = datetime.now(pytz.timezone(zone))
    hours = {now.hour, (now.hour + 1) % 24}
    return hours | {h % 12 or 12 for h in hours}


def correct(name: str, reply: str) -> bool:
    """True when ``reply`` answers question ``name`` correctly."""
    text = reply.lower()
    if name in ZONES:
        said = {int(h) for h in re.findall(r"\b(\d{1,2})(?::\d{2}|\s*[ap]\.?m)", text)}
        return bool(said & hours_now(ZONES[name]))
    pattern = EXPECT.get(name)
    return bool(pattern and re.search(pattern, text))
