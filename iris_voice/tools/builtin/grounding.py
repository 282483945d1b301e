"""Grounding checks for the timer tools: a side effect only when the user's words ask for it.

A small model fills in what nobody said: "Turn on the lamp." became a one-minute "lamp"
timer, "Call my sister." a reminder, "turn off dining room" cancelled the user's living
room timer. Before such a call runs, IRIS (not the model) checks it against the request:

- a duration (``set_timer``, ``adjust_timer``) must be one the user said: some run of their
  words with a time unit in it parses to the same number of seconds;
- a reminder's time must be one the user said: some run of their words resolves to the
  same moment;
- a timer to cancel, pause, resume or change must be named in the request, or the request
  must speak of timers (``all`` only when it says all, every or both); a cancel, pause or
  resume must be the action the request names, when it names one (``other_action``);
- a new timer's name keeps only the words the user said: "Start a timer for one hour." is
  no "breakfast" timer, "Put a 45 second timer on." no "pasta" one (``said_label``, a
  repair: the timer still runs, without the made-up name); a change's sign is the one the
  words give ("two more minutes" adds, ``sign_as_said``), a reminder's time the one moment
  they name ("at 6 pm", never "in 6 hours": ``when_as_said``).

Each check answers None (run the call) or the question to ask instead. This module is
not a tool family (it has no ``provide``); ``timers`` attaches the checks to its tools.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import datetime, tzinfo
from typing import Any

from iris_voice.timers.parse import ORDINALS, parse_duration, resolve_when
from iris_voice.tools.intents import REFERENT
from iris_voice.tools.lexicon import refers_back, sets_up
from iris_voice.tools.registry import OTHER_CHANGE, ArgumentRepair, GroundingCheck
from iris_voice.tools.spoken import digits

_MAX_RUN = 7  # words in the longest duration or time people say ("an hour and a half from now")
_UNIT = re.compile(  # "seconds" only as a plural: "the second timer" names no span
    r"\d\s*(?:h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?|d|days?)\b|\bhour|\bminute|\bseconds\b|\d:\d"
)
# A clock time or a day word: a bare number ("in 2", "for two tonight") names no moment
# anybody meant, nor does a part of the day alone ("tonight": 8 pm would be the model's guess).
_TIME_WORD = re.compile(
    r"\d\s*(?:am|pm)\b|\d[:.]\d|\bat \d|o'clock"
    r"|\b(?:half|quarter|\d{1,2}(?: minutes?)?) (?:past|after|to|till|til|before) (?:\d|noon|midnight)"
    r"|\b(?:noon|midday|midnight|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
)
_FILLER = re.compile(r"\b(?:more|extra|additional|another|further|longer)\b")
TIMER_WORDS = re.compile(r"\b(?:timers?|reminders?|alarms?|countdowns?)\b", re.IGNORECASE)
"""Words that make a request speak of timers."""
_REMIND = re.compile(r"\bremind\w*", re.IGNORECASE)
_ALL = re.compile(r"\b(?:all|every|everything|both)\b", re.IGNORECASE)
_REFERENCES = re.compile(r"^\s*(?:|last|the last one|latest|\d+|#\d+|first|second|third|it|that|this)\s*$")
_ARTICLES = re.compile(r"^(?:the|my|a|an|our)\s+|\s+(?:timers?|reminders?|alarms?)$", re.IGNORECASE)


def _runs(text: str) -> list[str]:
    """Every run of up to ``_MAX_RUN`` consecutive words of ``text``, spoken numbers as digits."""
    # text2num reads "second" as the ordinal ("a 45 2nd timer"): here it is always the unit
    spoken = re.sub(r"\b2nd\b", "second", digits(text.lower()))
    words = re.findall(r"[\w:.'-]+", spoken)
    words = [w.strip(".") for w in words if w.strip(".")]
    ends = lambda i: range(i + 1, min(len(words), i + _MAX_RUN) + 1)  # noqa: E731
    return [" ".join(words[i:j]) for i in range(len(words)) for j in ends(i)]


def said_durations(text: str) -> set[float]:
    """Seconds of every duration the words of ``text`` state ("twelve minutes" → 720)."""
    found = set()
    for run in _runs(_FILLER.sub(" ", text)):
        if not _UNIT.search(run):
            continue  # a bare number ("22 degrees") is no duration
        try:
            found.add(parse_duration(run))
        except ValueError:
            pass
    return found


def said_moments(text: str, now: datetime) -> set[float]:
    """Timestamps of every moment the words of ``text`` name ("at 6 pm", "in 2 hours")."""
    found = set()
    for run in _runs(text):
        if not (_TIME_WORD.search(run) or _UNIT.search(run)):
            continue
        try:
            found.add(resolve_when(run, now).moment.timestamp())
        except ValueError:
            pass
    return found


def moment_said(request: str, now: datetime) -> str | None:
    """The words of ``request`` that name a moment, the longest such run ("tomorrow at 9",
    not its "at 9"); None when they name none, or two apart ("at 5 … in 2 hours")."""
    found: list[tuple[str, float]] = []
    for run in _runs(request):
        if not (_TIME_WORD.search(run) or _UNIT.search(run)):
            continue
        try:
            found.append((run, resolve_when(run, now).moment.timestamp()))
        except ValueError:
            continue
    if not found:
        return None
    longest, stamp = max(found, key=lambda f: len(f[0]))
    # "at 6" inside "at 6 pm" is a part of it; another time elsewhere is a second moment
    if any(other != stamp and run not in longest for run, other in found):
        return None
    return longest


def when_as_said(tz: tzinfo, now: Callable[[], float]) -> ArgumentRepair:
    """``set_reminder``'s repair: a time the user did not say ("in 6 hours" for "at 6 pm")
    becomes the one they did, when they asked to be reminded and their words name one
    moment ("book a table for two tonight" asks for no reminder: refused, not mended)."""

    def repair(request: str, args: dict[str, Any]) -> dict[str, Any]:
        if not _REMIND.search(request):
            return args
        moment = datetime.fromtimestamp(now(), tz)
        said = moment_said(request, moment)
        if said is None:
            return args
        try:
            wanted = resolve_when(str(args.get("when", "")), moment).moment.timestamp()
            if abs(wanted - resolve_when(said, moment).moment.timestamp()) < 61:
                return args
        except ValueError:
            pass
        return {**args, "when": said}

    return repair


_MORE = re.compile(r"\b(?:more|add|extra|additional|another|longer|plus|extend)\b", re.IGNORECASE)
_LESS = re.compile(r"\b(?:less|take|remove|off|minus|shorter|subtract|reduce)\b", re.IGNORECASE)


_NEGATIVE = re.compile(r"^\s*(?:-|minus\b|less\b|remove\b|take\b)\s*", re.IGNORECASE)


def _way(request: str) -> int:
    """Which way the request's words change a timer: 1 adds time, -1 takes it off, 0 unsaid."""
    more, less = bool(_MORE.search(request)), bool(_LESS.search(request))
    return 0 if more == less else 1 if more else -1


def sign_as_said(request: str, args: dict[str, Any]) -> dict[str, Any]:
    """``adjust_timer``'s arguments with the duration's sign the request's words give: the
    small model wrote "-2 minutes" for "give the pasta timer two more minutes" (the
    grounding check refused it and asked how much time to add)."""
    raw = args.get("duration")
    if not isinstance(raw, str) or not (way := _way(request)):
        return args
    text = _NEGATIVE.sub("", raw)
    if (text != raw) == (way < 0):
        return args
    return {**args, "duration": text if way > 0 else f"-{text}"}


def _duration_grounded(request: str, duration: Any) -> bool:
    """The duration, without its sign, is one the request states (the sign is mended to
    the request's words before: ``sign_as_said``)."""
    text = _NEGATIVE.sub("", str(duration))
    try:
        wanted = parse_duration(text)
    except ValueError:
        # for a request about timers the tool says what is wrong (the model mends its call);
        # "go forward five steps" never asked for one, and its "5 steps" is no duration
        return about_time(request)
    return any(abs(wanted - said) < 1 for said in said_durations(request))


def about_time(request: str) -> bool:
    """Whether ``request`` speaks of timers, reminders or spans of time: only then is a call
    with a time IRIS cannot read the tool's to explain rather than a call nobody asked for."""
    return bool(TIMER_WORDS.search(request) or _REMIND.search(request) or _UNIT.search(request.lower()))


def _label_words(label: str) -> list[str]:
    return re.findall(r"\w+", _ARTICLES.sub("", " ".join(label.lower().split())))


def _stem(word: str) -> str:
    """A word without its plural ending ("eggs" → "egg"), for matching a name to the words said."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def said_label(request: str, label: Any) -> str | None:
    """The words of a timer name the request holds, in the name's order; None when it holds
    none of them (the model made the name up)."""
    if not isinstance(label, str):
        return None
    said = {_stem(w) for w in re.findall(r"\w+", digits(request.lower()))}
    kept = [w for w in _label_words(label) if _stem(w) in said]
    return " ".join(kept) or None


# A name said with a timer: "a tea timer", "a timer for the cookies", "… minutes for the
# tea." (a closing "for the …"). Its words are checked by ``named_timer``: "a five minute
# timer" or "for the next hour" names no timer.
_NAMED = re.compile(
    r"\b(?:a|an|the|my)\s+([a-z]+(?:\s+[a-z]+)?)\s+timer\b"
    r"|\btimer\s+for\s+(?:the|my)\s+([a-z]+(?:\s+[a-z]+)?)\b"
    r"|\bfor\s+(?:the|my)\s+([a-z]+(?:\s+[a-z]+)?)\s*(?:,\s*please)?\s*[.!?]?\s*$",
    re.IGNORECASE,
)
_NOT_A_NAME = re.compile(r"\b(?:next|last|other|first|same|new|one|rest|moment|while|half|quarter|couple)\b")


def named_timer(request: str) -> str | None:
    """The name the request gives a new timer, or None ("Twelve minutes on a timer for the
    cookies." → "cookies"; "Set a five minute timer." → None)."""
    for match in _NAMED.finditer(request):
        name = next(g for g in match.groups() if g).lower()
        if not (_UNIT.search(digits(name)) or re.search(r"\d", digits(name)) or _NOT_A_NAME.search(name)):
            return name
    return None


def drop_unsaid_label(request: str, args: dict[str, Any]) -> dict[str, Any]:
    """``set_timer``'s arguments with its name cut to the words the user said (see
    ``said_label``); without a name when they said none. A name the request gives and the
    model left out is filled in (``named_timer``): the model often writes ``label: null``."""
    if not args.get("label"):
        name = named_timer(request)
        return {**args, "label": name} if name else args
    label = said_label(request, args["label"])
    if label is None:
        return {k: v for k, v in args.items() if k != "label"}
    return {**args, "label": label}


def _which_grounded(request: str, which: Any, labels: list[str]) -> bool:
    """True when ``which`` is a timer the request names, or the request speaks of timers,
    or it refers back ("cancel it") to the conversation's referent and ``which`` is that."""
    the_one = REFERENT.get()
    if the_one and refers_back(request) and _label_words(str(which or "")) == _label_words(the_one):
        return True
    which = " ".join(str(which or "").lower().split())
    said = set(re.findall(r"\w+", request.lower()))
    about_timers = bool(TIMER_WORDS.search(request))
    if re.search(r"\ball\b", which):
        return about_timers and bool(_ALL.search(request))
    words = _label_words(which)
    # A running timer the request names is the one it means: "last" or another is a guess.
    meant = [_label_words(label) for label in labels if _label_words(label)]
    meant = [w for w in meant if all(x in said for x in w)]
    if which in ORDINALS and labels and which in said:
        return True  # "stop the first one": the timer at that place, as the tool finds it
    if _REFERENCES.match(which):
        return about_timers and not meant
    named = bool(words) and all(w in said for w in words)
    existing = any(_label_words(label) == words for label in labels)
    return named and (about_timers or existing) and (not meant or words in meant)


# Words that end a timer.
_CANCELS = re.compile(
    r"\b(?:cancel\w*|stop|delete|remove|clear|kill|end|abort|dismiss|drop|scrap|forget|turn off"
    r"|switch off|get rid|never ?mind|instead|replace|no longer|(?:don't|do not) need)\b",
    re.IGNORECASE,
)


# Words that hold a timer, and words that set a held one going again.
_PAUSES = re.compile(r"\b(?:pause\w*|freeze|hold (?:it|that|this|them|the|my|on to))\b", re.IGNORECASE)
_RESUMES = re.compile(
    r"\b(?:resume\w*|unpause\w*|continue|carry on|keep (?:it )?going|start (?:\w+ ){0,3}again|restart)\b",
    re.IGNORECASE,
)
_ACTIONS = {"cancel_timer": _CANCELS, "pause_timer": _PAUSES, "resume_timer": _RESUMES}
"""The words of each action on a running timer: the action a call makes must be one the
request names, when it names any ("Pause it, the phone is ringing." asks for no cancel)."""


def other_action(tool: str, request: str) -> bool:
    """Whether ``request`` names an action on a timer other than ``tool``'s, and not its own."""
    own = _ACTIONS[tool]
    return not own.search(request) and any(w.search(request) for t, w in _ACTIONS.items() if t != tool)


def timer_checks(
    labels: Callable[[], Awaitable[list[str]]], tz: tzinfo, now: Callable[[], float]
) -> dict[str, GroundingCheck]:
    """Grounding checks by tool name, over the labels of the running timers and reminders."""

    async def set_timer(request: str, args: dict[str, Any]) -> str | None:
        if _duration_grounded(request, args.get("duration")):
            return None
        return "How long should the timer run?"

    async def adjust_timer(request: str, args: dict[str, Any]) -> str | None:
        if not _duration_grounded(request, args.get("duration")):
            return "How much time should I add or take off?"
        return await _which(request, args)

    async def _which(request: str, args: dict[str, Any]) -> str | None:
        if _which_grounded(request, args.get("which"), await labels()):
            return None
        return "Which timer do you mean?"

    async def set_reminder(request: str, args: dict[str, Any]) -> str | None:
        moment = datetime.fromtimestamp(now(), tz)
        try:
            wanted = resolve_when(str(args.get("when", "")), moment).moment.timestamp()
        except ValueError:  # the tool says what is wrong (for a request about time), nothing is set
            return None if about_time(request) else "When should I remind you?"
        if any(abs(wanted - said) < 61 for said in said_moments(request, moment)):
            return None
        return "When should I remind you?"

    async def cancel_timer(request: str, args: dict[str, Any]) -> str | None:
        if sets_up(request) and not _CANCELS.search(request):
            return OTHER_CHANGE  # "Set a pasta timer and a tea timer." cancelled the pasta timer
        return await _acted(request, args, "cancel_timer")

    async def _acted(request: str, args: dict[str, Any], tool: str) -> str | None:
        if other_action(tool, request):
            return OTHER_CHANGE  # the model reads why and makes the call that was asked for
        return await _which(request, args)

    async def pause_timer(request: str, args: dict[str, Any]) -> str | None:
        return await _acted(request, args, "pause_timer")

    async def resume_timer(request: str, args: dict[str, Any]) -> str | None:
        return await _acted(request, args, "resume_timer")

    return {
        "set_timer": set_timer,
        "adjust_timer": adjust_timer,
        "cancel_timer": cancel_timer,
        "pause_timer": pause_timer,
        "resume_timer": resume_timer,
        "set_reminder": set_reminder,
    }
