"""On-demand built-in tools: the timer tools few requests need ride on the turns that need them."""

from __future__ import annotations

import pytest

from iris_voice.config import LlmConfig, RetrievalConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.history import Bounds, Conversation
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.conversation.toolpick import LEAD, ToolPicker
from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerStore
from iris_voice.tools.builtin import ToolContext, builtin_tools
from iris_voice.tools.registry import ToolRegistry
from tests.support.fakes import ScriptedBackend

ON_DEMAND = {"adjust_timer", "pause_timer", "resume_timer", "convert_units", "get_holiday_date"}


def timers() -> TimerService:
    return TimerService(TimerStore(":memory:"), lambda e: None, tz_name="UTC", resync_seconds=None)


def builtins(service: TimerService | None = None) -> ToolRegistry:
    return ToolRegistry(builtin_tools(ToolContext("UTC", service or timers())))


def test_the_tools_few_requests_need_are_listed_only_where_no_retriever_runs():
    reg = builtins()
    assert {t.name for t in reg if t.on_demand} == ON_DEMAND
    on = ToolPicker(reg, RetrievalConfig())
    listed = [t.name for t in on.listed()]
    assert not ON_DEMAND & set(listed)
    assert {"set_timer", "list_timers", "cancel_timer", "set_reminder", "calculator"} <= set(listed)
    assert ON_DEMAND <= {t.name for t in on.candidates()}
    off = ToolPicker(reg, RetrievalConfig(enabled=False))
    assert [t.name for t in off.listed()] == reg.names()
    assert off.pick("Pause the pasta timer.", []) == []


@pytest.mark.parametrize(
    ("request_", "shown"),
    [
        ("Pause the pasta timer.", ["pause_timer"]),
        ("Hold the tea timer for a moment.", ["pause_timer"]),
        ("Resume the pasta timer.", ["resume_timer"]),
        ("Unpause the eggs timer.", ["resume_timer"]),
        # set_timer scores nearly as high (the number, "minutes", the label): the sibling
        # that matches best is shown all the same
        ("Add two minutes to the pasta timer.", ["adjust_timer"]),
        ("Take a minute off the tea timer.", ["adjust_timer"]),
        # a listed tool serves these
        ("Set a tea timer for 3 minutes.", []),
        ("Cancel the pasta timer.", []),
        ("How long is left on the pasta timer?", []),
        # the short pause_timer and adjust_timer score higher on "second", a word of the
        # listed set_timer's too: no word of their own is said
        ("Put a 20 second timer on.", []),
        # the tool's own word, but nothing about timers
        ("Hold on.", []),
        ("Can you continue the story?", []),
        ("I need less sugar in my tea, any tips?", []),
    ],
)
def test_an_on_demand_tool_is_shown_for_a_request_about_what_it_does(request_, shown):
    picker = ToolPicker(builtins(), RetrievalConfig())
    assert [t.name for t in picker.pick(request_, [])] == shown


SET_COOKIES = [
    {"role": "user", "content": "Set a cookies timer for twelve minutes."},
    {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "set_timer", "arguments": {"duration": "12 minutes", "label": "cookies"}}}
    ]},
    {"role": "tool", "content": "Cookies timer set for 12 minutes."},
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_", "history", "shown"),
    [
        ("Pause it, the phone is ringing.", SET_COOKIES, ["pause_timer"]),
        ("OK, resume it now.", SET_COOKIES, ["resume_timer"]),
        ("Pause it, the phone is ringing.", [], []),  # "it" with nothing to point at
        ("Pause, the phone is ringing.", SET_COOKIES, []),  # nothing pointed at
    ],
)
def test_a_request_pointing_back_at_a_timer_is_about_the_timer(request_, history, shown):
    picker = ToolPicker(builtins(), RetrievalConfig())
    assert [t.name for t in picker.pick(request_, history)] == shown


async def test_a_turn_that_needs_one_shows_it_after_the_history_and_the_call_runs():
    service = timers()
    await service.set_timer(480, "pasta")
    backend = ScriptedBackend([("pause_timer", {"which": "pasta"})], "Hello!")
    loop = ChatLoop(backend, builtins(service), LlmConfig(), retrieval=RetrievalConfig())
    assistant = Assistant(loop, Conversation(Bounds()))
    trace = await ask(assistant, "Pause the pasta timer.")
    assert trace.extra["retrieved"] == ["pause_timer"]
    assert trace.tool_calls[0]["ok"] and trace.reply.startswith("Paused the pasta timer")
    assert [row.paused for row in await service.list()] == [True]
    first = backend.requests[0]
    listed = [t["function"]["name"] for t in first["tools"]]
    assert "pause_timer" not in listed and "set_timer" in listed
    user = first["messages"][-1]["content"]
    assert LEAD in user and '"name":"pause_timer"' in user
    # the next turn's prefix is the one the server read: same tools, the words kept alone
    await ask(assistant, "Hello there")
    second = backend.requests[1]
    assert second["tools"] == first["tools"]
    assert second["messages"][1] == {"role": "user", "content": "Pause the pasta timer."}


def test_a_model_without_native_tools_reads_every_tool_in_its_prompt():
    loop = ChatLoop(ScriptedBackend(), builtins(), LlmConfig(tool_mode="text"), retrieval=RetrievalConfig())
    prompt = loop.system_message()["content"]
    assert all(name in prompt for name in ON_DEMAND)
