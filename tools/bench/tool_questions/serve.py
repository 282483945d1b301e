"""The must-serve set: ordinary requests IRIS must answer, beside the sets it must refuse.

Each ``Chat`` is one conversation (a fresh one per chat, with ``timers`` running first);
each ``Say`` one turn of it and what a right answer does. Two halves written apart, from
different templates and topics: ``serve_dev`` for tuning, ``serve_held_out`` never used
for it. ``make bench-replies`` runs both sides (these and the must-refuse sets) in one run.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = (
    "how-to",
    "opinion",
    "role-play",
    "game",
    "translation",
    "story",
    "preference",
    "fact",
    "follow-up-timer",
    "follow-up-topic",
    "time-words",
)
"""The kinds of ordinary request the set covers."""


@dataclass(frozen=True)
class Say:
    """One turn and what a right answer to it does."""

    text: str
    """What the user says."""
    tools: tuple[str, ...] = ()
    """Tools the turn must call (each of them, in any order); empty: answered in words, and
    no tool with a side effect may run."""
    args: tuple[str, ...] = ()
    """Each item must occur in the calls' arguments as JSON (case-insensitive); ``a|b``: either."""
    says: tuple[str, ...] = ()
    """Each item must occur in the reply (case-insensitive); ``a|b``: either."""
    after: tuple[tuple[str, int], ...] | None = None
    """The timers and reminders running after the turn, as (label, seconds left ±20 %); a
    reminder's label is its message; seconds 0: there, whatever is left (a reminder at a
    clock time). An unnamed timer's label is "". None: not checked."""


@dataclass(frozen=True)
class Chat:
    """One conversation of the must-serve set."""

    kind: str
    """One of ``KINDS``."""
    turns: tuple[Say, ...]
    """Said in order, in one conversation."""
    timers: tuple[tuple[str, int], ...] = ()
    """Timers (label, seconds) running before the first turn."""
