"""The words of spoken times, read into numbers: "twenty five" -> 25, "a couple of" -> 2,
"quarter to 8 pm" -> 19:45, "tomorrow morning" -> the next day at 9.

The vocabulary behind ``parse`` (which owns the checks, the limits and the help messages):
tokens with number words as digits, and a spoken moment taken apart into its clock time
(the hours it may be, am or pm, and the minute) and its day. Pure functions, no I/O.
``tools.bench.time_words`` measures them against the parsers on the package registries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
_WORDS = {w: i for i, w in enumerate((_ONES + " sixteen seventeen eighteen nineteen").split())}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_COUPLE = re.compile(r"\b(?:a )?couple(?: of)?(?= [a-z])")  # "a couple of minutes", "a couple hours"

PARTS_OF_DAY = {"morning": 9, "afternoon": 15, "evening": 19, "tonight": 20, "night": 20}
"""The hour a part of the day alone means ("tomorrow morning" is 9:00 AM)."""
_HALF_OF_DAY = {"morning": "am", "afternoon": "pm", "evening": "pm", "tonight": "night", "night": "night"}
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()

# before the clock time: words that only place it ("at", "on", "this", "o'clock")
_PLACING = r"\b(?:at|on|in|the|this|today|tomorrow|tonight|morning|afternoon|evening|night|oclock)\b"
_NAMED = {"noon": 12, "midday": 12, "midnight": 0}
_HOUR = r"(\d{1,2}|noon|midday|midnight)"
_CLOCK = re.compile(r"(\d{1,2})(?: ?[:.]? ?(\d{2})| oh (\d))? ?(am|pm)?")  # 7, 7:30, 7 30 pm, 7 oh 5
_RELATIVE = re.compile(  # "half past 6", "a quarter to 8 pm", "10 minutes past 9", "5 to noon"
    rf"(?:a )?(half|quarter|\d{{1,2}})(?: minutes?)? (past|after|to|till|til|before) {_HOUR} ?(am|pm)?"
)


def words_to_digits(tokens: list[str]) -> list[str]:
    """Replace spelled-out numbers below 1000 by digits: ["twenty", "five"] -> ["25"],
    ["a", "hundred", "and", "twenty"] -> ["120"]."""
    out: list[str] = []
    for tok in tokens:
        prev = int(out[-1]) if out and out[-1].isdigit() else None
        if tok == "hundred" and (prev is not None and 0 < prev < 10 or out[-1:] == ["a"]):
            out[-1] = str(100 * (prev or 1))  # "a hundred", "three hundred"
        elif prev is not None and prev >= 100 and prev % 100 == 0 and tok in _TENS | _WORDS:
            out[-1] = str(prev + _WORDS.get(tok, _TENS.get(tok, 0)))  # "one hundred twenty"
        elif prev in _TENS.values() and _WORDS.get(tok, 10) < 10:
            out[-1] = str(int(out[-1]) + _WORDS[tok])  # "twenty" "five" are one number
        elif tok in _WORDS or tok in _TENS:
            out.append(str(_WORDS.get(tok, _TENS.get(tok))))
        else:
            out.append(tok)
    # "one hundred and twenty": the "and" inside a number joins it
    for i in range(len(out) - 2, 0, -1):
        a, b = out[i - 1], out[i + 1]
        if out[i] == "and" and a.isdigit() and b.isdigit() and int(a) % 100 == 0 < int(a) and int(b) < 100:
            out[i - 1 : i + 2] = [str(int(a) + int(b))]
    return out


def tokens(text: str) -> list[str]:
    """Lower-case tokens: numbers, words and single punctuation marks ("a couple of" is 2)."""
    text = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text.lower())  # "twenty-five"
    text = _COUPLE.sub(" 2 ", text)
    return words_to_digits(re.findall(r"\d+(?:\.\d+)?|[a-z]+|[^\sa-z\d.]", text))


@dataclass(frozen=True)
class Spoken:
    """A moment as said, before it is placed after a ``now``."""

    hours: list[int]
    """The hours (0-23) it may be: [7, 19] for "at 7", one hour when am or pm is known."""
    minute: int
    days: int | None = None
    """Days after today that the words name (0 "today"/"tonight", 1 "tomorrow"), or None."""
    weekday: int | None = None
    """The day of the week named (0 is Monday), or None."""


def _hours(hour: int, meridiem: str | None, written: str) -> list[int] | None:
    """The hours ``hour`` may be on a 24-hour clock; None when it is no hour."""
    if hour > 23 or (meridiem in ("am", "pm") and not 1 <= hour <= 12):
        return None
    if meridiem == "night":  # "11 at night" is 23:00, "2 at night" 2:00, "12 at night" 0:00
        return [hour % 12 + (12 if 5 <= hour < 12 else 0)] if hour <= 12 else [hour]
    if meridiem and hour <= 12:
        return [hour % 12 + (12 if meridiem == "pm" else 0)]
    if 1 <= hour <= 12 and not written.startswith("0"):
        return [hour, (hour + 12) % 24]  # "at 7" is the next 7 o'clock, am or pm
    return [hour]  # "19:30", "07:30": 24-hour clock


def _clock(rest: str, meridiem: str | None) -> tuple[list[int], int] | None:
    """The hours and minute of a clock time said without its day ("half past 6", "7 30 pm")."""
    if rest in _NAMED or rest in ("12 noon", "12 midnight"):
        return [_NAMED[rest.split()[-1]]], 0
    if m := _CLOCK.fullmatch(rest):
        minute = int(m[2] or m[3] or 0)
        hours = _hours(int(m[1]), m[4] or meridiem, m[1])
        return (hours, minute) if hours and minute <= 59 else None
    if m := _RELATIVE.fullmatch(rest):
        amount = {"half": 30, "quarter": 15}.get(m[1]) or int(m[1])
        hours = [_NAMED[m[3]]] if m[3] in _NAMED else _hours(int(m[3]), m[4] or meridiem, m[3])
        if not hours or not 1 <= amount <= 59 or (m[1] == "half" and m[2] not in ("past", "after")):
            return None
        if m[2] in ("past", "after"):
            return hours, amount
        return [(h - 1) % 24 for h in hours], 60 - amount  # "quarter to 8" is 7:45
    return None


def read_moment(words: str) -> Spoken | None:
    """A spoken moment's clock time and day, from its ``tokens`` joined by spaces; None when
    the words are not one ("at half past 6 tomorrow", "tonight", "friday at 5 pm")."""
    days = 2 if re.search(r"\bday after tomorrow\b", words) else None
    words = re.sub(r"\bday after tomorrow\b", " ", words)
    days = 1 if days is None and re.search(r"\btomorrow\b", words) else days
    weekdays = [i for i, d in enumerate(WEEKDAYS) if re.search(rf"\b{d}\b", words)]
    weekday = weekdays[0] if weekdays else None
    today = r"\b(?:today|tonight)\b" if weekdays else r"\b(?:today|tonight|this)\b"
    days = 0 if days is None and re.search(today, words) else days  # "this friday" is a weekday
    words = re.sub(rf"\b(?:{'|'.join(WEEKDAYS)})\b", " ", words)
    parts = [p for p in PARTS_OF_DAY if re.search(rf"\b{p}\b", words)]
    if len(parts) > 1 or len(weekdays) > 1 or (weekdays and days is not None):
        return None  # "this morning tonight", "tomorrow on friday": two days or parts
    part = parts[0] if parts else None
    meridiem = _HALF_OF_DAY.get(part or "")
    rest = " ".join(re.sub(_PLACING, " ", words).split())
    clock = _clock(rest, meridiem) if rest else ([PARTS_OF_DAY[part]], 0) if part else None
    if clock is None:
        return None
    return Spoken(clock[0], clock[1], days, weekday)
