"""What a transcript says besides its question: the wake phrase at its start, and a stop
command said on its own.

Pure text, shared by the two places that run a spoken turn: the desktop pipeline
(``voice.pipeline``) and the hub's turn for satellites (``wyoming.hub_turn``).
"""

from __future__ import annotations

import difflib
import re

STOP_WORDS = {
    "stop", "stop it", "stop talking", "be quiet", "quiet", "silence", "shut up", "enough",
    "that's enough", "never mind", "nevermind", "cancel", "dismiss", "ok stop", "okay stop",
    "thank you stop", "thanks",
}  # fmt: skip


MISHEARD_LEAD_LETTERS = 2
"""A word this short before the wake name stands for the lead ("a", "eh" for "hey"), as does
one spelt like it ("hay"); another is the user's own ("Ask Jarvis what he thinks")."""


def wake_phrase_pattern(wake_name: str) -> re.Pattern[str]:
    """A regex for the wake phrase at the start of a transcript ("Hey Jarvis, …" → "…")."""
    words = [w for w in re.split(r"[_\W]+", wake_name.lower()) if w]
    if not words:
        return re.compile(r"^$")
    *lead, last = words
    prefix = "".join(rf"(?:{re.escape(w)}\W+)?" for w in lead)
    return re.compile(rf"^\W*{prefix}{re.escape(last)}\b\W*", re.IGNORECASE)


def wake_phrase_text(wake_name: str) -> str:
    """The wake phrase as a transcript opens with it ("hey_jarvis" → "Hey Jarvis,"): what a
    wake-word capture is known to start with (``Transcriber.transcribe``'s ``lead``)."""
    stem = re.sub(r"\.(onnx|tflite)$", "", re.split(r"[/\\]", wake_name)[-1].lower())
    words = [w for w in re.split(r"[_\W]+", stem) if w and not re.fullmatch(r"v?\d+", w)]
    return (" ".join(w.capitalize() for w in words) + ",") if words else ""


def strip_wake_phrase(wake_name: str, text: str) -> str:
    """``text`` without the wake phrase at its start, also as Whisper misspells it after
    the lead word ("Hey, Jardis." or "Hey Jervis" for hey_jarvis) and with the lead word
    misheard ("A Jarvis," as a hub heard a stock satellite's wake): a turn opened by the
    wake word starts with it, however the transcript spells it."""
    text = text.strip()
    stripped = wake_phrase_pattern(wake_name).sub("", text, count=1)
    words = [w for w in re.split(r"[_\W]+", wake_name.lower()) if w]
    if stripped != text or len(words) < 2:
        return stripped.strip()
    m = re.match(r"^\W*(\w+)\W+(\w+)\b\W*", text)
    if m is None:
        return text
    # The lead word misheard too ("A Jarvis," "Hay Jarvis"): a short word before the name.
    first, name = m.group(1).lower(), m.group(2).lower()
    lead = len(first) <= MISHEARD_LEAD_LETTERS or _like(first, words[0])
    if lead and _like(name, words[-1]):
        return text[m.end() :].strip()
    return text


def _like(heard: str, word: str) -> bool:
    """Whether ``heard`` is ``word`` as Whisper may spell it ("Jervis", "Hay")."""
    return difflib.SequenceMatcher(None, heard, word).ratio() >= 0.6


def is_wake_phrase_alone(wake_name: str, text: str) -> bool:
    """Whether ``text`` is the wake phrase and nothing else ("Hey Jarvis." — the question is
    still to come)."""
    return bool(re.search(r"\w", text)) and not re.search(r"\w", strip_wake_phrase(wake_name, text))


def is_stop_command(text: str) -> bool:
    """True for "stop", "be quiet", "never mind"… said on their own."""
    words = re.sub(r"[^\w' ]+", " ", text.lower()).split()
    return " ".join(w for w in words if w not in {"please", "iris", "jarvis", "hey"}) in STOP_WORDS
