"""Hostile replies through the chat loop: sentences come out while the reply still streams.

A reply that never ends a sentence (all periods, all lower case, one endless word) or
opens a ``{"`` that never closes used to be held whole until the model stopped, at a
cost that grew with the square of its length, on the event loop. Here each streams
through the chat loop, and what is streamed but not yet spoken stays within the
filter's and the splitter's limits all along.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from iris_voice.config import LlmConfig
from iris_voice.conversation.responder import ask
from iris_voice.llm.sentences import MAX_SENTENCE
from iris_voice.llm.textcalls import HOLD_LIMIT
from iris_voice.tools.registry import ToolRegistry
from tests.support.fakes import ScriptedBackend, chat_assistant
from tests.support.hostile import replies as hostile


def letters(text: str) -> int:
    """Characters other than whitespace (the loop tidies whitespace in what it says)."""
    return sum(not c.isspace() for c in text)


class WatchedBackend(ScriptedBackend):
    """Streams one reply; before each chunk it checks that at most ``held`` letters of what
    it streamed have not been ``said`` yet."""

    def __init__(self, reply: str, held: int) -> None:
        super().__init__(reply)
        self.held = held
        self.streamed = self.unsaid = 0

    def said(self, sentence: str) -> None:
        """The loop yielded ``sentence``."""
        self.unsaid -= letters(sentence)

    async def stream(self, messages: Any, tools: Any, options: Any = None) -> Any:
        async for chunk in super().stream(messages, tools, options):
            assert self.unsaid <= self.held, f"{self.unsaid} letters streamed and not spoken"
            self.streamed += len(chunk.content)
            self.unsaid += letters(chunk.content)
            yield chunk


async def spoken_while_streaming(reply: str, held: int) -> list[tuple[int, str]]:
    """The sentences the chat loop yields, each with how much of the reply had streamed."""
    backend = WatchedBackend(reply, held)
    got = []
    async for sentence in chat_assistant(backend, ToolRegistry()).sentences("go on"):
        backend.said(sentence)
        got.append((backend.streamed, sentence))
    return got


@pytest.mark.parametrize(
    ("reply", "held"),
    [
        (hostile.lowercase_sentences(16_000), MAX_SENTENCE),
        (hostile.one_word(16_000), MAX_SENTENCE),
    ],
    ids=["lowercase", "one-word"],
)
async def test_a_reply_that_never_ends_a_sentence_is_spoken_as_it_streams(reply, held):
    got = await spoken_while_streaming(reply, held + 3)  # 3: the chunk in hand
    assert sum(letters(s) for _, s in got) == letters(reply)
    assert len(got) >= len(reply) // MAX_SENTENCE


async def test_a_json_blob_that_never_ends_is_not_spoken_and_the_turn_ends():
    # Call syntax is never spoken (any brace style): the blob's sentences are dropped as they come.
    reply = "Hmm" + hostile.json_blob(16_000)
    trace = await ask(chat_assistant(ScriptedBackend(reply), ToolRegistry()), "go on")
    assert "{" not in trace.reply and "}" not in trace.reply and len(trace.reply) < 200


async def test_two_thousand_periods_do_not_wait_for_the_end():
    reply = "Hmm" + hostile.dots(2000) + " ok."
    got = await spoken_while_streaming(reply, len(reply))
    # Sentences of periods alone have nothing to say and are dropped; the first is "Hmm…".
    assert got[0][1].startswith("Hmm.") and got[0][0] <= MAX_SENTENCE + 3
    assert got[-1][1].endswith("ok.")


async def test_the_turn_records_the_whole_reply():
    reply = hostile.lowercase_sentences(4000)
    trace = await ask(chat_assistant(ScriptedBackend(reply), ToolRegistry()), "go on")
    assert letters(trace.reply) == letters(reply)


async def test_a_call_too_long_to_hold_is_spoken_and_not_run() -> None:
    """What the speech filter released was heard, so it is not a call: nothing runs twice over."""
    padded = json.dumps({"name": "multiply", "arguments": {"a": 2, "b": 3, "note": "x" * (2 * HOLD_LIMIT)}})
    ran: list[tuple[int, int]] = []

    def multiply(a: int, b: int, note: str = "") -> int:
        """Multiply two integers."""
        ran.append((a, b))
        return a * b

    tools = ToolRegistry()
    tools.add_function(multiply)
    loop = chat_assistant(ScriptedBackend(padded, "Done."), tools, LlmConfig())
    trace = await ask(loop, "2 times 3")
    assert ran == [] and trace.tool_calls == []
    # and a call the filter did hold is run, as before
    ran.clear()
    short = json.dumps({"name": "multiply", "arguments": {"a": 2, "b": 3}})
    loop = chat_assistant(ScriptedBackend(short, "It is 6."), tools, LlmConfig())
    trace = await ask(loop, "2 times 3")
    assert ran == [(2, 3)] and trace.reply == "It is 6."
