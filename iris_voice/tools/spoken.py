"""Spoken numbers and durations in slot values: "twenty three" → 23, "an hour and a half" → 5400.

``text2num`` turns number words into digits; this module only adds the glue speech-to-text
needs around it (thousands separators, "a hundred", "minus") and says no to anything that
is not exactly one number or one duration, so a doubtful slot sends the turn to the model.
The tools' fast-path interpreters use it on the words a sentence template captured.
"""

from __future__ import annotations

import re

from text_to_num import alpha2digit

from iris_voice.timers.parse import parse_duration

NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"forty|fifty|sixty|hundred|thousand"
)
"""Number words, as a regex alternation: a tool that takes a number or a duration lists them
among its words (``Tool.words``), since a spoken number hints at arithmetic or a timer."""

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_A_HUNDRED = re.compile(r"\b(?:a|an)\s+(?=(?:hundred|thousand|million)\b)")
_MINUS = re.compile(r"^(?:minus|negative)\s+")


def digits(text: str) -> str:
    """Number words as digits, everything else as said: "call mom in two hours" → "… in 2 hours"."""
    text = _A_HUNDRED.sub("one ", " ".join(text.split()))
    # threshold=0: single small numbers ("two") are converted too; slot values are short
    return _THOUSANDS.sub("", alpha2digit(text, "en", threshold=0))


def number(text: str) -> str | None:
    """The one number ``text`` says, as digits ("twenty three" → "23", "minus 5" → "-5"), or None."""
    value = digits(text.strip().lower().rstrip(".?!"))
    negative = _MINUS.match(value)
    if negative:
        value = "-" + value[negative.end() :]
    if not _NUMBER.fullmatch(value):
        return None
    return value


def seconds(text: str) -> float | None:
    """Seconds in a spoken duration ("eight minutes", "an hour and a half"), or None."""
    try:
        return parse_duration(digits(text))
    except ValueError:
        return None


def duration_arg(total: float) -> str:
    """A duration for a tool argument: "480 seconds" (the tool says it back as "8 minutes")."""
    return f"{total:g} seconds"
