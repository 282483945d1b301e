"""JSON from a source IRIS does not control, read within bounds.

The control socket's requests, the daemon's replies as the CLI reads them and the
arguments of ``iris tools call`` all arrive as JSON text. Python's parser recurses once
per nesting level, so ``[[[[…`` a few thousand deep raises ``RecursionError`` (not a
``ValueError``), and a merely deep value can still break a later ``repr`` or ``dumps``.
``loads`` turns that into a ``ValueError`` like any other bad JSON, and refuses anything
that parsed but nests deeper than ``MAX_DEPTH``.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted; a control request needs two levels."""

LARGE = 64 << 10
"""Bytes above which a caller on the event loop should decode in a thread: parsing and
checking a hostile megabyte (hundreds of thousands of containers) takes a few hundred
milliseconds on a busy two-core machine."""


def nesting_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when the lists and dicts in a decoded JSON ``value`` nest more than ``limit`` deep.

    Walks one level at a time (no recursion, so any depth is safe; a level as one list
    keeps a hostile megabyte of containers to about a tenth of a second) and stops at the
    first level past the limit.
    """
    level = [value] if isinstance(value, (list, dict)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (list, dict))
        ]
    return False


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` that refuses nesting deeper than ``limit``; every failure a ``ValueError``."""
    too_deep = f"nested more than {limit} levels deep"
    try:
        value = json.loads(text)
    except RecursionError:  # the C parser gives up at the interpreter's recursion limit
        raise ValueError(too_deep) from None
    # Counting brackets is a cheap upper bound on the depth: a normal request stops here.
    opening = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
    if text.count(opening[0]) + text.count(opening[1]) > limit and nesting_exceeds(value, limit):
        raise ValueError(too_deep)
    return value


def loads_object(text: str | bytes, limit: int = MAX_DEPTH) -> dict[str, Any]:
    """``loads`` for text that must hold one JSON object."""
    value = loads(text, limit)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, not {type(value).__name__}")
    return value


def one_line(text: object, limit: int = 300) -> str:
    """``text`` safe to print as one line: control characters as spaces, at most ``limit`` characters.

    For messages that come from the other end of a socket and go to a terminal or the journal.
    """
    flat = "".join(c if c.isprintable() else " " for c in str(text)[: limit + 1])
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
