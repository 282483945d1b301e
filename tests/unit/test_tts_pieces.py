"""A run-on text is synthesized in pieces: no synthesis step is given more than
``MAX_PIECE_CHARS`` (Piper's decoder holds a whole sentence's audio in its tensors; five
2,000-character sentences grew the hub by 828 MB), and an ordinary sentence is one step."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from iris_voice.config import TtsConfig
from iris_voice.speech.tts import MAX_PIECE_CHARS, PiperSynthesizer, pieces


def test_an_ordinary_reply_is_one_piece():
    text = "The capital of France is Paris. It has about two million people."
    assert pieces(text) == [text]


def test_a_run_on_is_cut_at_its_clause_breaks_then_its_spaces():
    text = (
        "The fox, who was quick, jumped over the dog; then it ran across the field and into the "
        "forest where it met a bear, a wolf and an owl sitting on a branch of an old oak tree."
    )
    cut = pieces(text)
    assert len(cut) == 2 and cut[0].endswith("a bear,") and " ".join(cut) == text
    words = " ".join(["words"] * 400)
    assert all(len(p) <= MAX_PIECE_CHARS for p in pieces(words)) and " ".join(pieces(words)) == words
    assert [len(p) for p in pieces("a" * 400)] == [160, 160, 80]  # one word longer than a piece


def test_each_piece_is_its_own_synthesis_step(monkeypatch):
    try:
        tts = PiperSynthesizer(TtsConfig())
    except Exception as exc:  # the voice package is part of the dev requirements
        pytest.skip(f"the packaged Piper voice is not installed: {exc}")
    given: list[str] = []

    def start(text: str):
        given.append(text)
        return iter([np.ones(10, np.int16)])

    monkeypatch.setattr(tts, "_start", start)
    monkeypatch.setattr(tts, "_next", lambda chunks: next(chunks, None))

    async def spoken(text: str) -> int:
        return len([chunk async for chunk in tts.stream(text)])

    assert asyncio.run(spoken(" ".join(["words"] * 400))) == len(given) > 1
    assert max(len(g) for g in given) <= MAX_PIECE_CHARS
    given.clear()
    assert asyncio.run(spoken("Short and sweet.")) == 1 and given == ["Short and sweet."]
