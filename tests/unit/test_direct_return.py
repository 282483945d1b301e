"""Direct-return tools: a tool whose answer is a sentence is spoken without a second model round."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, LlmConfig, ToolsConfig
from iris_voice.conversation.responder import ask
from iris_voice.errors import ConfigError
from iris_voice.events import EventBus, SentenceReady, TurnFinished
from iris_voice.tools.builtin.calculator import make_calculator_tool
from iris_voice.tools.builtin.clock import make_clock_tool
from iris_voice.tools.registry import ToolRegistry, spoken, tool_from_function
from tests.support.fakes import ScriptedBackend, chat_assistant

WINTER = datetime(2025, 11, 22, 6, 5, tzinfo=UTC)
TOKYO = "It is 3:05 PM on Saturday, November 22, 2025 in Tokyo (Asia/Tokyo, UTC+09:00)."


def greet(name: str) -> str:
    """Greet someone."""
    if name == "nobody":
        raise ValueError("there is nobody to greet")
    return f"Hello, {name}. Nice to meet you."


def registry() -> ToolRegistry:
    return ToolRegistry(
        [
            make_clock_tool("UTC", now=lambda: WINTER),
            make_calculator_tool(),
            tool_from_function(greet, direct_return=True),
        ]
    )


def make(*replies, **cfg):
    backend = ScriptedBackend(*replies, no_tools=cfg.pop("no_tools", False))
    bus = EventBus()
    events: list = []
    bus.subscribe(events.append)
    cfg.setdefault("direct_return", ["get_current_time", "greet"])
    llm = LlmConfig(**cfg)
    tools = registry().filtered(direct_return=llm.direct_return)  # config overrides what tools declare
    loop = chat_assistant(backend, tools, llm, publish=bus.publish)
    return loop, backend, events


async def test_a_direct_tool_is_spoken_after_one_model_round():
    loop, backend, events = make([("get_current_time", {"timezone": "Tokyo"})])
    trace = await ask(loop, "What time is it in Tokyo?")
    assert len(backend.requests) == 1 and trace.rounds == 1
    assert trace.reply == "It is 3:05 PM on Saturday, November 22, 2025 in Tokyo."
    d = trace.to_dict()
    assert d["execution_path"] == "native" and d["direct_return"] is True
    assert [c["name"] for c in d["tool_calls"]] == ["get_current_time"]
    assert [e.text for e in events if isinstance(e, SentenceReady)] == [trace.reply]
    assert any(isinstance(e, TurnFinished) and e.reply == trace.reply for e in events)
    # a tool turn that ends with the result, which is what was said (zone kept for the model)
    assert loop.conversation.turns == [
        [
            {"role": "user", "content": "What time is it in Tokyo?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": "get_current_time", "arguments": {"timezone": "Tokyo"}}}
                ],
            },
            {"role": "tool", "content": TOKYO, "tool_name": "get_current_time"},
        ]
    ]


async def test_the_next_turn_sees_the_direct_turn_in_its_history():
    loop, backend, _ = make([("greet", {"name": "Ada"})], "You greeted Ada.")
    assert (await ask(loop, "say hello to Ada")).reply == "Hello, Ada. Nice to meet you."
    await ask(loop, "whom did you greet?")
    messages = backend.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[2]["tool_calls"] == [{"function": {"name": "greet", "arguments": {"name": "Ada"}}}]
    assert messages[3]["content"] == "Hello, Ada. Nice to meet you."


async def test_a_barge_in_on_a_direct_reply_keeps_the_tool_turn():
    loop, _, _ = make([("greet", {"name": "Ada"})])
    gen = loop.sentences("hello Ada")
    assert await gen.__anext__() == "Hello, Ada."
    await gen.aclose()
    loop.conversation.amend_last("Hello, Ada.")  # the tool ran: its turn stays as it is
    assert [m["role"] for m in loop.conversation.turns[0]] == ["user", "assistant", "tool"]


async def test_a_multi_sentence_result_is_spoken_sentence_by_sentence():
    loop, _, _ = make([("greet", {"name": "Ada"})])
    assert [s async for s in loop.sentences("hello Ada")] == ["Hello, Ada.", "Nice to meet you."]


async def test_the_calculator_is_phrased_by_the_model():
    loop, backend, _ = make([("calculator", {"expression": "23*47"})], "23 times 47 is 1081.")
    trace = await ask(loop, "What is 23 times 47?")
    assert len(backend.requests) == 2 and trace.reply == "23 times 47 is 1081."
    assert "direct_return" not in trace.to_dict()


async def test_a_tool_left_out_of_the_config_takes_two_rounds():
    loop, backend, _ = make([("greet", {"name": "Ada"})], "I said hello.", direct_return=["get_current_time"])
    assert (await ask(loop, "hello Ada")).reply == "I said hello."
    assert len(backend.requests) == 2


async def test_a_failed_direct_call_goes_back_to_the_model():
    loop, backend, _ = make([("greet", {"name": "nobody"})], "There is nobody to greet.")
    trace = await ask(loop, "greet nobody")
    assert trace.reply == "There is nobody to greet." and len(backend.requests) == 2
    assert backend.requests[1]["messages"][-1]["content"].startswith("Error: greet failed")


async def test_a_round_mixing_direct_and_other_tools_takes_two_rounds():
    calls = [("greet", {"name": "Ada"}), ("calculator", {"expression": "2+2"})]
    loop, backend, _ = make(calls, "Hello Ada, and 2 plus 2 is 4.")
    assert (await ask(loop, "greet Ada and add 2 and 2")).reply == "Hello Ada, and 2 plus 2 is 4."
    assert len(backend.requests) == 2


async def test_direct_return_in_text_tool_mode():
    text_call = '<tool_call>{"name": "get_current_time", "arguments": {"timezone": "Tokyo"}}</tool_call>'
    loop, backend, _ = make(text_call, no_tools=True)
    trace = await ask(loop, "time in Tokyo")
    assert trace.execution_path == "text" and trace.to_dict()["direct_return"] is True
    assert trace.reply == "It is 3:05 PM on Saturday, November 22, 2025 in Tokyo."
    assert len(backend.requests) == 2  # the refused native request, then one text round


def test_spoken_drops_only_notes_in_parentheses():
    assert spoken(TOKYO) == "It is 3:05 PM on Saturday, November 22, 2025 in Tokyo."
    assert spoken("Pasta timer set for 8 minutes.") == "Pasta timer set for 8 minutes."


def test_defaults_cover_the_sentence_tools_and_not_the_calculator(tmp_path: Path):
    cfg = Config(tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "t.db")))
    reg = build_app(cfg).registry
    sentence_tools = {t.name for t in reg if t.direct_return}
    assert cfg.llm.direct_return is None  # nothing overridden: each tool declares it
    assert sentence_tools == set(reg.names()) - {"calculator"}
    assert "get_current_time" in sentence_tools and "set_timer" in sentence_tools


def test_direct_return_in_the_config_overrides_what_the_tools_declare(tmp_path: Path):
    cfg = Config(
        llm=LlmConfig(direct_return=["calculator"]),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "t.db")),
    )
    reg = build_app(cfg).registry
    assert {t.name for t in reg if t.direct_return} == {"calculator"}


def test_an_unknown_name_in_direct_return_is_a_config_error(tmp_path: Path):
    cfg = Config(
        llm=LlmConfig(direct_return=["set_timers"]),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "t.db")),
    )
    with pytest.raises(ConfigError) as err:
        build_app(cfg)
    assert err.value.problems[0].startswith("llm.direct_return: unknown tool 'set_timers'")


async def test_braces_written_around_a_direct_call_are_not_spoken():
    from iris_voice.llm.client import ChatChunk

    class BracesThenCall(ScriptedBackend):
        """The model writes "{ }" as text and makes a structured call in the same reply."""

        async def stream(self, messages, tools, options=None):
            self.requests.append({"messages": messages})
            yield ChatChunk(content="{ }\n")
            yield ChatChunk(tool_calls=(("greet", {"name": "Ada"}),))
            yield ChatChunk(done=True, prompt_tokens=10, completion_tokens=5, prompt_ms=1.0)

    loop = chat_assistant(BracesThenCall(), registry().filtered(direct_return=["greet"]), LlmConfig())
    trace = await ask(loop, "greet Ada")
    assert trace.reply == "Hello, Ada. Nice to meet you."
