"""Thinking models: IRIS asks for no thinking, and reasoning that comes anyway is never spoken.

The wire tests replay Ollama streams through the test server (``--scripted``, a ``wire``
reply) to IRIS's real Ollama adapter and chat loop. The streams in ``tests/support/streams``
follow Ollama's ``/api/chat`` format for a thinking model: reasoning in the message's
``thinking`` field before a structured tool call, and, as some versions and templates still
send it, ``<think>…</think>`` written into the content before the answer.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from iris_voice.config import LlmConfig
from iris_voice.conversation.responder import ask
from iris_voice.llm.client import OllamaBackend
from iris_voice.llm.thinking import ThinkSplitter
from tests.support.fakes import builtin_registry, chat_assistant
from tools.testbed.servers import scripted_server

STREAMS = Path(__file__).parents[1] / "support" / "streams"
MODEL = "qwen2.5-coder:1.5b"  # the name the scripted server serves; the stream's own is replaced


def _split(pieces: list[str]) -> tuple[str, str]:
    splitter, content, thinking = ThinkSplitter(), "", ""
    for piece in pieces:
        c, t = splitter.feed(piece)
        content, thinking = content + c, thinking + t
    c, t = splitter.flush()
    return content + c, thinking + t


TEXT = "<think>\nCanberra, not Sydney.\n</think>\n\nThe capital is Canberra. <b>x</b> <thin"


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 11, len(TEXT)])
def test_think_tags_are_split_out_wherever_the_deltas_cut_them(step):
    content, thinking = _split([TEXT[i : i + step] for i in range(0, len(TEXT), step)])
    assert thinking == "\nCanberra, not Sydney.\n"
    # Other tags and an unfinished "<thin" at the end stay content.
    assert content == "The capital is Canberra. <b>x</b> <thin"


def test_reasoning_left_open_at_the_end_is_never_content():
    assert _split(["<think>still reasoning when the reply ", "was cut"]) == (
        "",
        "still reasoning when the reply was cut",
    )


@pytest.fixture(scope="module")
def server():
    with ExitStack() as stack:
        yield scripted_server(stack)


def _replay(url: str, name: str) -> None:
    lines = [json.loads(line) for line in (STREAMS / name).read_text().splitlines()]
    httpx.post(f"{url}/_script", json={"replies": [{"wire": lines}]}, timeout=30).raise_for_status()


def _requests(url: str) -> list[dict]:
    return httpx.get(f"{url}/_script", timeout=30).json()["requests"]


async def test_a_thinking_model_calls_a_tool_and_only_the_answer_is_spoken(server):
    _replay(server, "thinking-field-tool-call.ndjson")
    llm = LlmConfig(host=server, model=MODEL, temperature=0.0)
    trace = await ask(chat_assistant(OllamaBackend(llm), builtin_registry()), "What time is it in Tokyo?")
    assert [c["name"] for c in trace.tool_calls] == ["get_current_time"] and trace.tool_calls[0]["ok"]
    assert "tokyo" in trace.reply.lower() and "user wants" not in trace.reply.lower()
    assert _requests(server)[-1]["think"] is False  # asked for no thinking, explicitly


async def test_think_tags_in_the_content_are_not_spoken(server):
    _replay(server, "think-tags-in-content.ndjson")
    llm = LlmConfig(host=server, model=MODEL, temperature=0.0)
    trace = await ask(
        chat_assistant(OllamaBackend(llm), builtin_registry()), "What is the capital of Australia?"
    )
    assert trace.reply == "The capital of Australia is Canberra."
