"""Boost mode's control flow, with scripted planner and executor backends
(the real model: test_model_boost.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from iris_voice.config import BoostConfig, Config, LlmConfig
from iris_voice.conversation.boost import Boost, may_need_tools, planner_backend
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.responder import Assistant, ask, build_responder
from iris_voice.errors import ConfigError, LlmError
from iris_voice.events import EventBus
from iris_voice.llm.client import ChatChunk, OllamaBackend
from iris_voice.llm.openai_client import OpenAIBackend
from iris_voice.tools.registry import ToolRegistry
from tests.support.fakes import ScriptedBackend

GUIDE = "ANALYSIS: Arithmetic.\nGUIDANCE: Call multiply with a=23 and b=47."


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def registry() -> ToolRegistry:
    r = ToolRegistry()
    r.add_function(multiply)
    return r


def make(planner, *executor_replies, **boost):
    executor = ScriptedBackend(*executor_replies)
    events = []
    bus = EventBus()
    bus.subscribe(events.append)
    chat = ChatLoop(executor, registry(), LlmConfig(), publish=bus.publish)
    boost = Boost(chat, planner, BoostConfig(enabled=True, **boost))
    return Assistant(chat, boost=boost, publish=bus.publish), executor, events


async def test_summary_is_the_answer_and_the_executor_is_not_called():
    planner = ScriptedBackend("SUMMARY: Paris is the capital of France. It is on the Seine.")
    loop, executor, events = make(planner)
    got = [s async for s in loop.sentences("What is the capital of France?")]
    assert got == ["Paris is the capital of France.", "It is on the Seine."]
    assert executor.requests == []
    assert planner.requests[0]["tools"] is None  # tools reach the planner only as text
    system = planner.requests[0]["messages"][0]["content"]
    assert "multiply" in system and "SUMMARY:" in system and "GUIDANCE:" in system
    assert [type(e).__name__ for e in events] == [
        "TurnStarted",
        "SentenceReady",
        "SentenceReady",
        "TurnFinished",
    ]
    trace = events[-1].trace
    assert trace["execution_path"] == "boost"
    assert trace["boost"]["final"] == "summary"
    assert [lp["type"] for lp in trace["boost"]["loops"]] == ["summary"]
    assert trace["boost"]["planner_tokens"] == {"prompt": 10, "completion": 5}
    assert loop.conversation.turns == [
        [
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris is the capital of France. It is on the Seine."},
        ]
    ]


class GatedPlanner:
    """A planner that writes its first sentence, then waits for ``release`` before the rest."""

    name = "gated"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.finished = False

    async def stream(self, messages, tools, options=None) -> AsyncIterator[ChatChunk]:
        yield ChatChunk(content="SUMMARY: The first sentence is here. ")
        yield ChatChunk(content="The")
        await self.release.wait()
        yield ChatChunk(content=" second one comes later.")
        self.finished = True
        yield ChatChunk(done=True)


async def test_summary_is_spoken_while_the_planner_is_still_writing():
    planner = GatedPlanner()
    loop, _, _ = make(planner)
    it = loop.sentences("Tell me two things.")
    first = await asyncio.wait_for(anext(it), 5)
    assert first == "The first sentence is here." and not planner.finished
    planner.release.set()
    assert [s async for s in it] == ["The second one comes later."]


async def test_barge_in_during_a_summary_stops_the_planner_and_keeps_what_was_said():
    planner = GatedPlanner()
    loop, _, _ = make(planner)
    it = loop.sentences("Tell me two things.")
    assert await anext(it) == "The first sentence is here."
    await it.aclose()  # the user interrupted
    assert not planner.finished
    assert loop.conversation.turns[0][-1] == {"role": "assistant", "content": "The first sentence is here."}


async def test_guidance_leads_to_a_tool_call_and_the_plan_stays_out_of_history():
    planner = ScriptedBackend(GUIDE)
    loop, executor, events = make(planner, [("multiply", {"a": 23, "b": 47})], "23 times 47 is 1081.")
    trace = await ask(loop, "What is 23 times 47?")
    assert trace.reply == "23 times 47 is 1081."
    assert trace.tool_calls[0]["name"] == "multiply" and trace.tool_calls[0]["result"] == "1081"
    first = executor.requests[0]
    assert first["tools"][0]["function"]["name"] == "multiply"  # native tools for the executor
    user, note = first["messages"][1:]
    assert user == {"role": "user", "content": "What is 23 times 47?"}
    assert note["role"] == "user" and "Call multiply with a=23 and b=47." in note["content"]
    assert "Arithmetic." in note["content"]
    # The cached prefix (the executor's system prompt) is the one a direct turn sends.
    assert first["messages"][0] == loop.chat.system_message()
    history = [m["content"] for m in loop.conversation.turns[0]]
    assert not any("planner" in str(c) for c in history)
    assert loop.conversation.turns[0][0]["content"] == "What is 23 times 47?"
    assert loop.conversation.turns[0][-1]["content"] == "23 times 47 is 1081."
    boost = trace.extra["boost"]
    assert boost["final"] == "guidance" and boost["loops"][0]["type"] == "guidance"
    assert boost["loops"][0]["tool_calls"] == ["multiply"]
    assert boost["loops"][0]["executor_tokens"] == {"prompt": 20, "completion": 10}
    assert {"planner_ms", "executor_ms"} <= set(boost["loops"][0])


async def test_guided_executor_without_a_tool_call_is_replanned_with_feedback():
    planner = ScriptedBackend(
        GUIDE, "ANALYSIS: Still arithmetic.\nGUIDANCE: Call the multiply tool: a=23, b=47."
    )
    loop, executor, _ = make(
        planner, "I think it is about 1000.", [("multiply", {"a": 23, "b": 47})], "It is 1081."
    )
    got = [s async for s in loop.sentences("What is 23 times 47?")]
    assert got == ["It is 1081."]  # the unguided guess was never spoken
    again = planner.requests[1]["messages"][-1]["content"]
    assert again.startswith("Request: What is 23 times 47?") and "Attempt 2 of 3" in again
    assert "called no tool" in again and "I think it is about 1000." in again
    trace_loops = loop.conversation.turns and [
        m for m in loop.conversation.turns[0] if m["role"] == "assistant"
    ]
    assert trace_loops[-1]["content"] == "It is 1081."


async def test_garbage_planner_ends_in_a_direct_answer_after_max_loops():
    planner = ScriptedBackend("I like turtles.", "Blah blah.", "```json\n{}\n```")
    loop, executor, _ = make(planner, "Hello! How can I help?")
    trace = await ask(loop, "Hi there")
    assert trace.reply == "Hello! How can I help?"
    assert len(planner.requests) == 3
    assert "I like turtles." in planner.requests[1]["messages"][-1]["content"]
    assert planner.requests[0]["messages"][-1] == {"role": "user", "content": "Request: Hi there"}
    assert len(executor.requests) == 1
    assert [m["role"] for m in executor.requests[0]["messages"]] == ["system", "user"]  # no hint
    boost = trace.extra["boost"]
    assert [lp["type"] for lp in boost["loops"]] == ["invalid"] * 3
    assert boost["final"] == "direct" and "3 planner loops" in boost["fallback"]
    assert trace.execution_path == "boost"


class HangingPlanner:
    """A planner that never answers."""

    name = "hanging"

    async def stream(self, messages, tools, options=None) -> AsyncIterator[ChatChunk]:
        await asyncio.sleep(3600)
        yield ChatChunk()


async def test_planner_timeout_falls_back_to_a_direct_answer_at_once():
    loop, executor, _ = make(HangingPlanner(), [("multiply", {"a": 2, "b": 3})], "It is 6.", timeout_s=0.05)
    trace = await asyncio.wait_for(ask(loop, "What is 2 times 3?"), 5)
    assert trace.reply == "It is 6." and trace.tool_calls[0]["result"] == "6"
    boost = trace.extra["boost"]
    assert [lp["type"] for lp in boost["loops"]] == ["timeout"]
    assert boost["final"] == "direct" and boost["fallback"] == "planner timeout"


async def test_unreachable_planner_falls_back_to_a_direct_answer():
    planner = ScriptedBackend(LlmError("llm-unreachable", "cannot reach the planner"))
    loop, _, _ = make(planner, "Hello.")
    trace = await ask(loop, "Hi")
    assert trace.reply == "Hello."
    assert trace.extra["boost"]["loops"][0] == {**trace.extra["boost"]["loops"][0], "type": "error"}
    assert "cannot reach the planner" in trace.extra["boost"]["loops"][0]["error"]


async def test_when_tools_sends_only_tool_like_requests_to_the_planner():
    planner = ScriptedBackend(GUIDE)
    loop, executor, _ = make(
        planner,
        "Why did the cat sit on the laptop? To keep an eye on the mouse.",
        [("multiply", {"a": 23, "b": 47})],
        "It is 1081.",
        when="tools",
    )
    joke = await ask(loop, "Tell me a joke")
    assert planner.requests == [] and joke.extra["boost"]["used"] is False
    assert joke.execution_path == "native"
    sum_ = await ask(loop, "What is 23 times 47?")
    assert len(planner.requests) == 1 and sum_.execution_path == "boost"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What time is it in Paris?", True),
        ("What is twelve times nine?", True),
        ("Set a pasta timer for 8 minutes", True),
        ("remind me to call mom", True),
        ("multiply these for me", True),  # a word of a tool's name
        ("Tell me a joke about cats.", False),
        ("Who wrote Romeo and Juliet?", False),
        ("What is the capital of France?", False),
    ],
)
def test_may_need_tools(text, expected):
    from iris_voice.timers.service import TimerService
    from iris_voice.timers.store import TimerStore
    from iris_voice.tools.builtin import ToolContext, builtin_tools

    timers = TimerService(TimerStore(":memory:"), lambda e: None)
    tools = ToolRegistry([*builtin_tools(ToolContext("UTC", timers)), *registry()])
    # the words come from the tools that declare them: without the built-ins only digits
    # and tool names count
    assert may_need_tools(text, tools) is expected
    assert may_need_tools("What time is it in Paris?", registry()) is False


def test_config_errors_name_the_key(monkeypatch):
    from iris_voice import config

    with pytest.raises(ConfigError) as err:
        config.parse({"boost": {"enabled": True, "backend": "openai"}})
    assert any(p.startswith("boost.base_url: is required") for p in err.value.problems)
    assert any(p.startswith("boost.model: is required") for p in err.value.problems)
    with pytest.raises(ConfigError) as err:
        config.parse({"boost": {"api_key_env": "sk-abc123", "max_loops": 0, "when": "sometimes"}})
    problems = err.value.problems
    assert any(
        p.startswith("boost.api_key_env: must be the NAME of an environment variable") for p in problems
    )
    assert "boost.max_loops: must be greater than or equal to 1" in problems
    assert any(p.startswith("boost.when: must be 'always' or 'tools'") for p in problems)
    cfg = config.parse(
        {
            "boost": {
                "enabled": True,
                "backend": "openai",
                "base_url": "http://x:1/v1",
                "model": "m",
                "api_key_env": "IRIS_TEST_PLANNER_KEY",
            }
        }
    )
    monkeypatch.delenv("IRIS_TEST_PLANNER_KEY", raising=False)
    with pytest.raises(ConfigError) as err:
        planner_backend(cfg)
    assert err.value.problems == [
        "boost.api_key_env: the environment variable IRIS_TEST_PLANNER_KEY is not set or empty"
    ]
    monkeypatch.setenv("IRIS_TEST_PLANNER_KEY", "secret")
    backend = planner_backend(cfg)
    assert isinstance(backend, OpenAIBackend) and backend.name == "m at http://x:1/v1"


def test_build_responder_picks_boost_only_when_enabled(tmp_path):
    from iris_voice.config import IntentsConfig
    from iris_voice.conversation.fastpath import FastPath

    cfg = Config(llm=LlmConfig(host="http://h:1", model="local"), intents=IntentsConfig(enabled=False))
    plain = build_responder(cfg, registry())
    assert plain.boost is None and plain.fast is None and isinstance(plain.chat, ChatLoop)
    cfg = cfg.model_copy(update={"boost": BoostConfig(enabled=True, model="big", temperature=0.7)})
    boost = build_responder(cfg, registry()).boost
    assert isinstance(boost, Boost)
    # with the fast path on (the default), it stands in front of the planner
    fast = build_responder(cfg.model_copy(update={"intents": IntentsConfig()}), registry())
    assert isinstance(fast.fast, FastPath) and isinstance(fast.boost, Boost)
    assert isinstance(boost.planner, OllamaBackend)
    assert boost.planner.name == "big at http://h:1"  # the ollama planner defaults to llm.host
    assert boost.planner.cfg.temperature == 0.7 and boost.planner.cfg.request_timeout_s == 30.0


async def test_doctor_checks_the_planner_when_boost_is_enabled(monkeypatch):
    from iris_voice.config import parse

    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    from iris_voice.app.doctor import run_checks

    cfg = parse(
        {
            "llm": {"host": "http://127.0.0.1:9"},
            "boost": {
                "enabled": True,
                "backend": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
            },
        }
    )
    lines = await run_checks(cfg)
    assert lines[0][0] is False and "cannot reach the Ollama server" in lines[0][1]
    ok, line = lines[-1]
    assert ok is False
    assert line.startswith(
        "boost planner: cannot reach the OpenAI-compatible server at http://127.0.0.1:9/v1"
    )
    assert len(await run_checks(cfg.model_copy(update={"boost": BoostConfig()}))) == 1
