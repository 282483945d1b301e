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
- with no such place the value stays as the model wrote it (the server says what is wrong).

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


def named_zones(request: str) -> list[str]:
    """The zones of the places ``request`` names, in the order said (each once)."""
    zones: list[str] = []
    for match in _CAPITALISED.finditer(request):
        words = match.group().split()
        # The longest run that is a place: "New York" before "New"; "If" and "Convert" are none.
        i = 0
        while i < len(words):
            for j in range(len(words), i, -1):
                zone = _zone(" ".join(words[i:j]).strip(".,'’"))
                if zone is not None:
                    if zone not in zones:
                        zones.append(zone)
                    i = j
                    break
            else:
                i += 1
    return zones


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
    return fixed
