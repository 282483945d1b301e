"""Follow-ups: "cancel it", "make it five minutes" act on the timer the conversation last spoke of."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from iris_voice.config import LlmConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.fastpath import FastPath, IntentMatcher
from iris_voice.conversation.followup import referent, resolved
from iris_voice.conversation.history import ToolMode, tool_turn_messages, written_calls
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.tools.builtin.calculator import make_calculator_tool
from iris_voice.tools.builtin.clock import make_clock_tool
from iris_voice.tools.builtin.timers import make_timer_tools
from iris_voice.tools.intents import REFERRED
from iris_voice.tools.registry import ToolRegistry, ToolResult
from tests.support.fakes import ScriptedBackend, builtin_registry
from tests.support.timer_harness import Harness


@pytest.fixture(scope="module")
def matcher() -> IntentMatcher:
    return IntentMatcher(builtin_registry().intents())


class Setup:
    """A fast path and a scripted model over timers on a fake clock."""

    def __init__(self, tmp_path: Path, matcher: IntentMatcher) -> None:
        self.h = Harness(tmp_path)
        clock = make_clock_tool("UTC", now=lambda: datetime.fromtimestamp(self.h.clock.now(), UTC))
        self.registry = ToolRegistry(
            [clock, make_calculator_tool(), *make_timer_tools(self.h.service, "UTC")]
        )
        self.matcher = matcher

    def responder(self, *replies) -> tuple[Assistant, ScriptedBackend]:
        backend = ScriptedBackend(*replies)
        chat = ChatLoop(backend, self.registry, LlmConfig())
        return Assistant(chat, fast=FastPath(self.registry, self.matcher)), backend

    def running(self) -> dict[str, float]:
        now = self.h.clock.now()
        return {r.label: round(r.left(now)) for r in self.h.store.active()}


@pytest.fixture
async def s(tmp_path: Path, matcher: IntentMatcher) -> AsyncIterator[Setup]:
    setup = Setup(tmp_path, matcher)
    yield setup
    setup.h.store.close()


def _call(name: str, args: dict) -> ToolResult:
    return ToolResult(name, args, True, "done", 1.0)


@pytest.mark.parametrize("mode", [ToolMode.NATIVE, ToolMode.TEXT])
def test_the_referent_is_the_newest_call_that_names_a_timer(mode: ToolMode) -> None:
    registry = builtin_registry()
    turns = []
    for result in (
        _call("set_timer", {"duration": "480 seconds", "label": "pasta"}),
        _call("calculator", {}),
    ):
        calls = written_calls([result]) if mode == ToolMode.TEXT else ""
        turns += [{"role": "user", "content": "…"}, *tool_turn_messages(mode, calls, [result])]
    assert referent(turns, registry) == "pasta"  # the calculator names no timer
    eggs = _call("set_timer", {"duration": "240 seconds"})
    unnamed = [
        *turns,
        *tool_turn_messages(mode, written_calls([eggs]) if mode == ToolMode.TEXT else "", [eggs]),
    ]
    assert referent(unnamed, registry) == "240 seconds"  # an unnamed timer: found by its duration
    gone = _call("cancel_timer", {"which": "pasta"})
    after = [
        *turns,
        *tool_turn_messages(mode, written_calls([gone]) if mode == ToolMode.TEXT else "", [gone]),
    ]
    assert referent(after, registry) is None  # cancelled: "it" means nothing now
    assert referent([], registry) is None


def test_resolved_fills_it_in() -> None:
    assert resolved({"which": REFERRED}, "pasta") == {"which": "pasta"}
    assert resolved({"which": REFERRED}, "") == {"which": ""}  # the tool's "the only one"
    plain = {"which": "tea"}
    assert resolved(plain, "") is plain


async def test_cancel_it_cancels_the_timer_just_set_and_no_other(s: Setup) -> None:
    await s.h.service.set_timer(600, "rice")
    responder, backend = s.responder()  # nothing scripted: asking the model would fail the test
    assert (
        await ask(responder, "Set a pasta timer for 8 minutes.")
    ).reply == "Pasta timer set for 8 minutes."
    trace = await ask(responder, "Actually, cancel it.")
    assert trace.reply == "Cancelled the pasta timer."
    assert s.running() == {"rice": 600} and backend.requests == []


async def test_make_it_five_minutes_changes_the_timer_and_sets_no_second_one(s: Setup) -> None:
    responder, backend = s.responder()
    await ask(responder, "Set an eggs timer for 4 minutes.")
    s.h.clock.advance(30)
    trace = await ask(responder, "Make it five minutes.")
    assert trace.reply == "Added 1 minute 30 seconds to the eggs timer. It has 5 minutes left."
    assert s.running() == {"eggs": 300}
    assert (await ask(responder, "add two more minutes")).reply.endswith("It has 7 minutes left.")
    assert (await ask(responder, "pause it")).reply == "Paused the eggs timer with 7 minutes left."
    assert (await ask(responder, "cancel it")).reply == "Cancelled the eggs timer."
    assert s.running() == {} and backend.requests == []


async def test_it_with_nothing_to_refer_to_goes_to_the_model(s: Setup) -> None:
    responder, backend = s.responder("Which timer do you mean?")
    trace = await ask(responder, "cancel it")
    assert trace.reply == "Which timer do you mean?" and len(backend.requests) == 1


async def test_it_with_no_referent_is_the_one_timer_running_and_two_go_to_the_model(s: Setup) -> None:
    await s.h.service.set_timer(600, "rice")  # set before this conversation (another day, a restart)
    responder, backend = s.responder("Which one, the rice or the tea timer?")
    assert (await ask(responder, "Pause it.")).reply == "Paused the rice timer with 10 minutes left."
    await s.h.service.set_timer(300, "tea")
    trace = await ask(responder, "Okay, cancel that one.")
    assert trace.reply == "Which one, the rice or the tea timer?" and len(backend.requests) == 1
    assert set(s.running()) == {"rice", "tea"}


async def test_a_model_call_on_the_referent_is_grounded_when_the_request_refers_back(s: Setup) -> None:
    await s.h.service.set_timer(600, "rice")
    # the fast path off: the model makes the call, and grounding sees no timer named
    backend = ScriptedBackend([("cancel_timer", {"which": "pasta"})])
    responder = Assistant(ChatLoop(backend, s.registry, LlmConfig()))
    responder.conversation.add(
        [
            {"role": "user", "content": "Set a pasta timer for 8 minutes."},
            *tool_turn_messages(
                ToolMode.NATIVE, "", [_call("set_timer", {"duration": "8 minutes", "label": "pasta"})]
            ),
        ],
        open_reply="Pasta timer set for 8 minutes.",
    )
    await s.h.service.set_timer(480, "pasta")
    trace = await ask(responder, "Actually, stop that one.")
    assert trace.reply == "Cancelled the pasta timer."
    assert s.running() == {"rice": 600}
    # without the referent the same call is a guess: "rice" is not named, nothing is cancelled
    backend2 = ScriptedBackend([("cancel_timer", {"which": "rice"})], "Which timer do you mean?")
    responder2 = Assistant(ChatLoop(backend2, s.registry, LlmConfig()))
    await ask(responder2, "Actually, stop that one.")
    assert "rice" in s.running()
