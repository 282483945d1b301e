"""One change asked, one change made: the rest of the round is not generated."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from iris_voice.config import LlmConfig
from iris_voice.conversation.responder import ask
from iris_voice.conversation.toolpick import change_made
from iris_voice.llm.client import OllamaBackend
from iris_voice.tools.registry import ToolRegistry, tool_from_function
from tests.support.fakes import ScriptedBackend, chat_assistant
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


def _call(name: str, args: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>\n"


def two_calls(first: tuple[str, dict], second: tuple[str, dict], text: bool = False) -> ScriptedBackend:
    """A round of two calls, each in its own part as Ollama sends them (or written as text,
    as the 1.5B model often writes them), then words for any later round."""
    reply = _call(*first) + _call(*second) if text else [first, second]
    return ScriptedBackend(reply, "Done.", apart=True)


@pytest.fixture(autouse=True)
def _clear_facts():
    FACTS.clear()


@pytest.mark.parametrize("text", [False, True], ids=["native", "written"])
async def test_one_change_asked_ends_the_round_at_its_call(text: bool):
    backend = two_calls(
        ("save_fact", {"fact": "Bob likes chess"}), ("save_fact", {"fact": "Bob plays chess"}), text
    )
    loop = chat_assistant(backend, registry())
    trace = await ask(loop, "Remember that Bob likes chess.")
    assert FACTS == ["Bob likes chess"]  # the invented second fact was never stored
    assert backend.closed_early == 1  # the reply was closed: the server stops generating
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
    backend = two_calls(("save_fact", {"fact": "one"}), ("save_fact", {"fact": "two"}))
    loop = chat_assistant(backend, registry())
    await ask(loop, request_)
    assert backend.closed_early == 0 and FACTS == ["one", "two"]


async def test_a_read_before_the_change_does_not_end_the_round():
    backend = two_calls(("read_facts", {}), ("save_fact", {"fact": "Bob likes chess"}))
    loop = chat_assistant(backend, registry())
    trace = await ask(loop, "Remember that Bob likes chess.")
    # both ran: the round was closed at the change, not at the read before it
    assert [c["name"] for c in trace.tool_calls] == ["read_facts", "save_fact"]
    assert FACTS == ["Bob likes chess"] and backend.closed_early == 1


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
