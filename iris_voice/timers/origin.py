"""Where a timer rings: the origin of the turn that set it, and who may fire it.

A satellite's turn runs on the hub (``wyoming.hub``); the timer tools never learn about
satellites. The hub sets ``ORIGIN`` around a satellite's turn, ``TimerService`` stores it
on the row, and each process that fires timers says through a ``Hold`` which due rows it
fires now, which wait, and which are another process's.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable

from iris_voice.timers.rows import TimerRow

ORIGIN: contextvars.ContextVar[str] = contextvars.ContextVar("iris_timer_origin", default="")
"""Where the turn that sets a timer comes from: the hub (``wyoming.hub``) sets a satellite's
name around that satellite's turn, so the row remembers where to ring; "" = this machine."""

Hold = Callable[[TimerRow, float], float | None]
"""For a row due at ``now``: None to fire it now, or until when to keep it pending (its
satellite is away; ``math.inf``: never here, it is another process's to fire)."""


def local_only(row: TimerRow, now: float) -> float | None:
    """The ``Hold`` of a process without satellites: a satellite's timer is the hub's."""
    return math.inf if row.origin else None
