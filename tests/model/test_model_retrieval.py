"""The real model (Qwen2.5-Coder-1.5B via the test server) with all six MCP servers lazy and
per-turn retrieval on: the tools a question needs are found and called, and none for a
question that needs none."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from iris_voice.app.assembly import open_app
from iris_voice.config import Config, IntentsConfig, LlmConfig, McpConfig, ToolsConfig
from iris_voice.conversation.responder import ask
from iris_voice.tools.mcp.manager import EXECUTE_TOOL

pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]


def paris_hours() -> set[int]:
    """The hour in Paris now (and a few minutes either side), in 24h and 12h forms."""
    now = datetime.now(UTC)
    hours = set()
    for delta in (-5, 0, 5):
        h = (now + timedelta(minutes=delta)).astimezone(ZoneInfo("Europe/Paris")).hour
        hours |= {h, h % 12 or 12}
    return hours


@pytest.fixture(scope="module")
def six(tmp_path_factory):
    """The six servers' configs (skips when the Node servers are not installed)."""
    from tools.testbed.mcp_servers import node_missing, six_servers

    if why := node_missing():
        pytest.skip(f"Node MCP servers: {why}")
    return six_servers(Path(tmp_path_factory.mktemp("mcp")))


def config(server_url: str, servers, tmp_path: Path, disabled=()) -> Config:
    return Config(
        llm=LlmConfig(host=server_url, model="qwen2.5-coder:1.5b", temperature=0.0),
        tools=ToolsConfig(timezone="UTC", disabled=list(disabled), timers_db=str(tmp_path / "t.db")),
        mcp=McpConfig(servers=servers),
        intents=IntentsConfig(enabled=False),  # every turn is the model's
    )


async def asked(cfg: Config, text: str):
    """The trace of ``text`` asked once through IRIS built from ``cfg``, its servers ready."""
    devnull = open(os.devnull, "w")  # noqa: SIM115
    async with open_app(cfg, errlog=devnull) as app:
        assert app.mcp is not None and await app.mcp.wait_ready(90)
        trace = await ask(app.responder, text)
    devnull.close()
    return trace


def called(trace) -> list[str]:
    """The tools a turn ran, an execute_tool call read as the tool it ran."""
    names = []
    for c in trace.tool_calls:
        path = c["arguments"].get("tool_path") if c["name"] == EXECUTE_TOOL else None
        names.append(str(path) if path else c["name"])
    return names


async def test_time_in_paris_with_six_lazy_servers(ollama_server, six, tmp_path):
    # The built-in clock is left out: only the lazy MCP time server knows the time.
    cfg = config(ollama_server.url, six, tmp_path, disabled=["get_current_time"])
    devnull = open(os.devnull, "w")  # noqa: SIM115
    async with open_app(cfg, errlog=devnull) as app:
        assert app.mcp is not None and await app.mcp.wait_ready(90)
        assert "time/get_current_time" not in app.registry  # lazy: not listed on every turn
        trace = await ask(app.responder, "What time is it in Paris?")
    devnull.close()
    assert "time/get_current_time" in trace.extra.get("retrieved", []), trace.to_dict()
    ok = [c for c in trace.tool_calls if c["ok"]]
    assert any("get_current_time" in n for n in called(trace)) and ok, trace.to_dict()
    assert "Europe/Paris" in ok[-1]["result"], trace.to_dict()
    found = re.findall(r"(?:\b|T)(\d{1,2})(?::\d{2}|\s*[ap]\.?m\.?|\s*o'clock)", trace.reply, re.I)
    assert {int(h) for h in found} & paris_hours(), (trace.reply, paris_hours())


async def test_a_memory_question_calls_a_memory_tool(ollama_server, six, tmp_path):
    cfg = config(ollama_server.url, six, tmp_path)
    trace = await asked(cfg, "Remember that my brother Tom is allergic to peanuts.")
    memory = [c for c, n in zip(trace.tool_calls, called(trace), strict=True) if n.startswith("memory/")]
    assert memory, trace.to_dict()
    assert "peanut" in str(memory[0]["arguments"]).lower(), memory


async def test_a_question_that_needs_no_tool_runs_none_and_is_answered_in_words(ollama_server, six, tmp_path):
    cfg = config(ollama_server.url, six, tmp_path)
    trace = await asked(cfg, "Who wrote Romeo and Juliet?")
    # The model may reach for a tool (a reminder, the clock); IRIS runs none of them for a
    # question about something else, and the model answers in words.
    ran = [c for c in trace.tool_calls if not str(c["result"]).startswith("Error: not run:")]
    assert ran == [], trace.to_dict()
    assert "shakespeare" in trace.reply.lower(), trace.reply


async def test_a_conversion_from_the_place_named_at_the_time_is_said_in_one_round(
    ollama_server, six, tmp_path
):
    # The built-in clock tells the time now: a time and two places ask for the conversion.
    cfg = config(ollama_server.url, six, tmp_path)
    trace = await asked(cfg, "If it's 8 am in New York, what time is it in Paris?")
    assert "time/convert_time" in trace.extra.get("retrieved", []), trace.to_dict()
    (call,) = [c for c in trace.tool_calls if c["ok"]]
    assert call["arguments"]["source_timezone"] == "America/New_York", call
    assert call["arguments"]["target_timezone"] == "Europe/Paris", call
    today = datetime.now(ZoneInfo("America/New_York")).date()
    paris = datetime(today.year, today.month, today.day, 8, tzinfo=ZoneInfo("America/New_York"))
    paris = paris.astimezone(ZoneInfo("Europe/Paris"))
    said = f"{paris.hour % 12 or 12}:00 {'AM' if paris.hour < 12 else 'PM'} in Paris"
    assert said in trace.reply and trace.rounds == 1, trace.to_dict()


async def test_a_clock_call_the_question_does_not_ask_for_runs_nothing(ollama_server, six, tmp_path):
    cfg = config(ollama_server.url, six, tmp_path)
    trace = await asked(cfg, "Who wrote Pride and Prejudice?")
    assert not [c for c in trace.tool_calls if c["ok"]], trace.to_dict()
    assert "austen" in trace.reply.lower(), trace.reply


async def test_a_fact_to_remember_is_stored_and_confirmed_in_one_round(ollama_server, six, tmp_path):
    cfg = config(ollama_server.url, six, tmp_path)
    trace = await asked(cfg, "Remember that Bob likes chess.")
    stored = [c for c in trace.tool_calls if c["ok"] and c["name"].startswith("memory/")]
    assert stored and "chess" in str(stored[0]["arguments"]).lower(), trace.to_dict()
    # what the memory server echoed is said; no second round phrases it
    assert trace.reply.startswith("Saved: Bob, ") and "chess" in trace.reply, trace.reply
    assert trace.rounds == 1, trace.to_dict()
