"""The timer and reminder tools the model (and the intent fast path) call.

Each returns one or two complete spoken sentences, so they are ``direct_return`` tools:
their answer can be spoken without a second model round. Descriptions stay short:
every token of a tool definition is paid on each turn by a 1.5B model.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from iris_voice.errors import ToolError
from iris_voice.tools.registry import Tool, tool_from_function
from iris_voice.tools.timeparse import (
    parse_duration,
    parse_when,
    plural,
    resolve_tz,
    speak_duration,
    speak_list,
    speak_when,
)
from iris_voice.tools.timers import TimerRow, TimerService, cap, noun

_MINUS = re.compile(r"^\s*(?:-|minus\b|less\b|remove\b|take\b)\s*", re.IGNORECASE)


def _clean_label(label: str | None) -> str:
    """Turn "the pasta timer" into "pasta": the sentences add "the" and "timer" themselves."""
    text = " ".join((label or "").split()).rstrip(".!?")
    text = re.sub(r"^(?:the|a|an|my)\s+", "", text, flags=re.IGNORECASE)
    return re.sub(r"\s*\btimer$", "", text, flags=re.IGNORECASE)


def _clean_message(message: str) -> str:
    """Turn "to call mom." into "call mom": the confirmation says "to" itself."""
    text = " ".join(message.split()).rstrip(".!?")
    return re.sub(r"^(?:remind me to|remind me|to)\s+", "", text, flags=re.IGNORECASE)


def _signed_seconds(duration: str) -> float:
    """Seconds in "2 minutes" (positive) or "-2 minutes" / "minus 2 minutes" (negative)."""
    text, sign = str(duration), 1.0
    if m := _MINUS.match(text):
        text, sign = text[m.end() :], -1.0
    try:
        return sign * parse_duration(text)
    except ValueError as exc:
        raise ToolError(str(exc)) from None


def _count(rows: list[TimerRow]) -> str:
    return plural(len(rows), "timer")


def _paused_or_resumed(
    verb: str, state: str, done: list[TimerRow], already: list[TimerRow], now: float
) -> str:
    """The spoken answer of pause_timer ("Paused", "paused") or resume_timer ("Resumed", "running")."""
    if len(done) == 1:
        return f"{verb} {noun(done[0])} with {speak_duration(done[0].left(now))} left."
    if done:
        return f"{verb} {_count(done)}."
    if len(already) == 1:
        return cap(f"{noun(already[0])} is already {state}.")
    return f"Those timers are already {state}." if already else "That timer has just gone off."


def make_timer_tools(service: TimerService, tz_name: str | None) -> list[Tool]:
    """``set_timer``, ``list_timers``, ``cancel_timer``, ``adjust_timer``, ``pause_timer``,
    ``resume_timer`` and ``set_reminder``, all ``direct_return``."""
    tz = resolve_tz(tz_name)

    async def set_timer(
        duration: Annotated[str, "e.g. '8 minutes'"],
        label: Annotated[str | None, "e.g. pasta"] = None,
    ) -> str:
        """Start a countdown timer."""
        try:
            seconds = parse_duration(duration)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        name = _clean_label(label)
        await service.set_timer(seconds, name)
        return f"{cap(f'{name} timer' if name else 'timer')} set for {speak_duration(seconds)}."

    async def list_timers(which: str | None = None) -> str:
        """List timers and reminders, or how long one has left."""
        now = service.clock.now()
        rows = await service.find(which) if which and which.strip() else await service.list()
        if len(rows) == 1 and which and which.strip():
            return service.status(rows[0], now)
        timers = [service.describe(r, now) for r in rows if r.kind == "timer"]
        reminders = [service.describe(r, now) for r in rows if r.kind == "reminder"]
        said = ["No timers are running."]
        if timers:
            said = [f"You have {plural(len(timers), 'timer')}: {speak_list(timers)}."]
        if reminders:
            said.append(f"You have {plural(len(reminders), 'reminder')}: {speak_list(reminders)}.")
        return " ".join(said)

    async def cancel_timer(which: Annotated[str, "number, label, 'all' or 'last'"]) -> str:
        """Cancel timers or reminders."""
        rows = await service.cancel(which)
        if not rows:
            return "Nothing was running, so nothing was cancelled."
        if len(rows) == 1:
            return f"Cancelled {noun(rows[0])}."
        counts = [plural(n, k) for k in ("timer", "reminder") if (n := sum(r.kind == k for r in rows))]
        return f"Cancelled {' and '.join(counts)}."

    async def adjust_timer(
        duration: Annotated[str, "e.g. '2 minutes' or '-2 minutes'"],
        which: str | None = None,
    ) -> str:
        """Add or take off minutes or seconds on a timer."""
        seconds = _signed_seconds(duration)
        rows = await service.add_time(which or "", seconds)
        amount = speak_duration(abs(seconds))
        if not rows:
            return "That timer has just gone off, so no time was changed."
        what = noun(rows[0]) if len(rows) == 1 else _count(rows)
        done = f"Added {amount} to {what}." if seconds > 0 else f"Took {amount} off {what}."
        if len(rows) == 1:
            done += f" It has {speak_duration(rows[0].left(service.clock.now()))} left."
        return done

    async def pause_timer(which: str | None = None) -> str:
        """Pause a timer."""
        done, already = await service.pause(which or "")
        return _paused_or_resumed("Paused", "paused", done, already, service.clock.now())

    async def resume_timer(which: str | None = None) -> str:
        """Resume a paused timer."""
        done, already = await service.resume(which or "")
        return _paused_or_resumed("Resumed", "running", done, already, service.clock.now())

    async def set_reminder(
        when: Annotated[str, "e.g. 'in 2 hours', 'tomorrow at 9'"],
        message: Annotated[str, "e.g. call mom"],
    ) -> str:
        """Remind the user at a time."""
        now = datetime.fromtimestamp(service.clock.now(), tz)
        try:
            moment = parse_when(when, now)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        text = _clean_message(message)
        if not text:
            raise ToolError("Say what the reminder is for, e.g. message='call mom'.")
        await service.set_reminder(moment.timestamp(), text)
        what = text if text.lower().startswith("about ") else f"to {text}"
        return f"I'll remind you {what} {speak_when(moment, now)}."

    tools = (set_timer, list_timers, cancel_timer, adjust_timer, pause_timer, resume_timer, set_reminder)
    return [tool_from_function(f, direct_return=True) for f in tools]
