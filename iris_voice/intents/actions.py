"""From a matched sentence to a tool call, and from the tool's result to the reply.

``interpret`` checks every slot before anything runs — a timer name of a few plain
words, a duration that parses, a place the clock knows, operands that are one number
each — and returns None at the first doubt, so the sentence goes to the language model.
The tools are the same native tools the model calls, run through the registry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from iris_voice.errors import ToolError
from iris_voice.intents.numbers import digits, duration_arg, number, seconds
from iris_voice.tools.clock import resolve_place
from iris_voice.tools.registry import spoken
from iris_voice.tools.timeparse import MAX_DURATION, parse_when

Slots = dict[str, Any]
MAX_NAME_WORDS = 3
MAX_MESSAGE_WORDS = 15
_ARTICLES = re.compile(r"^(?:the|my|a|an|our)\b\s*", re.IGNORECASE)
_DATE = re.compile(r" on (\w+day, \w+ \d{1,2}, \d{4})")
_POLITE = re.compile(r"(?:[\s,]+(?:please|thanks|thank you))+$", re.IGNORECASE)


def _words(value: Any) -> str:
    """A wildcard's words without edge punctuation or a trailing "please"."""
    text = " ".join(str(value or "").split()).strip(" .,!?")
    return _POLITE.sub("", text).strip(" .,!?")


@dataclass(frozen=True)
class Action:
    """What a matched sentence asks for: one tool call, and how to phrase its result."""

    intent: str
    """The intent's name, e.g. ``HassStartTimer`` or ``IrisCalculate``."""
    tool: str
    """The native tool to call."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Its arguments, as the model would pass them."""
    reply: str = "result"
    """``result`` (the tool's own sentence), ``date`` or ``calc``."""
    said: str = ""
    """For ``calc``: the question in words, "23 times 47"."""

    @property
    def key(self) -> str:
        """Two readings of a sentence agree when their keys are equal."""
        return json.dumps([self.tool, self.arguments, self.reply, self.said], sort_keys=True)


def _say(value: str) -> str:
    """A number for speech: "-41" → "minus 41"."""
    return "minus " + value[1:] if value.startswith("-") else value


def phrase(action: Action, result: str) -> str | None:
    """The reply for a tool's result; None if the result is not in the expected shape.

    Only side-effect-free tools (clock, calculator) have a phrasing that can fail, so a
    None never follows a timer that was set.
    """
    if action.reply == "date":
        m = _DATE.search(result)
        return f"Today is {m[1]}." if m else None
    if action.reply == "calc":
        if " = " not in result:
            return None
        value = result.rsplit(" = ", 1)[1].strip()
        said = _say(action.said)
        return f"{said[:1].upper()}{said[1:]} is {_say(value)}."
    return spoken(result)


def _name(value: Any) -> str | None:
    """A timer name as said ("the pasta" → "pasta", "" when none); None if doubtful."""
    text = _ARTICLES.sub("", _words(value))
    text = re.sub(r"\s*\btimers?$", "", text, flags=re.IGNORECASE)
    if re.search(r"\d", text) or len(text.split()) > MAX_NAME_WORDS:
        return None  # "10 minute" is a duration, a long phrase is not a name
    return text


def _hms(slots: Slots, prefix: str = "") -> float:
    """Seconds from Home Assistant's hours/minutes/seconds slots (0 when none)."""
    units = (("hours", 3600), ("minutes", 60), ("seconds", 1))
    return float(sum(float(slots.get(prefix + unit) or 0) * scale for unit, scale in units))


def _which(slots: Slots) -> str | None:
    """Which timer a sentence means: a name, a starting duration, or "" (the only one)."""
    if "name" in slots:
        return _name(slots["name"])
    start = _hms(slots, "start_")
    return duration_arg(start) if start else ""


def _with_which(args: dict[str, Any], which: str) -> dict[str, Any]:
    return {**args, "which": which} if which else args


def start_timer(intent: str, slots: Slots) -> Action | None:
    """HassStartTimer: "set a pasta timer for eight minutes"."""
    total = seconds(_words(slots["duration"])) if "duration" in slots else _hms(slots)
    name = _name(slots.get("name"))
    if not total or not 0 < total <= MAX_DURATION or name is None:
        return None
    args: dict[str, Any] = {"duration": duration_arg(total)}
    return Action(intent, "set_timer", {**args, "label": name} if name else args)


def change_timer(intent: str, slots: Slots) -> Action | None:
    """HassIncreaseTimer / HassDecreaseTimer: "add 2 minutes to the pasta timer"."""
    amount, which = _hms(slots), _which(slots)
    if not amount or which is None:
        return None
    sign = -1 if intent == "HassDecreaseTimer" else 1
    return Action(intent, "adjust_timer", _with_which({"duration": duration_arg(sign * amount)}, which))


def timer_action(tool: str, **fixed: Any) -> Callable[[str, Slots], Action | None]:
    """Cancel, pause, resume and status: a tool that takes ``which``."""

    def act(intent: str, slots: Slots) -> Action | None:
        which = _which(slots)
        if which is None:
            return None
        args = {"which": which} if tool == "cancel_timer" else _with_which({}, which)
        return Action(intent, tool, {**args, **fixed})

    return act


def time_in(intent: str, slots: Slots) -> Action | None:
    """IrisGetTimeIn: "what time is it in Tokyo" — only for a place the clock knows."""
    place = _words(slots.get("place"))
    try:
        resolve_place(place)
    except ToolError:
        return None
    return Action(intent, "get_current_time", {"timezone": place})


_OPS = {
    "times": ("{x} * {y}", "{x} times {y}"),
    "plus": ("{x} + {y}", "{x} plus {y}"),
    "minus": ("{x} - {y}", "{x} minus {y}"),
    "divided by": ("{x} / {y}", "{x} divided by {y}"),
    "percent of": ("{x}% of {y}", "{x} percent of {y}"),
    "to the power of": ("{x} ** {y}", "{x} to the power of {y}"),
    "squared": ("{x} ** 2", "{x} squared"),
    "cubed": ("{x} ** 3", "{x} cubed"),
    "square root": ("sqrt({x})", "the square root of {x}"),
}


def calculate(intent: str, slots: Slots) -> Action | None:
    """IrisCalculate: "what is twenty three times forty seven" — each operand one number."""
    op = _OPS.get(str(slots.get("op")))
    x = number(str(slots.get("x", "")))
    y = number(str(slots["y"])) if "y" in slots else "0"
    if op is None or x is None or y is None:
        return None
    expression, said = (part.format(x=x, y=y) for part in op)
    return Action(intent, "calculator", {"expression": expression}, "calc", said.replace(" -", " minus "))


def remind(intent: str, slots: Slots) -> Action | None:
    """IrisSetReminder: "remind me to call mom in two hours"."""
    message = _words(slots.get("message"))
    if "delay" in slots:
        when = "in " + digits(str(slots["delay"]))
    elif "clock" in slots:
        when = "at " + digits(str(slots["clock"]))
    else:
        when = "tomorrow at " + digits(str(slots.get("tomorrow", "")))
    when = when.strip(" .,!?")
    if not message or len(message.split()) > MAX_MESSAGE_WORDS:
        return None
    try:
        parse_when(when, datetime.now(UTC))  # the tool parses it again against its own clock
    except ValueError:
        return None
    return Action(intent, "set_reminder", {"when": when, "message": message})


HANDLERS: dict[str, Callable[[str, Slots], Action | None]] = {
    "HassGetCurrentTime": lambda i, s: Action(i, "get_current_time"),
    "HassGetCurrentDate": lambda i, s: Action(i, "get_current_time", reply="date"),
    "HassStartTimer": start_timer,
    "HassCancelTimer": timer_action("cancel_timer"),
    "HassCancelAllTimers": lambda i, s: Action(i, "cancel_timer", {"which": "all timers"}),
    "HassIncreaseTimer": change_timer,
    "HassDecreaseTimer": change_timer,
    "HassPauseTimer": timer_action("pause_timer"),
    "HassUnpauseTimer": timer_action("resume_timer"),
    "HassTimerStatus": timer_action("list_timers"),
    "IrisGetTimeIn": time_in,
    "IrisCalculate": calculate,
    "IrisSetReminder": remind,
}
"""One interpreter per intent the templates define."""


def interpret(intent: str, slots: Slots) -> Action | None:
    """The action a matched sentence asks for, or None when a slot leaves any doubt."""
    handler = HANDLERS.get(intent)
    return handler(intent, slots) if handler else None
