"""The timer state each benchmark question expects, made deterministic.

The benchmark's timer questions (tools/testbed/fixtures.py ``BENCH``, group ``timer``) follow one
cook's evening: set a pasta timer, a ten-minute timer, add two minutes to the pasta,
pause it, resume it, ask what is left, list, take a minute off, cancel it, cancel all.
Run in that order, each question finds the state the one before left. ``prepare`` puts
that state in place first, so a question run on its own (``--only``), or after a turn
that got it wrong, still meets the state its text assumes; in a correct full run it
changes nothing. IRIS and the naive pipeline each get their own ``TimerService``, so
neither sees the other's timers.
"""

from __future__ import annotations

import time

from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerRow

PASTA = "pasta"
PASTA_S = 8 * 60


def _pasta(rows: list[TimerRow]) -> TimerRow | None:
    return next((r for r in rows if r.kind == "timer" and r.label.lower() == PASTA), None)


async def pasta_left(timers: TimerService) -> float | None:
    """Seconds left on the pasta timer now (None without one): what the answers to "how
    much is left", "add two minutes" and "take one minute off" are checked against."""
    pasta = _pasta(await timers.list())
    return None if pasta is None else pasta.left(time.time())


async def prepare(name: str, timers: TimerService) -> str:
    """Make the state question ``name`` assumes; what was done ("" when nothing)."""
    rows = await timers.list()
    pasta = _pasta(rows)
    if name == "pasta_timer" and pasta is not None:  # "set a pasta timer": none yet
        await timers.cancel(str(pasta.id))
        return "cancelled the pasta timer left from before"
    needs_pasta = {"add_pasta", "pause_pasta", "resume_pasta", "left_pasta", "list_timers",
                   "less_pasta", "cancel_pasta"}  # fmt: skip
    if name in needs_pasta and pasta is None:
        pasta = await timers.set_timer(PASTA_S, PASTA)
        done = "set a pasta timer"
    else:
        done = ""
    if pasta is not None and name == "resume_pasta" and not pasta.paused:
        await timers.pause(str(pasta.id))
        return ", ".join(filter(None, [done, "paused it"]))
    if pasta is not None and name in needs_pasta - {"resume_pasta"} and pasta.paused:
        await timers.resume(str(pasta.id))
        return ", ".join(filter(None, [done, "resumed it"]))
    if name == "cancel_all" and not rows:
        await timers.set_timer(10 * 60, "")
        return "set a ten-minute timer"
    return done
