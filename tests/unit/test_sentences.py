"""The streaming sentence splitter."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from iris_voice.llm.sentences import SentenceSplitter, split_sentences


def test_splits_on_terminators_but_not_numbers_or_abbreviations():
    text = "It is 3:05 p.m. in Tokyo. The result is 3.5! Dr. Smith agrees? Yes.\nA new line"
    assert split_sentences(text) == [
        "It is 3:05 p.m. in Tokyo.",
        "The result is 3.5!",
        "Dr. Smith agrees?",
        "Yes.",
        "A new line",
    ]


def test_first_sentence_is_released_before_the_stream_ends():
    s = SentenceSplitter()
    assert s.feed("The answer is 1081. Anything") == ["The answer is 1081."]
    assert s.feed(" else?") == []
    assert s.flush() == "Anything else?"


def test_waits_for_the_character_after_a_period():
    s = SentenceSplitter()
    assert s.feed("Pi is about 3.") == []
    assert s.feed("14159.") == []
    assert s.feed(" Done") == ["Pi is about 3.14159."]


@given(st.lists(st.text(alphabet="ab .!?\n3", max_size=12), max_size=20))
def test_chunking_does_not_change_the_result(pieces):
    whole = "".join(pieces)
    s = SentenceSplitter()
    out = [x for p in pieces for x in s.feed(p)]
    tail = s.flush()
    streamed = out + ([tail] if tail else [])
    assert " ".join(streamed).split() == " ".join(split_sentences(whole)).split()
    assert "".join(streamed).replace(" ", "").replace("\n", "") == whole.replace(" ", "").replace("\n", "")
