"""One stored timer or reminder, and the check every row read from disk passes first.

A row comes from a file that other processes, older versions, a crash mid-write or a
person with ``sqlite3`` may have written. SQLite's column types are only affinities
(``due_at = 'abc'`` is stored as text) and CHECK constraints can be switched off, so
``TimerRow`` is only ever built from values ``row_problem`` accepted: code above the
store can then do arithmetic, comparisons and ``datetime.fromtimestamp`` on them without
a guard of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iris_voice.timers.parse import MAX_DURATION

KINDS = ("timer", "reminder")
STATES = ("pending", "paused", "fired", "cancelled")

MAX_ORIGIN = 64
"""The longest satellite name a row may name as its origin."""
MAX_LABEL = 500
"""The longest label or reminder message, in characters (about half a minute of speech)."""
LATEST = 32_503_680_000.0
"""2999-12-31 (UTC): later timestamps are damage, and ``fromtimestamp`` stays far from year 9999."""
_SLACK = 1.0
"""Seconds of float rounding allowed on time left (due_at minus now, plus added time)."""


@dataclass(frozen=True)
class TimerRow:
    """One timer or reminder as stored."""

    id: int
    """Database id; never reused (AUTOINCREMENT), so "cancel 3" can't hit a newer timer."""
    kind: str
    """``timer`` or ``reminder``."""
    label: str
    """Timer label or reminder message; "" when none was given."""
    created_at: float
    """When it was set, as a Unix timestamp."""
    due_at: float | None
    """When it falls due, as a Unix timestamp; None while paused."""
    duration: float | None
    """Length in seconds for timers; None for reminders."""
    state: str
    """``pending``, ``paused``, ``fired`` or ``cancelled``."""
    fired_at: float | None
    """When it was announced, or None."""
    remaining: float | None = None
    """Seconds left while paused; None otherwise."""
    origin: str = ""
    """The satellite it was set from (its name), where it fires; "" for this machine."""

    @property
    def paused(self) -> bool:
        """True for a paused timer (it has seconds left but no due time)."""
        return self.state == "paused"

    def left(self, now: float) -> float:
        """Seconds until it falls due (frozen while paused), never below zero."""
        if self.due_at is None:
            return max(0.0, self.remaining or 0.0)
        return max(0.0, self.due_at - now)


def _number(value: object, low: float, high: float) -> bool:
    """A finite int or float (not a bool, not text) within ``low``..``high``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and low <= value <= high


def _moment(value: object) -> bool:
    """A Unix timestamp IRIS can speak: finite, from 1970 to 2999."""
    return _number(value, 0.0, LATEST)


def row_problem(values: tuple[object, ...]) -> str | None:
    """Why the raw column values of one row (``store._COLUMNS`` order) cannot be used, or None."""
    _id, kind, label, created_at, due_at, duration, state, fired_at, remaining, *rest = values
    origin = rest[0] if rest else ""
    if not isinstance(origin, str) or len(origin) > MAX_ORIGIN:
        return f"origin {origin!r} is not a satellite name"
    if kind not in KINDS:
        return f"kind {kind!r} is not one of {KINDS}"
    if state not in STATES:
        return f"state {state!r} is not one of {STATES}"
    if not isinstance(label, str):
        return f"label is {type(label).__name__}, not text"
    if len(label) > MAX_LABEL:
        return f"label is {len(label)} characters long (at most {MAX_LABEL})"
    if not _moment(created_at):
        return f"created_at {created_at!r} is not a time"
    if due_at is None and state == "pending":
        return "a running row has no due_at"
    if due_at is not None and not _moment(due_at):
        return f"due_at {due_at!r} is not a time"
    if duration is not None and not _number(duration, 0.0, MAX_DURATION + _SLACK):
        return f"duration {duration!r} is not a length of time"
    if fired_at is not None and not _moment(fired_at):
        return f"fired_at {fired_at!r} is not a time"
    if remaining is None and state == "paused":
        return "a paused row has no remaining"
    if remaining is not None and not _number(remaining, 0.0, MAX_DURATION + _SLACK):
        return f"remaining {remaining!r} is not a length of time"
    return None


def make_row(values: tuple[object, ...]) -> TimerRow:
    """The ``TimerRow`` of raw values ``row_problem`` accepted (numbers as floats)."""

    def num(v: object) -> float | None:
        return None if v is None else float(v)  # type: ignore[arg-type]  # checked numbers

    row_id, kind, label, created_at, due_at, duration, state, fired_at, remaining, *rest = values
    return TimerRow(
        int(row_id),  # type: ignore[call-overload]  # INTEGER PRIMARY KEY: always an int
        str(kind),
        str(label),
        float(created_at),  # type: ignore[arg-type]
        num(due_at),
        num(duration),
        str(state),
        num(fired_at),
        num(remaining),
        str(rest[0]) if rest else "",
    )
