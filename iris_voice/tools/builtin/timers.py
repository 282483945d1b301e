"""The timer and reminder tools the model (and the intent fast path) call.

Each returns one or two complete spoken sentences, so they are ``direct_return`` tools:
their answer can be spoken without a second model round. Descriptions stay short:
every token of a tool definition is paid on each turn by a 1.5B model. The timers
themselves — storage, firing, parsing spoken times — are ``iris_voice.timers``; this
module is what the model and the fast path see of them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from iris_voice.errors import ToolError
from iris_voice.timers.parse import (
    MAX_DURATION,
    ORDINALS,
    parse_duration,
    parse_when,
    plural,
    resolve_tz,
    resolve_when,
    speak_duration,
    speak_list,
    speak_skipped,
    speak_when,
)
from iris_voice.timers.rows import MAX_LABEL
from iris_voice.timers.service import TimerRow, TimerService, cap, noun
from iris_voice.tools.builtin.context import ToolContext
from iris_voice.tools.builtin.grounding import drop_unsaid_label, sign_as_said, timer_checks, when_as_said
from iris_voice.tools.intents import GONE, REFERRED, Action, IntentHandler, Slots, words
from iris_voice.tools.registry import Tool, tool_from_function
from iris_voice.tools.spoken import NUMBER_WORDS, digits, duration_arg, seconds

_MINUS = re.compile(r"^\s*(?:-|minus\b|less\b|remove\b|take\b)\s*", re.IGNORECASE)


def _clean_label(label: str | None) -> str:
    """Turn "the pasta timer" into "pasta": the sentences add "the" and "timer" themselves."""
    # A model may write the name as an identifier ("one_hour_timer"): it is spoken back.
    text = " ".join((label or "").replace("_", " ").split()).rstrip(".!?")
    text = re.sub(r"^(?:the|a|an|my)\s+", "", text, flags=re.IGNORECASE)
    return re.sub(r"\s*\btimer$", "", text, flags=re.IGNORECASE)


def _clean_message(message: str) -> str:
    """Turn "to call mom." into "call mom": the confirmation says "to" itself."""
    text = " ".join(message.split()).rstrip(".!?")
    return re.sub(r"^(?:remind me to|remind me|to)\s+", "", text, flags=re.IGNORECASE)


def _fits(text: str, what: str) -> str:
    """``text`` when the store can keep it; a ``ToolError`` asking for fewer words otherwise."""
    if len(text) > MAX_LABEL:
        raise ToolError(f"That {what} is too long to keep ({len(text)} characters, at most {MAX_LABEL}).")
    return text


def _signed_seconds(duration: str) -> float:
    """Seconds in "2 minutes" (positive) or "-2 minutes" / "minus 2 minutes" (negative)."""
    text, sign = str(duration), 1.0
    if m := _MINUS.match(text):
        text, sign = text[m.end() :], -1.0
    try:
        return sign * parse_duration(text)
    except ValueError as exc:
        raise ToolError(str(exc)) from None


_TO = re.compile(r"^\s*(?:to|=)\s*", re.IGNORECASE)
"""``adjust_timer``'s "to 5 minutes": the time a timer should have left, not a change."""


def _positive(duration: str) -> float:
    """Seconds in a duration that must be positive ("5 minutes")."""
    try:
        return parse_duration(duration)
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
    ``resume_timer`` and ``set_reminder``, all ``direct_return``, each with its intents."""
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
        name = _fits(_clean_label(label), "timer name")
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

    async def cancel_timer(
        which: Annotated[str, "the timer's name (e.g. pasta), a number, 'all' or 'last'"],
    ) -> str:
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
        if target := _TO.match(str(duration)):  # "make it five minutes": what is left, set
            found = await service.find(which or "")
            if len(found) != 1:
                raise ToolError("Say which timer to change.")
            seconds = _positive(str(duration)[target.end() :]) - found[0].left(service.clock.now())
            if abs(seconds) < 1:
                return cap(
                    f"{noun(found[0])} already has {speak_duration(found[0].left(service.clock.now()))} left."
                )
        else:
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
            resolved = resolve_when(when, now)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        text = _fits(_clean_message(message), "reminder")
        if not text:
            raise ToolError("Say what the reminder is for, e.g. message='call mom'.")
        await service.set_reminder(resolved.moment.timestamp(), text)
        what = text if text.lower().startswith("about ") else f"to {text}"
        said = f"I'll remind you {what} {speak_when(resolved.moment, now)}."
        if resolved.skipped is not None:  # never move a time without saying so
            return f"{speak_skipped(resolved.skipped, now)}, so {said}"
        return said

    async def labels() -> list[str]:
        return [row.label for row in await service.list()]

    # Calls with side effects run only when the user's words ask for them (grounding).
    checks = timer_checks(labels, tz, lambda: service.clock.now())
    # A call's arguments mended to the user's words before the checks (see ``grounding``).
    repairs = {
        "set_timer": drop_unsaid_label,
        "adjust_timer": sign_as_said,
        "set_reminder": when_as_said(tz, lambda: service.clock.now()),
    }
    tools = (set_timer, list_timers, cancel_timer, adjust_timer, pause_timer, resume_timer, set_reminder)
    return [
        tool_from_function(
            f,
            direct_return=True,
            words=(*WORDS, *_OWN_WORDS.get(f.__name__, ())),
            asks=ASKS,
            intents=_intents_of(f.__name__),
            grounded=checks.get(f.__name__),
            repair=repairs.get(f.__name__),
            read_only=f is list_timers,
            on_demand=f in (adjust_timer, pause_timer, resume_timer),
            meta={"referent": referent},
        )
        for f in tools
    ]


# -- the fast path: sentences that ask for a timer tool --------------------------------------
WORDS = (r"timers?|alarms?|remind\w*|schedule|minutes?|seconds?|hours?", NUMBER_WORDS)
"""Words that suggest a timer or reminder (boost's "may need a tool" check)."""
_OWN_WORDS = {
    "cancel_timer": (r"cancel|stop|delete|remove|clear",),
    "pause_timer": (r"pause|hold|freeze",),
    "resume_timer": (r"resume|continue|unpause|restart",),
    "adjust_timer": (r"add|more|extend|longer|shorter|less",),
}
"""Each tool's own verbs, beside ``WORDS``: what tells retrieval which timer tool a request
is for ("pause the pasta timer"; ``Tool.on_demand``)."""
ASKS = r"timers?|alarms?|remind\w*|countdowns?|minutes?|seconds?|hours?"
"""Words that make a request about timers: only then does a refused call ask about one
(a number alone, "a table for two", "pause the music", never does)."""
MAX_NAME_WORDS = 3
MAX_MESSAGE_WORDS = 15
_ARTICLES = re.compile(r"^(?:the|my|a|an|our)\b\s*", re.IGNORECASE)


def _name(value: Any) -> str | None:
    """A timer name as said ("the pasta" → "pasta", "" when none); None if doubtful."""
    text = _ARTICLES.sub("", words(value))
    text = re.sub(r"\s*\btimers?$", "", text, flags=re.IGNORECASE)
    number = re.search(r"\d", digits(text)) and text.lower() not in ORDINALS  # "first": a place
    if number or len(text.split()) > MAX_NAME_WORDS:
        return None  # "10 minute" (or "ten minute") is a duration, a long phrase is not a name
    return text


_POINTING = {"that", "this", "it"}
"""A name that points back: the conversation's timer (``REFERRED``)."""


def _hms(slots: Slots, prefix: str = "") -> float:
    """Seconds from Home Assistant's hours/minutes/seconds slots (0 when none)."""
    units = (("hours", 3600), ("minutes", 60), ("seconds", 1))
    return float(sum(float(slots.get(prefix + unit) or 0) * scale for unit, scale in units))


def _which(slots: Slots) -> str | None:
    """Which timer a sentence means: a name, a starting duration, or "" (the only one)."""
    if "name" in slots:  # a name of articles only ("cancel the one") names nothing
        name = _name(slots["name"])
        # "take five minutes off that one": the timer the conversation spoke of
        return REFERRED if name in _POINTING else name or None
    start = _hms(slots, "start_")
    return duration_arg(start) if start else ""


def _with_which(args: dict[str, Any], which: str) -> dict[str, Any]:
    return {**args, "which": which} if which else args


def _start_timer(intent: str, slots: Slots) -> Action | None:
    """HassStartTimer: "set a pasta timer for eight minutes"."""
    total = seconds(words(slots["duration"])) if "duration" in slots else _hms(slots)
    name = _name(slots.get("name"))
    if not total or not 0 < total <= MAX_DURATION or name is None:
        return None
    args: dict[str, Any] = {"duration": duration_arg(total)}
    return Action(intent, "set_timer", {**args, "label": name} if name else args)


def _change_timer(intent: str, slots: Slots) -> Action | None:
    """HassIncreaseTimer / HassDecreaseTimer: "add 2 minutes to the pasta timer"."""
    amount, which = _hms(slots), _which(slots)
    if not amount or which is None:
        return None
    sign = -1 if intent == "HassDecreaseTimer" else 1
    return Action(intent, "adjust_timer", _with_which({"duration": duration_arg(sign * amount)}, which))


def _timer_action(tool: str) -> IntentHandler:
    """Cancel, pause, resume and status: a tool that takes ``which``."""

    def act(intent: str, slots: Slots) -> Action | None:
        which = _which(slots)
        if which is None:
            return None
        return Action(intent, tool, {"which": which} if tool == "cancel_timer" else _with_which({}, which))

    return act


def _it(tool: str) -> IntentHandler:
    """Cancel, pause, resume or ask about "it": the timer the conversation last set or
    spoke of (``REFERRED``, filled in by the fast path)."""

    def act(intent: str, slots: Slots) -> Action | None:
        return Action(intent, tool, {"which": REFERRED})

    return act


def _change_it(intent: str, slots: Slots) -> Action | None:
    """IrisAdjustIt / IrisTrimIt / IrisSetLengthIt: "add two more minutes to it", "take a
    minute off it", "make it five minutes" (what is left becomes five minutes)."""
    amount = seconds(_MORE_WORDS.sub(" ", words(slots.get("extra"))))
    if not amount or not 0 < amount <= MAX_DURATION:
        return None
    sign = {"IrisTrimIt": "-", "IrisSetLengthIt": "to "}.get(intent, "")
    return Action(intent, "adjust_timer", {"duration": sign + duration_arg(amount), "which": REFERRED})


_MORE_WORDS = re.compile(r"\b(?:more|extra|another|further)\b", re.IGNORECASE)
"""What "two more minutes" adds to a duration: nothing."""


def referent(name: str, args: dict[str, Any]) -> str | None:
    """The timer a call of the timer tool ``name`` with ``args`` speaks of, as ``which``
    finds it again (its name, else the duration it was set for); ``GONE`` after a cancel;
    None when the call names none."""
    if name == "cancel_timer":
        return GONE
    if name == "set_timer":
        return str(args.get("label") or "").strip() or str(args.get("duration") or "").strip() or None
    if name == "set_reminder":
        return str(args.get("message") or "").strip() or None
    which = str(args.get("which") or "").strip()
    return which if which and which != REFERRED and which.lower() not in ("all", "all timers") else None


def _remind(intent: str, slots: Slots) -> Action | None:
    """IrisSetReminder: "remind me to call mom in two hours"."""
    message = words(slots.get("message"))
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


_INTENTS: dict[str, dict[str, IntentHandler]] = {
    "set_timer": {"HassStartTimer": _start_timer},
    "cancel_timer": {
        "HassCancelTimer": _timer_action("cancel_timer"),
        "HassCancelAllTimers": lambda i, s: Action(i, "cancel_timer", {"which": "all timers"}),
        "IrisCancelIt": _it("cancel_timer"),
    },
    "adjust_timer": {
        "HassIncreaseTimer": _change_timer,
        "HassDecreaseTimer": _change_timer,
        **dict.fromkeys(("IrisAdjustIt", "IrisTrimIt", "IrisSetLengthIt"), _change_it),
    },
    "pause_timer": {"HassPauseTimer": _timer_action("pause_timer"), "IrisPauseIt": _it("pause_timer")},
    "resume_timer": {"HassUnpauseTimer": _timer_action("resume_timer"), "IrisResumeIt": _it("resume_timer")},
    "list_timers": {"HassTimerStatus": _timer_action("list_timers"), "IrisTimeLeftIt": _it("list_timers")},
    "set_reminder": {"IrisSetReminder": _remind},
}


def _intents_of(tool: str) -> dict[str, IntentHandler]:
    return _INTENTS.get(tool, {})


ORDER = 10
"""Place in the prompt: first (see ``iris_voice.tools.builtin``)."""


def provide(ctx: ToolContext) -> list[Tool]:
    """The timer tools over the daemon's (or this command's) timer service."""
    return make_timer_tools(ctx.timers, ctx.timezone)  # type: ignore[arg-type]  # None: names only
