"""A reply's first clause handed to the synthesizer early, never split inside a number,
a time, a date or a name."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import iris_voice.llm
from iris_voice.llm.sentences import CLAUSE_MAX_CHARS, SentenceSplitter, split_sentences
from tests.support.hostile import replies as hostile
from tests.support.regex_reads import count_reads


def test_the_first_clause_is_released_while_the_sentence_is_being_written():
    s = SentenceSplitter(first_clause_words=4)
    assert s.feed("Octopuses have three hearts") == []
    assert s.feed(", and") == ["Octopuses have three hearts,"]
    assert s.feed(" blue blood, too. They") == ["and blue blood, too."]  # later commas: sentences only
    assert s.flush() == "They"


def test_off_by_default():
    text = "Octopuses have three hearts, and blue blood."
    assert split_sentences(text) == [text]


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("It is 3:05 PM on Monday, November 23, 2026 in Tokyo.", "It is 3:05 PM on Monday,"),
        ("Today is Wednesday, November 25, 2026.", None),  # too few words before the comma
        ("It will be ready by Wednesday, November 25, 2026.", "It will be ready by Wednesday,"),
        ("The meeting is on November 23, 2026 at noon.", None),  # inside a date
        ("The total comes to 1,000,000 dollars, give or take.", "The total comes to 1,000,000 dollars,"),
        ("The first primes are 2, 3, 5 and 7, which is enough.", "The first primes are 2, 3, 5 and 7,"),
        ("I think you mean Paris, France, which is lovely.", "I think you mean Paris, France,"),
        ("The answer is 3.5, more or less.", "The answer is 3.5,"),
        ("Your timer is set for 8:30, so relax.", "Your timer is set for 8:30,"),
        ("Sure, I can do that.", None),  # too few words before the comma
        ("Here is the plan: first we cook, then we eat.", "Here is the plan:"),
        ("Hello. I am fine, thanks for asking.", "Hello."),  # a sentence came first
    ],
)
def test_where_a_first_clause_ends(text, first):
    pieces = split_sentences(text, first_clause_words=4)
    assert " ".join(pieces).split() == text.split()
    if first is None:
        assert pieces[0] == split_sentences(text)[0]
    else:
        assert pieces[0] == first


WORDS = ["octopus", "hearts", "blue", "a", "the", "is", "Paris", "France", "I", "November", "Monday"]
DAYS = {"monday"}
NUMBERS = ["3", "23", "2026", "1,000", "3.5", "3:05", "8:30", "12:45"]
MARKS = [",", ";", ":", " —", ".", "?", "!"]


@st.composite
def replies(draw) -> str:
    """Replies of words, numbers, times and dates, with clause marks and sentence ends."""
    parts = []
    for _ in range(draw(st.integers(1, 30))):
        parts.append(draw(st.sampled_from(WORDS + NUMBERS)))
        if draw(st.integers(0, 3)) == 0:
            parts[-1] += draw(st.sampled_from(MARKS))
    return " ".join(parts)


def pieces_of(text: str, sizes: list[int], words: int) -> list[str]:
    s, out, pos = SentenceSplitter(first_clause_words=words), [], 0
    for size in sizes:
        out += s.feed(text[pos : pos + size])
        pos += size
    out += s.feed(text[pos:])
    tail = s.flush()
    return out + ([tail] if tail else [])


@settings(max_examples=400, deadline=None)
@given(replies(), st.lists(st.integers(1, 7), max_size=40), st.integers(1, 5))
def test_a_first_clause_only_ever_moves_the_first_cut_earlier(text, sizes, words):
    got = pieces_of(text, sizes, words)
    plain = split_sentences(text)
    assert got == split_sentences(text, first_clause_words=words)  # chunking changes nothing
    assert " ".join(got).split() == text.split()  # nothing lost, nothing moved
    if got == plain:
        return
    first = got[0]
    # the clause: the start of the first sentence, ending at a clause mark, early enough,
    # with enough words, and the next piece starts with neither a digit nor a capital
    assert plain[0].startswith(first) and first != plain[0]
    assert re.search(r"[,;:—–]$", first) and len(first.split()) >= words
    assert len(first) <= CLAUSE_MAX_CHARS + 1
    assert not got[1][0].isdigit()
    before = re.sub(r"[,;:—–]$", "", first).split()[-1].lower()  # the word before the mark
    assert not got[1][0].isupper() or before in DAYS
    # after it, the same sentences as without the rule
    assert " ".join(got[1:]).split() == " ".join(plain).split()[len(first.split()) :]
    assert got[2:] == plain[1:]


@pytest.mark.parametrize("name", sorted(hostile.SPLITTER_INPUTS))
def test_cost_stays_linear_with_the_first_clause_rule(name, monkeypatch):
    reads = count_reads(monkeypatch, iris_voice.llm)

    def cost(n: int) -> int:
        before, s = reads.chars, SentenceSplitter(first_clause_words=4)
        for delta in hostile.chunks(hostile.SPLITTER_INPUTS[name](n), 3):
            s.feed(delta)
            if reads.chars - before > 6 * n:
                break
        s.flush()
        return reads.chars - before

    small, large = cost(1000), cost(16000)
    assert large <= 6 * 16000 and large <= 20 * small
