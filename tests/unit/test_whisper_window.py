"""The short-window decode's safety checks, on plain strings: what counts as a loop,
how a loop is trimmed, and which decodes go to the full window."""

from __future__ import annotations

import numpy as np
import pytest

from iris_voice.config import SttConfig
from iris_voice.speech.whisper_window import ShortWindow, repetition, token_budget, trim_repetition

LOOPS = [
    "What time is it? What time is it? What time is it",
    "Alexa? Alexa?",
    "computer computer computer computer",
    "Turn on the living room lamp. Turn on the living room lamp",
    "Go forward 10 meters. Go forward 10 meters. Go forward",
    "Hey, my craft. Hey, my craft. Hey, my",
]
SPEECH = [
    "What time is it?",
    "Set a timer for ten minutes.",
    "Hey Jarvis, what is 23 times 47?",
    "Hey Jarvis, what is the square root of 144?",
    "Take them one by one.",
    "Hey Jarvis, what is the largest planet in our solar system?",
    "and so my fellow americans ask not what your country can do for you"
    " ask what you can do for your country",
    "",
]


@pytest.mark.parametrize("text", LOOPS)
def test_a_phrase_said_again_back_to_back_is_a_loop(text: str) -> None:
    assert repetition(text)


@pytest.mark.parametrize("text", SPEECH)
def test_ordinary_commands_are_no_loop(text: str) -> None:
    assert not repetition(text)


@pytest.mark.parametrize(
    ("looped", "first"),
    [
        ("What time is it? What time is it? What time is it", "What time is it?"),
        ("Alexa Alexa Alexa Alexa", "Alexa"),
        ("Hey Jarvis, stop. Stop. Stop.", "Hey Jarvis, stop."),
        ("Set a timer for ten minutes.", "Set a timer for ten minutes."),
    ],
)
def test_trimming_keeps_the_first_copy(looped: str, first: str) -> None:
    assert trim_repetition(looped) == first
    assert not repetition(trim_repetition(looped))


def test_the_token_budget_grows_with_the_audio() -> None:
    assert token_budget(16000) < token_budget(3 * 16000) < token_budget(10 * 16000)
    # "Hey Jarvis, what is the square root of 144?" is 14 tokens in about 3.5 s.
    assert token_budget(int(3.5 * 16000)) >= 14


def test_a_repeating_decode_goes_to_the_full_window() -> None:
    assert ShortWindow.verdict("What time is it? What time is it?", list(range(10)), -0.1, 30) == "repeat"


def test_a_decode_past_its_budget_goes_to_the_full_window() -> None:
    assert ShortWindow.verdict("one two three four", list(range(31)), -0.1, 30) == "overlong"


def test_an_empty_decode_goes_to_the_full_window() -> None:
    assert ShortWindow.verdict("", [], 0.0, 30) == "empty"


def test_an_unsure_decode_goes_to_the_full_window() -> None:
    # Mean log-probability -2 per token: faster-whisper itself would decode again.
    assert ShortWindow.verdict("Turn on the lamp.", [1, 2, 3, 4, 5], -2.0, 30) == "unsure"


def test_a_plain_confident_decode_is_kept() -> None:
    assert ShortWindow.verdict("Set a timer for ten minutes.", list(range(8)), -0.2, 30) is None


def test_the_window_is_configured_under_stt() -> None:
    assert SttConfig().window == "auto"
    assert SttConfig(window="short").window == "short"
    with pytest.raises(ValueError, match="window_pad_s"):
        SttConfig(window_pad_s=0.1)
    with pytest.raises(ValueError, match="window"):
        SttConfig(window="tiny")


def test_auto_takes_the_short_window_from_the_start_and_the_full_one_for_a_continued_piece(monkeypatch):
    from iris_voice.speech.stt import FasterWhisperTranscriber

    stt = FasterWhisperTranscriber(SttConfig(window="auto"))
    monkeypatch.setattr(stt, "_load", lambda: object())
    calls: list[tuple[str, str]] = []

    def full(audio, prompt="", lead=""):
        calls.append(("full", prompt))
        return "full"

    monkeypatch.setattr(stt, "_full", full)

    class Window:
        def decode(self, audio, prompt, full, lead=""):
            calls.append(("short", prompt))
            return "short text"

    stt._window = Window()
    silence = np.zeros(1600, np.float32)
    assert stt.transcribe_sync(silence) == "short text"
    assert stt.transcribe_sync(silence, prompt="Set a timer") == "full"
    assert calls == [("short", ""), ("full", "Set a timer")]
    stt.cfg = SttConfig(window="full")
    assert stt.transcribe_sync(silence) == "full"
