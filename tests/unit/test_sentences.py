"""The streaming sentence splitter."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import iris_voice.llm
from iris_voice.llm import sentences
from iris_voice.llm.sentences import MAX_SENTENCE, SentenceSplitter, split_sentences
from tests.support.hostile import replies as hostile
from tests.support.regex_reads import count_reads


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


# --- the rules, restated plainly: the streaming splitter must agree with them ---------------

_CANDIDATE = re.compile(r"(?<![.!?…])([.!?…]+)[\"')\]]*\s+(?=\S)")


def reference_cuts(text: str) -> list[int]:
    """Every place a sentence may end: after a line break, or after the whitespace that
    follows end punctuation (and closing quotes), unless a period belongs to an
    abbreviation or an initial, or a lower-case word follows it."""
    cuts = {i + 1 for i, c in enumerate(text) if c == "\n"}
    for m in _CANDIDATE.finditer(text):
        word = re.search(r"[A-Za-z.]*$", text[: m.start()]).group()
        keeps = word.lower() in sentences._ABBREVIATIONS or (len(word) == 1 and word.isupper())
        if m.group(1)[-1] != "." or not (keeps or text[m.end()].islower()):
            cuts.add(m.end())
    return sorted(cuts)


def reference_force(text: str, start: int, limit: int) -> int:
    """Where an over-long sentence is cut: the last clause break in the second half of the
    limit, else the last whitespace, else the limit."""
    window = text[start : start + limit]
    for j in range(len(window) - 1, limit // 2 - 1, -1):
        before = window[j - 1] if j else ""
        dash = before == "-" and j >= 2 and window[j - 2].isspace()
        if window[j].isspace() and (before in ",;:—–" or dash):
            return start + j + 1
    spaces = [j for j, c in enumerate(window) if c.isspace()]
    return start + spaces[-1] + 1 if spaces else start + limit


def reference_split(text: str, min_chars: int = 2, limit: int = MAX_SENTENCE) -> list[str]:
    """The whole text's sentences by the rules above (quadratic, and obviously so)."""

    def word_start(i: int) -> int:
        while i < len(text) and text[i].isspace():
            i += 1
        return i

    out: list[str] = []
    start = word_start(0)

    def force() -> None:
        nonlocal start
        cut = reference_force(text, start, limit)
        if text[start:cut].strip():
            out.append(text[start:cut].strip())
        start = word_start(cut)

    for cut in reference_cuts(text):
        while cut - start > limit:
            force()
        if cut > start and len(text[start:cut].strip()) >= min_chars:
            out.append(text[start:cut].strip())
            start = word_start(cut)
    while len(text) - start > limit:
        force()
    return out + ([text[start:].strip()] if text[start:].strip() else [])


def streamed(text: str, sizes: list[int], **kw) -> tuple[list[str], SentenceSplitter]:
    """Feed ``text`` in chunks of the given sizes (the rest in one), then flush."""
    s = SentenceSplitter(**kw)
    out, pos = [], 0
    for size in sizes:
        out += s.feed(text[pos : pos + size])
        pos += size
    out += s.feed(text[pos:])
    tail = s.flush()
    return out + ([tail] if tail else []), s


TOKENS = [
    "a", "word", "Word", "I", "J", "Dr", "e.g", "U.S", "approx", "no", "3", "3:05", "1,000",
    ".", ".", "...", "!", "?", "?!", "…", '"', "'", ")", "]", ",", ";", ":", "-", "—",
    " ", " ", " ", "  ", "\n", "\n\n", "\t", " \n ",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(TOKENS), max_size=60).map("".join),
    st.lists(st.integers(1, 9), max_size=40),
    st.sampled_from([(2, MAX_SENTENCE), (2, 12), (1, 7), (3, 20)]),
)
def test_any_chunking_gives_the_reference_sentences(text, sizes, limits):
    min_chars, limit = limits
    got, _ = streamed(text, sizes, min_chars=min_chars, max_chars=limit)
    assert got == reference_split(text, min_chars, limit)


def test_ordinary_text_keeps_the_boundaries_of_the_old_splitter():
    # What the regex splitter this one replaced gave, quirks included ("p." is no abbreviation).
    text = (
        'He said "Stop!" Then he left. See the U.S. map (p. 3). It is approx. 5 km. '
        "Mr. J. R. R. Tolkien wrote it... Really? Yes… Fine.\nOptions:\n1. Tea.\n2. Coffee.\n"
        "Steps: 1. boil water. 2. pour it. Done at 3:05 p.m. today. Cost: $3.50! Ok."
    )
    expected = [
        'He said "Stop!"',
        "Then he left.",
        "See the U.S. map (p.",
        "3).",
        "It is approx. 5 km.",
        "Mr. J. R. R. Tolkien wrote it...",
        "Really?",
        "Yes…",
        "Fine.",
        "Options:",
        "1.",
        "Tea.",
        "2.",
        "Coffee.",
        "Steps: 1. boil water.",
        "2. pour it.",
        "Done at 3:05 p.m. today.",
        "Cost: $3.50!",
        "Ok.",
    ]
    assert split_sentences(text) == reference_split(text) == expected


# --- text that never ends a sentence is cut anyway --------------------------------------------


def test_a_line_break_always_ends_a_sentence():
    # The old splitter let "Hello.\nworld" run on: the period's match swallowed the break.
    assert split_sentences("Hello.\nworld is here\nDr.\nSmith") == ["Hello.", "world is here", "Dr.", "Smith"]


def test_a_run_on_sentence_is_cut_at_a_clause_break_then_at_a_word():
    clause = "we looked at the first option, " + "and then at another one " * 8
    s = SentenceSplitter(max_chars=60)
    out = s.feed(clause)
    assert out[0] == "we looked at the first option,"
    assert all(len(x) <= 60 for x in out)
    assert " ".join(out + [s.flush() or ""]).split() == clause.split()


@pytest.mark.parametrize("name", sorted(hostile.SPLITTER_INPUTS))
def test_hostile_replies_are_released_as_they_stream(name):
    text = hostile.SPLITTER_INPUTS[name](8000)
    s = SentenceSplitter()
    out: list[str] = []
    fed = 0
    for delta in hostile.chunks(text):
        out += s.feed(delta)
        fed += len(delta)
        # What is not handed out yet is never more than one sentence's limit.
        assert len(text[:fed].replace(" ", "")) - sum(len(x.replace(" ", "")) for x in out) <= MAX_SENTENCE
    assert len(out) >= 8000 // MAX_SENTENCE - 1
    assert all(len(x) <= MAX_SENTENCE for x in out)
    assert "".join(out + [s.flush() or ""]).replace(" ", "") == text.replace(" ", "")


@pytest.mark.parametrize("size", [1, 3, 64])
@pytest.mark.parametrize("name", sorted(hostile.SPLITTER_INPUTS))
def test_cost_is_linear_in_the_reply(name, size, monkeypatch):
    reads = count_reads(monkeypatch, iris_voice.llm)
    bound = 6  # characters read per character of the reply, at most

    def cost(n: int) -> tuple[int, SentenceSplitter]:
        before, s = reads.chars, SentenceSplitter()
        for delta in hostile.chunks(hostile.SPLITTER_INPUTS[name](n), size):
            s.feed(delta)
            if reads.chars - before > bound * n:
                break  # already past the bound: a quadratic splitter fails now, not in an hour
        s.flush()
        return reads.chars - before, s

    (read_small, small), (read_large, large) = cost(1000), cost(16000)
    # What its regexes read, and what it counts itself (its look-backs and cuts too):
    # 16 times the text costs about 16 times the work, not 256 times.
    assert read_large <= bound * 16000 and read_large <= 20 * read_small
    assert large.examined <= bound * 16000 and large.examined <= 20 * small.examined
