"""The clock tool: the current time here or in a place a person names.

People say "Tokyo", "the UK" or "new york", not ``Asia/Tokyo``, so names are resolved
in order: IANA zone (any case) → a short table of countries and abbreviations → a city
that is a zone's last component → a country known to pytz → a short table of big cities
that are not zone names → legacy pytz names. The sentence returned is good to speak
and ends with the zone and offset so the model can reason about it.
"""

from __future__ import annotations

import os
import re
import string
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Annotated

import pytz

from iris_voice.errors import ToolError
from iris_voice.tools.builtin.context import ToolContext
from iris_voice.tools.intents import Action, Slots, words
from iris_voice.tools.registry import Tool, describe, tool_from_function

# Countries (by ISO code) and abbreviations people use; checked before city names.
_ALIASES = {
    "us": "US", "usa": "US", "america": "US", "united states of america": "US",
    "uk": "GB", "britain": "GB", "great britain": "GB", "united kingdom": "GB", "england": "GB",
    "scotland": "GB", "wales": "GB", "northern ireland": "GB", "korea": "KR", "south korea": "KR",
    "north korea": "KP", "uae": "AE", "emirates": "AE", "holland": "NL", "burma": "MM",
    "czech republic": "CZ", "ivory coast": "CI", "utc": "UTC", "gmt": "GMT", "z": "UTC",
    "est": "America/New_York", "edt": "America/New_York", "eastern": "America/New_York",
    "cst": "America/Chicago", "cdt": "America/Chicago", "central": "America/Chicago",
    "mst": "America/Denver", "mdt": "America/Denver", "mountain": "America/Denver",
    "pst": "America/Los_Angeles", "pdt": "America/Los_Angeles", "pacific": "America/Los_Angeles",
}  # fmt: skip
# The zone where most people live, where pytz lists another first (Russia: Kaliningrad).
_MAIN_ZONE = {
    "RU": "Europe/Moscow", "BR": "America/Sao_Paulo", "AU": "Australia/Sydney",
    "CA": "America/Toronto", "UA": "Europe/Kyiv", "UZ": "Asia/Tashkent",
}  # fmt: skip
_COUNTRY_NAMES = {
    "US": "the United States", "GB": "the United Kingdom", "KR": "South Korea", "KP": "North Korea",
    "AE": "the United Arab Emirates", "NL": "the Netherlands", "CZ": "the Czech Republic",
}  # fmt: skip
# Big cities and regions that are not zone names; "|" separates names.
_CITIES = {
    "America/Los_Angeles": "san francisco|seattle|san diego|san jose|las vegas|portland|california",
    "America/New_York": "washington|washington dc|boston|miami|atlanta|philadelphia|new york city|nyc",
    "America/Chicago": "houston|dallas|austin|san antonio|minneapolis|texas",
    "America/Toronto": "montreal|ottawa|quebec",
    "Pacific/Honolulu": "hawaii",
    "America/Anchorage": "alaska",
    "America/Sao_Paulo": "rio|rio de janeiro|brasilia",
    "Asia/Shanghai": "beijing|shenzhen|guangzhou",
    "Asia/Kolkata": "mumbai|bombay|delhi|new delhi|bangalore|bengaluru|chennai|hyderabad",
    "Asia/Tokyo": "osaka|kyoto",
    "Europe/London": "manchester|birmingham|edinburgh|glasgow",
    "Europe/Berlin": "munich|frankfurt|hamburg|cologne",
    "Europe/Paris": "lyon|marseille",
    "Europe/Madrid": "barcelona|seville|valencia",
    "Europe/Rome": "milan|naples|florence|venice",
    "Europe/Zurich": "geneva|basel",
    "Europe/Moscow": "st petersburg|saint petersburg",
    "Asia/Jerusalem": "tel aviv",
    "Africa/Johannesburg": "cape town|pretoria",
}
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")  # fmt: skip


def _key(text: str) -> str:
    """Fold case, accents ("São" → "sao") and separators so spellings compare equal."""
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = re.sub(r"[.'’]", "", text.casefold().replace("_", " ").replace("-", " "))
    text = " ".join(text.split())
    return text.removeprefix("the ")


@cache
def _index() -> tuple[dict[str, str], ...]:
    """Lookup tables built once from pytz: zones, cities, legacy names, countries, big cities."""
    zones = {_key(z): z for z in pytz.common_timezones}
    # Only current "Area/City" names count as cities. Legacy links ("Japan",
    # "America/Montreal") come last, so a country or a big city wins over a link.
    cities = {_key(z.rsplit("/", 1)[-1]): z for z in reversed(pytz.common_timezones) if "/" in z}
    legacy = {_key(z): z for z in pytz.all_timezones}
    for zone in pytz.all_timezones:
        legacy.setdefault(_key(zone.rsplit("/", 1)[-1]), zone)
    countries: dict[str, str] = {}
    for code, name in pytz.country_names.items():
        countries.setdefault(_key(name), code)
        countries.setdefault(_key(re.sub(r"\s*\(.*\)", "", name).replace("&", "and")), code)
    big = {_key(city): zone for zone, names in _CITIES.items() for city in names.split("|")}
    return zones, cities, legacy, countries, big


@dataclass(frozen=True)
class Place:
    """A resolved place name."""

    zone: str
    """The IANA zone name, e.g. ``Asia/Tokyo``."""
    label: str
    """How to name the place in a sentence, e.g. ``Tokyo`` or ``the United States``."""
    country: str | None = None
    """ISO code when the name was a country, so a multi-zone country can be flagged."""


def _zone_city(zone: str) -> str:
    return zone.rsplit("/", 1)[-1].replace("_", " ")


def _country(code: str) -> Place:
    zone = _MAIN_ZONE.get(code) or pytz.country_timezones[code][0]
    name = _COUNTRY_NAMES.get(code) or re.sub(r"\s*\(.*\)", "", pytz.country_names[code])
    return Place(zone, name, code)


def _lookup(text: str) -> Place | None:
    zones, cities, legacy, countries, big = _index()
    key = _key(text)
    said = string.capwords(" ".join(text.split()))
    if key in zones:
        return Place(zones[key], _zone_city(zones[key]))
    if key in _ALIASES:
        value = _ALIASES[key]
        return _country(value) if len(value) == 2 else Place(value, _zone_city(value))
    if key in cities:
        return Place(cities[key], said)
    if key in countries:
        return _country(countries[key])
    if key in big:
        return Place(big[key], said)
    if key in legacy:  # "Hongkong", "Calcutta", "US/Eastern": valid, if dated, names
        return Place(legacy[key], _zone_city(legacy[key]) if "/" in text else said)
    return None


def resolve_place(name: str) -> Place:
    """Resolve a city, country, abbreviation or IANA zone; ``ToolError`` if unknown."""
    text = name.strip().strip("?!.")
    # "Paris, France" and "Portland, Oregon": try the whole, then each part.
    for candidate in [text, *text.split(",")] if "," in text else [text]:
        if candidate.strip() and (place := _lookup(candidate.strip())):
            return place
    raise ToolError(f"Unknown place '{name}'. Use a city, a country or an IANA zone such as Europe/Paris.")


def resolve_timezone(name: str) -> str:
    """The IANA zone name for a place a person would say ("new york" → America/New_York)."""
    return resolve_place(name).zone


def local_timezone(environ: Mapping[str, str] | None = None, etc: Path = Path("/etc")) -> str:
    """The machine's zone from ``TZ``, ``/etc/timezone`` or the ``/etc/localtime`` link; else UTC."""
    env = os.environ if environ is None else environ
    candidates = [env.get("TZ", "").lstrip(":")]
    try:
        candidates.append((etc / "timezone").read_text().strip())
    except OSError:
        pass
    try:
        candidates.append(os.readlink(etc / "localtime"))
    except OSError:
        pass
    for value in candidates:
        # "/usr/share/zoneinfo/posix/Europe/Berlin" → "Europe/Berlin"
        value = re.sub(r"^.*zoneinfo/((posix|right)/)?", "", value.strip())
        if value in pytz.all_timezones_set:
            return value
    return "UTC"


def now_in(zone_name: str, now: datetime | None = None) -> datetime:
    """The instant ``now`` (default: this moment; naive means UTC) as wall time in a zone."""
    now = now or datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(pytz.timezone(resolve_timezone(zone_name)))


def _several_zones(code: str, now: datetime) -> bool:
    """True if the country's zones disagree on the offset right now (US yes, Germany no)."""
    return len({now.astimezone(pytz.timezone(z)).utcoffset() for z in pytz.country_timezones[code]}) > 1


def describe_time(
    place: str | None = None, *, default_timezone: str | None = None, now: datetime | None = None
) -> str:
    """The spoken answer: "It is 3:05 PM on Saturday, November 22, 2025 in Tokyo (Asia/Tokyo, UTC+09:00)."

    With no place, the default zone (or the machine's) is used and no place is named.
    """
    now = now or datetime.now(UTC)
    if place and place.strip():
        found = resolve_place(place)
    else:
        found = Place(resolve_timezone(default_timezone) if default_timezone else local_timezone(), "")
    local = now_in(found.zone, now)
    where = f" in {found.label}" if found.label else ""
    # China keeps one clock; pytz's Asia/Urumqi (+06) is Xinjiang's unofficial time.
    if found.country not in (None, "CN") and _several_zones(found.country, local):
        where = f" in {_zone_city(found.zone)}, one of several time zones in {found.label}"
    offset = local.strftime("%z")
    note = f"({found.zone}, UTC{offset[:3]}:{offset[3:]})"
    return f"It is {clock_words(local)} on {day_words(local)}{where} {note}."


def clock_words(moment: datetime) -> str:
    """A wall time as people say it: "3:05 PM"."""
    return f"{moment.hour % 12 or 12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


def day_words(moment: datetime) -> str:
    """A date as people say it: "Saturday, November 22, 2025"."""
    return f"{_DAYS[moment.weekday()]}, {_MONTHS[moment.month - 1]} {moment.day}, {moment.year}"


def zone_city(zone: str) -> str:
    """The place an IANA zone is named after: "America/New_York" → "New York"."""
    return _zone_city(zone)


def get_current_time(
    timezone: Annotated[str | None, "City, country or IANA zone, e.g. Paris"] = None,
) -> str:
    """Get the current time and date in a city, country or time zone (default: here).

    This module-level version uses the machine's zone; ``make_clock_tool`` builds one
    with a configured default zone and an injectable clock.
    """
    return describe_time(timezone)


_DATE = re.compile(r" on (\w+day, \w+ \d{1,2}, \d{4})")

WORDS = (r"time|clock|hour|o'clock|date|day|today|tonight|tomorrow|week|timezone|zone",)
"""Words that suggest the clock may be needed (boost's "may need a tool" check)."""


# Words of a request that may want the clock, beyond ``WORDS``: times of day, calendar
# words, a clock time ("8:30"). A request without any, that names no place, asks something else.
_ASKS_TIME = re.compile(
    rf"\b(?:{WORDS[0]}|times|hours|days|yesterday|month|year|now|late|early|noon|midnight|morning"
    r"|afternoon|evening|night)\b|\d[:.]\d\d|\d\s*[ap]\.?m\b",  # "8 am", not "I am"
    re.IGNORECASE,
)
_MAX_PLACE_WORDS = 3  # "rio de janeiro", "new york city"
_WORDS_FIRST = frozenset(("us", "z", "est", "central", "eastern", "mountain", "pacific"))
UNASKED = "Not needed: this question is not about the time. Answer it from what you know, in words."
"""Why a clock call the request does not ask for is not run (the model reads it)."""


def places_said(request: str) -> set[str]:
    """The zones of the places ``request`` names, any case ("tokyo", "New York")."""
    words = re.findall(r"[\w'’.-]+", request)
    zones = set()
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + _MAX_PLACE_WORDS) + 1):
            run = " ".join(words[i:j]).strip(".'’")
            # "us" and "z" are words before they are places: only as written, "US".
            if run.lower() in _WORDS_FIRST and not run.isupper():
                continue
            if place := _lookup(run):
                zones.add(place.zone)
    return zones


async def clock_grounded(request: str, args: dict[str, object]) -> str | None:
    """None when ``request`` may want the clock (a time word, or it names the place asked
    for), else ``UNASKED``: "Who wrote Pride and Prejudice?" is no question for the time in
    London. The clock changes nothing, so the model hears why and answers in words."""
    if _ASKS_TIME.search(request):
        return None
    place = args.get("timezone")
    if isinstance(place, str) and place.strip():
        try:
            if resolve_timezone(place) in places_said(request):
                return None
        except ToolError:
            return None  # the clock itself says the place is unknown
    return UNASKED


def _date(result: str) -> str | None:
    m = _DATE.search(result)
    return f"Today is {m[1]}." if m else None


def _tomorrow(result: str) -> str | None:
    """ "Tomorrow is Friday, December 4, 2026." from the clock's answer for today."""
    m = _DATE.search(result)
    if not m:
        return None
    day = datetime.strptime(m[1], "%A, %B %d, %Y") + timedelta(days=1)
    return f"Tomorrow is {day:%A}, {day:%B} {day.day}, {day.year}."


def _time_in(intent: str, slots: Slots) -> Action | None:
    """IrisGetTimeIn: "what time is it in Tokyo" — only for a place the clock knows."""
    place = words(slots.get("place"))
    try:
        resolve_place(place)
    except ToolError:
        return None
    return Action(intent, "get_current_time", {"timezone": place})


INTENTS = {
    "HassGetCurrentTime": lambda i, s: Action(i, "get_current_time"),
    "HassGetCurrentDate": lambda i, s: Action(i, "get_current_time", reply="date", phrase=_date),
    "IrisGetDateTomorrow": lambda i, s: Action(i, "get_current_time", reply="tomorrow", phrase=_tomorrow),
    "IrisGetTimeIn": _time_in,
}
"""The fast-path intents the clock answers (templates: Home Assistant's and sentences/en.yaml)."""


def make_clock_tool(default_timezone: str | None = None, now: Callable[[], datetime] | None = None) -> Tool:
    """The clock as a registry ``Tool``; ``default_timezone`` None means the machine's zone.

    A configured zone is resolved here so a typo fails at startup, not mid-conversation.
    """
    if default_timezone:
        try:
            default_timezone = resolve_timezone(default_timezone)
        except ToolError as exc:
            raise ValueError(exc.message) from None
    clock = now or (lambda: datetime.now(UTC))

    def current_time(
        timezone: Annotated[str | None, "City, country or IANA zone, e.g. Paris"] = None,
    ) -> str:
        return describe_time(timezone, default_timezone=default_timezone, now=clock())

    return tool_from_function(
        current_time,
        name="get_current_time",
        description=describe(get_current_time),
        direct_return=True,  # "It is 3:05 PM on … in Tokyo." is the answer
        words=WORDS,
        intents=INTENTS,
        read_only=True,
        grounded=clock_grounded,
    )


ORDER = 30
"""Place in the prompt: last (see ``iris_voice.tools.builtin``)."""


def provide(ctx: ToolContext) -> list[Tool]:
    """The clock, in the configured zone."""
    return [make_clock_tool(ctx.timezone)]
