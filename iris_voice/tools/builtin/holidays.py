"""The date of a holiday people ask about: "what day is Christmas", "how many days until Halloween".

The model knows that Christmas is December 25 but not what weekday that is this year, nor
how far away it is; the clock knows today. So the next time each holiday comes is worked
out here, from today in the user's zone: fixed dates (New Year's Day, Valentine's Day,
Halloween, Christmas…), the ones that move by a rule (Thanksgiving: the fourth Thursday
of November; Mother's Day: the second Sunday of May, as in the US), and Easter (the
Gregorian computus). A holiday it does not know is a clear error for the model to read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from iris_voice.errors import ToolError
from iris_voice.tools.builtin.clock import day_words, local_timezone, now_in, resolve_timezone
from iris_voice.tools.builtin.context import ToolContext
from iris_voice.tools.intents import Action, Slots
from iris_voice.tools.registry import Tool, tool_from_function


def _easter(year: int) -> date:
    """Western Easter Sunday (the anonymous Gregorian algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    la = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 19 * la) // 433
    month = (h + la - 7 * m + 90) // 25
    return date(year, month, (h + la - 7 * m + 33 * month + 19) % 32)


def _nth(weekday: int, n: int, month: int) -> Callable[[int], date]:
    """The ``n``-th ``weekday`` (0 Monday) of ``month``; ``n`` = -1 the last."""

    def on(year: int) -> date:
        if n > 0:
            first = date(year, month, 1)
            return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
        last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
        return last - timedelta(days=(last.weekday() - weekday) % 7)

    return on


def _fixed(month: int, day: int) -> Callable[[int], date]:
    return lambda year: date(year, month, day)


HOLIDAYS: dict[str, tuple[str, Callable[[int], date]]] = {
    "new year's day": ("New Year's Day", _fixed(1, 1)),
    "valentine's day": ("Valentine's Day", _fixed(2, 14)),
    "st patrick's day": ("St. Patrick's Day", _fixed(3, 17)),
    "easter": ("Easter", _easter),
    "good friday": ("Good Friday", lambda y: _easter(y) - timedelta(days=2)),
    "mother's day": ("Mother's Day", _nth(6, 2, 5)),
    "memorial day": ("Memorial Day", _nth(0, -1, 5)),
    "father's day": ("Father's Day", _nth(6, 3, 6)),
    "independence day": ("Independence Day", _fixed(7, 4)),
    "labor day": ("Labor Day", _nth(0, 1, 9)),
    "halloween": ("Halloween", _fixed(10, 31)),
    "thanksgiving": ("Thanksgiving", _nth(3, 4, 11)),
    "christmas eve": ("Christmas Eve", _fixed(12, 24)),
    "christmas": ("Christmas", _fixed(12, 25)),
    "boxing day": ("Boxing Day", _fixed(12, 26)),
    "new year's eve": ("New Year's Eve", _fixed(12, 31)),
}
"""Holiday key → (its name as said, its date in a given year)."""
_SAID = {
    "new year": "new year's day", "new years": "new year's day", "new year's": "new year's day",
    "new years day": "new year's day", "valentines day": "valentine's day", "valentines": "valentine's day",
    "valentine's": "valentine's day", "saint patrick's day": "st patrick's day",
    "st patricks day": "st patrick's day", "st. patrick's day": "st patrick's day",
    "easter sunday": "easter", "mothers day": "mother's day", "fathers day": "father's day",
    "the fourth of july": "independence day", "fourth of july": "independence day",
    "july 4th": "independence day", "the 4th of july": "independence day", "4th of july": "independence day",
    "labour day": "labor day", "thanksgiving day": "thanksgiving", "christmas day": "christmas",
    "xmas": "christmas", "new years eve": "new year's eve", "hallowe'en": "halloween",
}  # fmt: skip
_LEAD = re.compile(r"^(?:the\s+)?", re.IGNORECASE)
_YEAR = re.compile(r"\s+(?:this|next)\s+year$", re.IGNORECASE)


def holiday_key(said: str) -> str | None:
    """The holiday ``said`` names ("Christmas Day", "the fourth of July"), or None."""
    text = " ".join(said.lower().replace("’", "'").strip(" .?!,").split())
    text = _YEAR.sub("", text)
    for candidate in (text, _LEAD.sub("", text)):
        if candidate in HOLIDAYS:
            return candidate
        if candidate in _SAID:
            return _SAID[candidate]
    return None


def next_date(key: str, today: date) -> date:
    """The next time holiday ``key`` comes, today included."""
    on = HOLIDAYS[key][1]
    day = on(today.year)
    return day if day >= today else on(today.year + 1)


def make_holiday_tool(default_timezone: str | None = None, now: Callable[[], datetime] | None = None) -> Tool:
    """The holiday dates as a registry ``Tool``, today read in ``default_timezone``."""
    zone = resolve_timezone(default_timezone) if default_timezone else None
    clock = now or (lambda: datetime.now(UTC))

    def get_holiday_date(
        holiday: Annotated[str, "The holiday, e.g. Christmas, Thanksgiving, Easter"],
    ) -> str:
        """The date of the next time a holiday comes, and how many days away it is."""
        key = holiday_key(holiday)
        if key is None:
            known = ", ".join(name for name, _on in HOLIDAYS.values())
            raise ToolError(f"unknown holiday {holiday!r}; known: {known}")
        today = now_in(zone or local_timezone(), clock()).date()
        day = next_date(key, today)
        days = (day - today).days
        name, when = HOLIDAYS[key][0], day_words(datetime(day.year, day.month, day.day))
        if days == 0:
            return f"{name} is today, {when}."
        return f"{name} is {'tomorrow' if days == 1 else f'in {days} days'}, on {when}."

    return tool_from_function(
        get_holiday_date,
        direct_return=True,
        words=WORDS,
        asks=ASKS,
        intents={"IrisHolidayDate": _holiday},
        read_only=True,
        on_demand=True,
    )


def _holiday(intent: str, slots: Slots) -> Action | None:
    """IrisHolidayDate: "what day is Christmas", "how many days until Halloween"."""
    key = holiday_key(str(slots.get("holiday", "")))
    if key is None:
        return None
    return Action(intent, "get_holiday_date", {"holiday": HOLIDAYS[key][0]})


WORDS = (
    r"christmas|xmas|easter|halloween|thanksgiving|valentine'?s|new year'?s|mother'?s day|father'?s day"
    r"|memorial day|labou?r day|independence day|fourth of july|boxing day|st\.? patrick'?s|good friday",
)
"""Words that suggest a holiday's date."""
ASKS = WORDS[0]
"""A request names a holiday: only then does retrieval show the tool."""

ORDER = 35
"""Place in the prompt, when shown: after the clock."""


def provide(ctx: ToolContext) -> list[Tool]:
    """The holiday dates, in the configured zone."""
    return [make_holiday_tool(ctx.timezone)]
