"""The fast-path responder: answers without the model, falls through to it, and shares its history."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from iris_voice.cli.main import main
from iris_voice.config import Config, IntentsConfig, LlmConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.fastpath import FastPath, IntentMatcher
from iris_voice.conversation.responder import Assistant, ask, build_responder
from iris_voice.events import EventBus, SentenceReady, ToolCalled, TurnFinished, TurnStarted
from iris_voice.tools.builtin.calculator import make_calculator_tool
from iris_voice.tools.builtin.clock import make_clock_tool
from iris_voice.tools.builtin.timers import make_timer_tools
from iris_voice.tools.registry import ToolRegistry
from tests.support.fakes import ScriptedBackend, builtin_registry
from tests.support.timer_harness import Harness

TOKYO_REPLY = "It is 12:00 AM on Saturday, January 16, 2027 in Tokyo."  # T0 is Friday 3:00 PM UTC


@pytest.fixture(scope="module")
def matcher() -> IntentMatcher:
    return IntentMatcher(builtin_registry().intents())


class Setup:
    """A fast-path responder over a scripted model, with timers on a fake clock."""

    def __init__(self, tmp_path: Path, matcher: IntentMatcher, tools: tuple[str, ...] | None = None) -> None:
        self.h = Harness(tmp_path)
        clock = make_clock_tool("UTC", now=lambda: datetime.fromtimestamp(self.h.clock.now(), UTC))
        every = ToolRegistry([clock, make_calculator_tool(), *make_timer_tools(self.h.service, "UTC")])
        self.registry = every.filtered(tools)
        self.bus = EventBus()
        self.events: list = []
        self.bus.subscribe(self.events.append)
        self.matcher = matcher

    def responder(self, *replies, **llm) -> tuple[Assistant, ScriptedBackend]:
        backend = ScriptedBackend(*replies)
        chat = ChatLoop(backend, self.registry, LlmConfig(**llm), publish=self.bus.publish)
        fast = FastPath(self.registry, self.matcher, self.bus.publish)
        return Assistant(chat, fast=fast, publish=self.bus.publish), backend


@pytest.fixture
async def s(tmp_path: Path, matcher: IntentMatcher) -> AsyncIterator[Setup]:
    setup = Setup(tmp_path, matcher)
    yield setup
    setup.h.store.close()


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("what time is it", "It is 3:00 PM on Friday, January 15, 2027."),
        ("What time is it in Tokyo?", TOKYO_REPLY),
        ("what's the date", "Today is Friday, January 15, 2027."),
        ("what is twenty three times forty seven", "23 times 47 is 1081."),
        ("square root of 144", "The square root of 144 is 12."),
        ("what is 15% of 80?", "15 percent of 80 is 12."),
        ("calculate 17 minus 58", "17 minus 58 is minus 41."),
        ("what is two to the power of ten", "2 to the power of 10 is 1024."),
        ("remind me to call mom in two hours", "I'll remind you to call mom at 5:00 PM."),
        ("set a pasta timer for eight minutes", "Pasta timer set for 8 minutes."),
        ("how much time is left on my timer", "No timers are running."),
    ],
)
async def test_everyday_commands_are_answered_without_the_model(s: Setup, text: str, reply: str) -> None:
    responder, backend = s.responder()  # no scripted reply: asking the model would fail the test
    trace = await ask(responder, text)
    assert trace.reply == reply
    assert backend.requests == []
    d = trace.to_dict()
    assert d["execution_path"] == "fast" and d["rounds"] == 0 and len(d["tool_calls"]) == 1
    assert d["timings_ms"]["total"] is not None and d["intent"]["match_ms"] >= 0


async def test_a_timer_conversation_on_the_fast_path(s: Setup) -> None:
    responder, backend = s.responder()
    say = [
        ("set a pasta timer for eight minutes", "Pasta timer set for 8 minutes."),
        (
            "add two minutes to the pasta timer",
            "Added 2 minutes to the pasta timer. It has 9 minutes 40 seconds left.",
        ),
        ("pause the pasta timer", "Paused the pasta timer with 9 minutes 40 seconds left."),
        ("how long is left on the pasta timer", "The pasta timer is paused with 9 minutes 40 seconds left."),
        ("resume the timer", "Resumed the pasta timer with 9 minutes 40 seconds left."),
        (
            "take 1 minute off the timer",
            "Took 1 minute off the pasta timer. It has 8 minutes 40 seconds left.",
        ),
        ("timer status", "You have 1 timer: pasta with 8 minutes 40 seconds left."),
        ("cancel all timers", "Cancelled the pasta timer."),
    ]
    for text, reply in say:
        assert (await ask(responder, text)).reply == reply
        if text == "set a pasta timer for eight minutes":
            s.h.clock.advance(20)
        if text == "pause the pasta timer":
            s.h.clock.advance(100)  # paused: nothing runs down
    assert backend.requests == []
    assert [r.state for r in s.h.store.list()] == ["cancelled"]
    assert responder.conversation.turns[-1][-1]["content"] == "Cancelled the pasta timer."


async def test_timers_named_without_the_word_or_by_their_place(s: Setup) -> None:
    responder, backend = s.responder()
    say = [
        ("set a bread timer for 25 minutes", "Bread timer set for 25 minutes."),
        ("and another one for ten minutes for the laundry", "Laundry timer set for 10 minutes."),
        ("Pause the bread one.", "Paused the bread timer with 25 minutes left."),
        ("Okay, start it again.", "Resumed the bread timer with 25 minutes left."),  # "it": bread
        ("Stop the first one.", "Cancelled the bread timer."),  # set first
        ("How much time is on the other one?", "You have 1 timer: laundry with 10 minutes left."),
    ]
    for text, reply in say:
        assert (await ask(responder, text)).reply == reply, text
    assert backend.requests == []
    assert [r.label for r in s.h.store.active()] == ["laundry"]


async def test_the_fast_path_publishes_the_turn_events(s: Setup) -> None:
    responder, _ = s.responder("You have no timer.")
    await ask(responder, "add 2 minutes to the timer")  # refused (no timer): the model answers
    s.events.clear()
    await s.h.service.set_timer(480, "pasta")
    await ask(responder, "add 2 minutes to the timer")
    kinds = [type(e) for e in s.events]
    assert kinds == [TurnStarted, ToolCalled, SentenceReady, SentenceReady, TurnFinished]
    finished = s.events[-1]
    assert finished.execution_path == "fast" and finished.reply.startswith("Added 2 minutes")


@pytest.mark.parametrize(
    "text", ["how long is the Nile", "what time did the movie start", "remind me what we talked about"]
)
async def test_everything_else_goes_to_the_model(s: Setup, text: str) -> None:
    responder, backend = s.responder("Let me think about that.")
    trace = await ask(responder, text)
    assert len(backend.requests) == 1 and backend.requests[0]["messages"][-1]["content"] == text
    assert trace.reply == "Let me think about that." and trace.execution_path == "native"
    assert "intent" not in trace.to_dict()


async def test_a_refused_tool_call_goes_to_the_model_and_leaves_no_fast_turn(s: Setup) -> None:
    responder, backend = s.responder("You have no pasta timer.", "Dividing by zero is undefined.")
    trace = await ask(responder, "cancel the pasta timer")
    assert trace.reply == "You have no pasta timer." and len(backend.requests) == 1
    assert trace.to_dict()["intent"]["declined"].startswith("Error: No timers are running")
    assert [m["role"] for m in responder.conversation.turns[0]] == ["user", "assistant"]
    assert (await ask(responder, "what is 10 divided by 0")).reply == "Dividing by zero is undefined."


async def test_a_disabled_tool_is_never_run_by_the_fast_path(tmp_path: Path, matcher: IntentMatcher) -> None:
    setup = Setup(tmp_path, matcher, tools=("get_current_time",))
    responder, backend = setup.responder("Four.")
    assert (await ask(responder, "what is 2 plus 2")).reply == "Four."
    assert len(backend.requests) == 1
    setup.h.store.close()


async def test_a_follow_up_question_sees_the_fast_turn(s: Setup) -> None:
    paris = [("get_current_time", {"timezone": "Paris"})]
    responder, backend = s.responder(paris)
    assert (await ask(responder, "what time is it in Tokyo")).reply == TOKYO_REPLY
    trace = await ask(responder, "and in Paris?")
    assert trace.reply == "It is 4:00 PM on Friday, January 15, 2027 in Paris."  # direct return
    messages = backend.requests[0]["messages"]
    assert messages[1:] == [
        {"role": "user", "content": "what time is it in Tokyo"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_current_time", "arguments": {"timezone": "Tokyo"}}}],
        },
        {
            "role": "tool",
            "content": "It is 12:00 AM on Saturday, January 16, 2027 in Tokyo (Asia/Tokyo, UTC+09:00).",
            "tool_name": "get_current_time",
        },
        {"role": "user", "content": "and in Paris?"},
    ]


async def test_in_text_tool_mode_the_fast_turn_is_written_as_text_calls(s: Setup) -> None:
    responder, backend = s.responder("Noted.", tool_mode="text")
    await ask(responder, "what is 6 times 7")
    await ask(responder, "thanks")
    user, call, result, thanks = backend.requests[0]["messages"][1:]
    assert user == {"role": "user", "content": "what is 6 times 7"}
    assert call["role"] == "assistant" and call["content"].startswith("<tool_call>\n{")
    assert json.loads(call["content"].split("\n")[1]) == {
        "name": "calculator",
        "arguments": {"expression": "6 * 7"},
    }
    assert (
        result["role"] == "user"
        and "<tool_response>" in result["content"]
        and "6 * 7 = 42" in result["content"]
    )
    assert thanks == {"role": "user", "content": "thanks"}


async def test_a_barge_in_keeps_the_tool_turn(s: Setup) -> None:
    responder, _ = s.responder()
    await s.h.service.set_timer(480, "pasta")
    gen = responder.sentences("add 2 minutes to the pasta timer")
    assert await gen.__anext__() == "Added 2 minutes to the pasta timer."
    await gen.aclose()
    assert s.h.store.pending()[0].due_at == s.h.clock.now() + 600  # the tool ran all the same
    responder.conversation.amend_last("Added 2 minutes to the pasta timer.")
    assert [m["role"] for m in responder.conversation.turns[-1]] == [
        "user",
        "assistant",
        "tool",
    ]  # the tool ran: kept
    assert responder.conversation.turns[-1][-1]["content"].startswith("Added 2 minutes to the pasta timer.")


async def test_build_responder_follows_the_config(s: Setup) -> None:
    fast = build_responder(Config(), s.registry)
    assert isinstance(fast.fast, FastPath) and isinstance(fast.chat, ChatLoop)
    assert build_responder(Config(intents=IntentsConfig(enabled=False)), s.registry).fast is None


def _cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))  # no daemon to talk to
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens: the model is unreachable
    monkeypatch.delenv("IRIS_CONFIG", raising=False)
    code = main(list(args))
    return code, capsys.readouterr()


def test_iris_ask_reports_the_fast_path(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    code, out = _cli(monkeypatch, tmp_path, capsys, "ask", "--local", "--json", "what time is it in Tokyo")
    assert code == 0, out.err
    trace = json.loads(out.out)
    assert trace["execution_path"] == "fast" and trace["tool_calls"][0]["name"] == "get_current_time"
    assert trace["reply"].startswith("It is ") and trace["reply"].endswith(" in Tokyo.")


def test_with_intents_disabled_iris_ask_goes_to_the_model(monkeypatch, tmp_path, capsys) -> None:
    cfg = tmp_path / "cfg" / "iris" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[intents]\nenabled = false\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    code, out = _cli(monkeypatch, tmp_path, capsys, "ask", "--local", "what time is it in Tokyo")
    assert code == 69 and "llm-unreachable" in out.err
