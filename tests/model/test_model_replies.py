"""Ordinary requests served, and what IRIS cannot do still refused, with the real model.

IRIS at its defaults (fast path, retrieval) on Qwen2.5-Coder-1.5B behind the
Ollama-protocol test server: the requests a new user found refused or mishandled —
a name to use, a word game, a route question, "cancel it" and "make it five minutes"
after a timer, "half past six", "a couple of minutes" — and beside them requests for
things no tool of IRIS's can do, which must stay refused with nothing changed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, LlmConfig, ToolsConfig
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.timers.store import TimerStore

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]

REFUSED = re.compile(r"\b(?:can't|cannot|can not|unable|not able|sorry|could not)\b", re.IGNORECASE)


def make_iris(server, tmp_path: Path) -> tuple[Assistant, TimerStore]:
    """IRIS at its defaults on the test model, its timers in ``tmp_path``."""
    db = tmp_path / "timers.db"
    cfg = Config(
        llm=LlmConfig(host=server.url, model="qwen2.5-coder:1.5b", temperature=0.0),
        tools=ToolsConfig(timezone="UTC", timers_db=str(db)),
    )
    return build_app(cfg).responder, TimerStore(db)


def running(store: TimerStore) -> list[tuple[str, float]]:
    """(label, seconds left) of every active timer and reminder."""
    now = datetime.now().timestamp()
    return sorted((r.label, r.left(now)) for r in store.active())


async def test_a_name_to_use_is_taken_and_remembered(ollama_server, tmp_path):
    iris, store = make_iris(ollama_server, tmp_path)
    first = await ask(iris, "Call me Sam from now on.")
    assert not REFUSED.search(first.reply), first.to_dict()
    assert running(store) == []  # no reminder made of it
    later = await ask(iris, "What's my name?")
    assert "sam" in later.reply.lower(), later.to_dict()


@pytest.mark.parametrize(
    "text",
    ["Can you play a word game with me?", "Is Sacramento on the way from San Francisco to Lake Tahoe?"],
)
async def test_a_request_words_can_serve_is_answered(ollama_server, tmp_path, text):
    iris, store = make_iris(ollama_server, tmp_path)
    trace = await ask(iris, text)
    assert trace.reply.strip() and not REFUSED.search(trace.reply), trace.to_dict()
    assert running(store) == []


async def test_cancel_it_cancels_the_timer_just_set(ollama_server, tmp_path):
    iris, store = make_iris(ollama_server, tmp_path)
    await ask(iris, "Set a pasta timer for 8 minutes.")
    assert [label for label, _ in running(store)] == ["pasta"]
    trace = await ask(iris, "Actually, cancel it.")
    assert running(store) == [], trace.to_dict()
    assert "cancel" in trace.reply.lower()


async def test_make_it_five_minutes_changes_the_timer_and_cancel_it_ends_it(ollama_server, tmp_path):
    iris, store = make_iris(ollama_server, tmp_path)
    await ask(iris, "Set an eggs timer for 4 minutes.")
    await ask(iris, "make it five minutes")
    timers = running(store)
    assert len(timers) == 1 and timers[0][0] == "eggs" and 280 < timers[0][1] <= 300, timers
    trace = await ask(iris, "cancel it")
    assert running(store) == [], trace.to_dict()


async def test_everyday_spoken_times_are_understood(ollama_server, tmp_path):
    iris, store = make_iris(ollama_server, tmp_path)
    trace = await ask(iris, "Set a timer for a couple of minutes.")
    assert [round(left / 10) for _, left in running(store)] == [12], trace.to_dict()
    trace = await ask(iris, "Remind me at half past six to call mom.")
    reminder = [r for r in store.active() if r.kind == "reminder"]
    assert [r.label for r in reminder] == ["call mom"], trace.to_dict()
    due = datetime.fromtimestamp(reminder[0].due_at or 0, UTC)  # IRIS's zone here is UTC
    assert (due.hour % 12, due.minute) == (6, 30), trace.to_dict()


@pytest.mark.parametrize(
    "text",
    ["Text my brother that I'm on my way.", "Order me a taxi to the station.", "Turn on the kitchen lights."],
)
async def test_what_no_tool_can_do_is_still_refused_with_nothing_changed(ollama_server, tmp_path, text):
    iris, store = make_iris(ollama_server, tmp_path)
    await ask(iris, "Set a pasta timer for 8 minutes.")
    trace = await ask(iris, text)
    assert REFUSED.search(trace.reply), trace.to_dict()
    assert [label for label, _ in running(store)] == ["pasta"]
