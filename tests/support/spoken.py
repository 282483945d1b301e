"""What a listener wrote down, in one canonical form, so a test can compare it with what
IRIS meant to say.

Whisper writes the same spoken number in many ways: "23", "twenty-three", "twenty three";
a clock time as "6:02 p.m.", "602 pm", "6-0-2 p.m.", "6 02 PM" or "six oh two p.m.".
``normalise`` turns all of them into one form (digits, "6:02 pm"), so the voice tests judge
what was said, not how the ear chose to spell it.
"""

from __future__ import annotations

import re

_UNITS = {
    "zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000}
_NUMBER_WORD = "|".join([*_UNITS, *_TENS, *_SCALES])
_NUMBER_RUN = re.compile(rf"\b(?:{_NUMBER_WORD})(?:(?:\s+|-)(?:and\s+)?(?:{_NUMBER_WORD}))*\b")


def _words_to_number(words: list[str]) -> list[str]:
    """Number words in a row as the numbers they say: ["twenty", "three"] → ["23"].

    A time read out ("six oh two") is three numbers, not one sum: "oh" and a unit after a
    finished number start a new one, as a listener would hear them."""
    out: list[str] = []
    total, current, open_ = 0, 0, False
    last = ""

    def close() -> None:
        nonlocal total, current, open_
        if open_:
            out.append(str(total + current))
        total, current, open_ = 0, 0, False

    for w in words:
        if w in _SCALES:
            current = max(current, 1) * _SCALES[w]
            if _SCALES[w] >= 1000:
                total, current = total + current, 0
        elif w in _TENS:
            if current % 100 or (open_ and last not in _SCALES):
                close()
            current += _TENS[w]
        else:
            value = _UNITS[w]
            # "twenty three" is one number; "six oh two" and "one two" are several
            if w == "oh" or (open_ and (current % 10 or last not in _TENS) and last not in _SCALES):
                close()
            current += value
        open_ = True
        last = w
    close()
    return out


def _spell_numbers(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        words = [w for w in re.split(r"[\s-]+", m.group(0)) if w and w != "and"]
        return " ".join(_words_to_number(words))

    return _NUMBER_RUN.sub(repl, text)


def normalise(text: str) -> str:
    """Lower case, numbers as digits and clock times as "H:MM am" (or "H:MM").

    "It's twenty-three times forty seven" → "it's 23 times 47"; "1,081" → "1081";
    "6-0-2 p.m.", "602 pm", "6 02 PM", "six oh two p.m." → "6:02 pm"; "10-03 a.m." →
    "10:03 am"; "ten o'clock" →
    "10 o'clock"; "23x47" → "23 times 47"."""
    t = text.lower().replace("’", "'")
    t = re.sub(r"(\d),(\d{3})\b", r"\1\2", t)
    t = re.sub(r"\b([ap])\s?\.?\s?m\b\.?", r"\1m", t)
    t = re.sub(r"(\d)\s*[x×*]\s*(\d)", r"\1 times \2", t)
    t = _spell_numbers(t)
    t = re.sub(r"\bo'?\s?clock\b", "o'clock", t)
    # digits read one by one: "6-0-2" → "602", "6-02" → "602"
    t = re.sub(r"(?<![\d-])(\d)-(\d)-(\d)(?![\d-])", r"\1\2\3", t)
    t = re.sub(r"(?<![\d-])(\d)-(\d\d)(?![\d-])", r"\1\2", t)
    t = re.sub(r"(?<![\d-])(\d\d)-(\d\d)(?=\s?[ap]m\b)", r"\1\2", t)  # "10-03 a.m."
    # an hour and its minutes apart ("6 02 pm", "6 0 2 pm") or run together ("602 pm")
    t = re.sub(r"\b(\d{1,2})\s(\d)\s(\d)\s?([ap]m)\b", r"\1:\2\3 \4", t)
    t = re.sub(r"\b(\d{1,2})[\s.]?(\d{2})\s?([ap]m)\b", r"\1:\2 \3", t)
    t = re.sub(r"\b(\d{1,2})\s?([ap]m)\b", r"\1 \2", t)
    return re.sub(r"\s+", " ", t).strip()


def clock_times(text: str) -> set[tuple[int, int | None]]:
    """The clock times in what a listener wrote, as (hour, minute) — minute None for "7 pm"
    or "10 o'clock". "12 p.m." gives (12, None). A bare number is no time."""
    t = normalise(text)
    found: set[tuple[int, int | None]] = set()
    for m in re.finditer(r"\b(\d{1,2}):(\d{2})\b", t):
        found.add((int(m.group(1)), int(m.group(2))))
    for m in re.finditer(r"(?<![:\d])\b(\d{1,2}) (?:[ap]m|o'clock)\b", t):
        found.add((int(m.group(1)), None))
    return {(h, mi) for h, mi in found if h <= 24 and (mi is None or mi < 60)}


def spoken_words(text: str) -> list[str]:
    """The normalised words and numbers of ``text`` ("6:02" stays one word)."""
    return re.findall(r"\d{1,2}:\d{2}|[a-z0-9']+", normalise(text))


def share_said(reply: str, said: str) -> float:
    """Share of the reply's words (numbers in any spelling) that a listener wrote down."""
    wanted = spoken_words(reply)
    got = set(spoken_words(said))
    return sum(w in got for w in wanted) / max(1, len(wanted))
