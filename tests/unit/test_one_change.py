"""One change asked, one change made: the rest of the round is not generated."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from iris_voice.config import LlmConfig
from iris_voice.conversation.responder import ask
from iris_voice.conversation.toolpick import change_made
from iris_voice.llm.client import ChatChunk, OllamaBackend
from iris_voice.tools.registry import ToolRegistry, tool_from_function
from tests.support.fakes import chat_assistant
from tools.testbed.servers import scripted_server

MODEL = "qwen2.5-coder:1.5b"  # the name the scripted server serves

FACTS: list[str] = []


def save_fact(fact: str) -> str:
    """Store a fact about the user."""
    FACTS.append(fact)
    return f"Saved: {fact}."


def read_facts() -> str:
    """Every stored fact."""
    return "; ".join(FACTS) or "nothing"


def registry() -> ToolRegistry:
    return ToolRegistry([tool_from_function(save_fact), tool_from_function(read_facts)])


class TwoCallBackend:
    """Streams a reply of two calls, each in its own part as Ollama sends them, and notes
    how far the reader took it before the reply was closed."""

    name = "two-calls"
    formats = False

    def __init__(self, *calls: tuple[str, dict[str, Any]], text: bool = False) -> None:
        self.calls = calls
        self.text = text
        self.sent = 0
        self.closed_early = False
        self.requests = 0

    async def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        options: dict[str, Any] | None = None,
        fmt: dict[str, Any] | None = None,
    ) -> AsyncIterator[ChatChunk]:
        if (options or {}).get("num_predict") == 1:
            yield ChatChunk(done=True)
            return
        self.requests += 1
        if self.requests > 1:  # a later round: words about what was done
            yield ChatChunk(content="Done.")
            yield ChatChunk(done=True)
            return
        finished = False
        try:
            for name, args in self.calls:
                self.sent += 1
                if self.text:  # a call written as text (how the 1.5B model often writes them)
                    yield ChatChunk(content=f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n")
                    yield ChatChunk(content="</tool_call>\n")
                else:
                    yield ChatChunk(tool_calls=((name, args),))
            finished = True
            yield ChatChunk(done=True, prompt_tokens=10, completion_tokens=40)
        finally:
            self.closed_early = not finished


@pytest.fixture(autouse=True)
def _clear_facts():
    FACTS.clear()


@pytest.mark.parametrize("text", [False, True], ids=["native", "written"])
async def test_one_change_asked_ends_the_round_at_its_call(text: bool):
    backend = TwoCallBackend(
        ("save_fact", {"fact": "Bob likes chess"}), ("save_fact", {"fact": "Bob plays chess"}), text=text
    )
    loop = chat_assistant(backend, registry())
    trace = await ask(loop, "Remember that Bob likes chess.")
    assert FACTS == ["Bob likes chess"]  # the invented second fact was never stored
    assert backend.sent == 1 and backend.closed_early  # the reply was closed: generation stops
    assert [c["name"] for c in trace.tool_calls] == ["save_fact"]
    assert trace.extra.get("cut") is True


@pytest.mark.parametrize(
    "request_",
    [
        "Remember that Bob likes chess and that Ann likes go.",  # two things joined
        "Create a branch called beds and switch to it.",  # two verbs of changing
        "What does Bob like?",  # a question: no change asked
    ],
)
async def test_more_than_one_change_or_none_reads_the_whole_round(request_: str):
    backend = TwoCallBackend(("save_fact", {"fact": "one"}), ("save_fact", {"fact": "two"}))
    loop = chat_assistant(backend, registry())
    await ask(loop, request_)
    assert backend.sent == 2 and not backend.closed_early
    assert FACTS == ["one", "two"]


async def test_a_read_before_the_change_does_not_end_the_round():
    backend = TwoCallBackend(("read_facts", {}), ("save_fact", {"fact": "Bob likes chess"}))
    loop = chat_assistant(backend, registry())
    await ask(loop, "Remember that Bob likes chess.")
    assert backend.sent == 2 and FACTS == ["Bob likes chess"]


def test_change_made_needs_a_call_that_changes_something():
    reg = registry()
    asked = "Remember that Bob likes chess."
    assert change_made(asked, reg, [("save_fact", {"fact": "x"})])
    assert not change_made(asked, reg, [("read_facts", {})])
    assert not change_made(asked, reg, [("no_such_tool", {})])
    assert not change_made("Set a pasta timer for 8 minutes and a tea timer for 3.", reg, [("save_fact", {})])


@pytest.fixture(scope="module")
def server():
    with ExitStack() as stack:
        yield scripted_server(stack)


def _call(name: str, args: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>\n"


async def test_over_the_wire_the_server_stops_generating_after_the_change(server):
    """IRIS's Ollama adapter and the test server (each call sent as soon as it is complete,
    as Ollama does): the reply is closed at the first change and the server stops."""
    reply = _call("save_fact", {"fact": "Bob likes chess"}) + _call("save_fact", {"fact": "Bob plays chess"})
    reply += "and then some words nobody waits for. " * 40  # ~12 s at this pace if not stopped
    httpx.post(
        f"{server}/_script", json={"replies": [{"text": reply, "chunk": 8, "delay": 0.05}]}, timeout=30
    ).raise_for_status()
    first = len(httpx.get(f"{server}/_script", timeout=30).json()["requests"])  # this turn's first
    llm = LlmConfig(host=server, model=MODEL, temperature=0.0)
    trace = await ask(chat_assistant(OllamaBackend(llm), registry(), llm), "Remember that Bob likes chess.")
    assert FACTS == ["Bob likes chess"] and [c["name"] for c in trace.tool_calls] == ["save_fact"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the server notices the closed connection soon after
        cut = httpx.get(f"{server}/_script", timeout=30).json()["requests"][first]
        if "stopped" in cut:
            break
        await asyncio.sleep(0.1)
    assert cut.get("stopped") is True and cut["finished"] is False
