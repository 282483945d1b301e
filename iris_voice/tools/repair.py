"""Argument repair driven by a tool's schema and the user's words: time zones.

MCP time tools want IANA zone names, and the 1.5B model writes what it read in the
description instead of what the user said: "Convert 17:00 Tokyo time to London time."
became ``convert_time(source_timezone="UTC", …)`` because the description says "use 'UTC'
… if no source timezone provided". Before such a call runs, each zone argument (a
parameter whose name says timezone or whose description says IANA) is checked against
the places the user named (capitalised words IRIS's clock knows):

- a value that names a place the user named stays, written as its IANA zone;
- a value the user did not name (the description's default, a wrong guess, a zone that
  does not exist) is replaced by the next place the user named that no zone argument has
  yet, in the order they were said;
- with no such place the value stays as the model wrote it (the server says what is wrong);
- a conversion's source is the place named next to the time the user stated: with both
  places right but swapped ("Convert 17:00 Tokyo time to London time." as London → Tokyo),
  the two are swapped back.

Only tools of MCP servers are repaired: the built-in clock reads cities itself.
"""

from __future__ import annotations

import re
from typing import Any

from iris_voice.errors import ToolError
from iris_voice.tools.builtin.clock import resolve_timezone
from iris_voice.tools.registry import Tool

# Runs of capitalised words ("New York", "Tokyo", "UK"): the user's places, as transcribed.
_CAPITALISED = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,2}")
_ZONE_PARAM = re.compile(r"time_?zone|\btz\b", re.IGNORECASE)
_SOURCE = re.compile(r"source|from", re.IGNORECASE)
_TARGET = re.compile(r"target|dest|(?:^|_)to(?:_|$)", re.IGNORECASE)
# A time stated in the request: "17:00", "9 am", "8 p.m.", "noon".
_CLOCK_TIME = re.compile(
    r"\b\d{1,2}(?:[:.]\d\d)?\s*(?:[ap]\.?m\b\.?)|\b\d{1,2}[:.]\d\d\b|\bnoon\b|\bmidnight\b", re.I
)


def zone_parameters(schema: Any) -> list[str]:
    """The parameters of ``schema`` that take a time zone, in schema order."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return []
    found = []
    for name, prop in props.items():
        desc = prop.get("description", "") if isinstance(prop, dict) else ""
        if _ZONE_PARAM.search(name) or (isinstance(desc, str) and "IANA" in desc):
            found.append(name)
    return found


def _zone(text: str) -> str | None:
    try:
        return resolve_timezone(text)
    except ToolError:
        return None


def _mentions(request: str) -> list[tuple[str, int, int]]:
    """Each place ``request`` names: its zone and where it was said (start, end)."""
    found: list[tuple[str, int, int]] = []
    for match in _CAPITALISED.finditer(request):
        words = list(re.finditer(r"\S+", match.group()))
        # The longest run that is a place: "New York" before "New"; "If" and "Convert" are none.
        i = 0
        while i < len(words):
            for j in range(len(words), i, -1):
                zone = _zone(" ".join(w.group() for w in words[i:j]).strip(".,'’"))
                if zone is not None:
                    found.append((zone, match.start() + words[i].start(), match.start() + words[j - 1].end()))
                    i = j
                    break
            else:
                i += 1
    return found


def named_zones(request: str) -> list[str]:
    """The zones of the places ``request`` names, in the order said (each once)."""
    return list(dict.fromkeys(zone for zone, _, _ in _mentions(request)))


def stated_source(request: str) -> str | None:
    """The zone of the place named nearest to the time ``request`` states ("17:00 Tokyo
    time", "when it's 9 am in London"): a conversion's source; None without a stated time."""
    time = _CLOCK_TIME.search(request)
    if time is None:
        return None

    def distance(mention: tuple[str, int, int]) -> int:
        _, start, end = mention
        return max(time.start() - end, start - time.end(), 0)

    mentions = _mentions(request)
    return min(mentions, key=distance)[0] if mentions else None


def asks_conversion(request: str) -> bool:
    """Whether ``request`` gives a time and two places ("If it's 8 am in New York, what time
    is it in Paris?"): a conversion, which a clock of the current time cannot answer."""
    return _CLOCK_TIME.search(request) is not None and len(named_zones(request)) >= 2


def _swap_source(fixed: dict[str, Any], params: list[str], request: str) -> dict[str, Any]:
    """``fixed`` with a conversion's source and target swapped back when the model wrote the
    two places the user named the wrong way round (see the module's doc)."""
    source = next((p for p in params if _SOURCE.search(p)), None)
    target = next((p for p in params if _TARGET.search(p)), None)
    meant = stated_source(request)
    if source is None or target is None or meant is None or fixed[target] != meant:
        return fixed
    if fixed[source] == meant or fixed[source] not in named_zones(request):
        return fixed
    return {**fixed, source: fixed[target], target: fixed[source]}


def repair_zones(tool: Tool, arguments: dict[str, Any], request: str) -> dict[str, Any]:
    """``arguments`` with their time zones grounded in ``request`` (see the module's doc)."""
    params = [p for p in zone_parameters(tool.spec.parameters) if isinstance(arguments.get(p), str)]
    if "server" not in tool.meta or not params:
        return arguments
    said = named_zones(request)
    fixed = dict(arguments)
    kept: list[str] = []
    wrong: list[str] = []
    for p in params:
        zone = _zone(arguments[p])
        if zone is not None and zone in said:
            fixed[p] = zone
            kept.append(zone)
        else:
            wrong.append(p)
    unused = [z for z in said if z not in kept]
    for p in wrong:
        if unused:
            fixed[p] = unused.pop(0)
    return _swap_source(fixed, params, request)
