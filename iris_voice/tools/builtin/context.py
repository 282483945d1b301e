"""What a built-in tool module gets to build its tools from."""

from __future__ import annotations

from dataclasses import dataclass

from iris_voice.timers.service import TimerService


@dataclass(frozen=True)
class ToolContext:
    """The shared services and settings the built-in tools close over."""

    timezone: str | None
    """``tools.timezone``: the user's zone for "what time is it" (None: the computer's)."""
    timers: TimerService
    """The timer service the timer tools store into (the daemon's, or a command's own)."""
