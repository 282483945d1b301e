"""MCP tools against real servers: mcp-server-time, mcp-server-calculator and a flaky FastMCP one.

Each test starts its own servers (about half a second each) so that no test depends on
another's crash or timeout; backoff is shortened so restarts happen within the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

pytest.importorskip("mcp", reason="MCP SDK not installed (requirements/runtime.txt)")

from pydantic import ValidationError  # noqa: E402

from iris_voice.errors import ToolError  # noqa: E402
from iris_voice.llm.render import FORMATS, render  # noqa: E402
from iris_voice.tools.mcp import BROWSE_TOOL, EXECUTE_TOOL, McpManager  # noqa: E402
from iris_voice.tools.mcp_config import McpConfig, McpServerConfig  # noqa: E402
from iris_voice.tools.mcp_results import MAX_RESULT_CHARS, result_text  # noqa: E402
from iris_voice.tools.mcp_schema import check_arguments, compact_input_schema  # noqa: E402
from iris_voice.tools.registry import ToolRegistry  # noqa: E402

pytestmark = pytest.mark.timeout(60)

FLAKY = str(Path(__file__).parent / "mcp_servers" / "flaky_server.py")
PY = sys.executable


def time_server(mode: str = "lazy", category: str = "time") -> McpServerConfig:
    """The real mcp-server-time, in UTC."""
    args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    return McpServerConfig(
        name=category.replace("/", "-"), category=category, command=PY, args=args, mode=mode
    )


def calculator(category: str = "utilities/math") -> McpServerConfig:
    """The real mcp-server-calculator."""
    return McpServerConfig(
        name="calculator", category=category, command=PY, args=["-m", "mcp_server_calculator"]
    )


def flaky(mode: str = "lazy", timeout_s: float = 10.0, **extra: object) -> McpServerConfig:
    """The misbehaving test server of tests/mcp_servers."""
    return McpServerConfig(
        name="flaky", category="test/flaky", command=PY, args=[FLAKY], mode=mode, timeout_s=timeout_s, **extra
    )


@contextlib.asynccontextmanager
async def running(*configs: McpServerConfig, ready: bool = True):
    """A started manager with its tools in a fresh registry; stopped afterwards."""
    manager = McpManager(configs, backoff_initial_s=0.2, backoff_max_s=1.0)
    registry = ToolRegistry()
    await manager.start()
    try:
        if ready:
            assert await manager.wait_ready(20), {c.name: c.last_error for c in manager.connections.values()}
        manager.register(registry)
        yield manager, registry
    finally:
        await manager.stop()


async def execute(registry: ToolRegistry, tool_path: str, arguments: object = None):
    """Call the execute_tool meta-tool as the model would."""
    return await registry.call(EXECUTE_TOOL, {"tool_path": tool_path, "arguments": arguments})


# --- configuration and schemas (no server) ---------------------------------------


def test_config_defaults_and_errors():
    cfg = McpConfig.model_validate({"servers": [{"name": "time", "category": "/time/", "command": "x"}]})
    server = cfg.servers[0]
    assert (server.category, server.mode, server.timeout_s, cfg.enabled) == ("time", "lazy", 10.0, True)
    bad = [
        {"name": "a", "category": "time"},  # neither command nor url
        {"name": "a", "category": "time", "command": "x", "url": "http://h/mcp"},
        {"name": "a", "category": "Time Zones", "command": "x"},
        {"name": "a", "category": "time", "url": "ftp://h"},
        {"name": "a", "category": "time", "command": "x", "mode": "sometimes"},
        {"name": "a", "category": "time", "command": "x", "timeout": 3},  # unknown key
    ]
    for entry in bad:
        with pytest.raises(ValidationError):
            McpConfig.model_validate({"servers": [entry]})
    twice = [{"name": "a", "category": "t", "command": "x"}, {"name": "b", "category": "t", "command": "x"}]
    with pytest.raises(ValidationError, match="category"):
        McpConfig.model_validate({"servers": twice})


def test_compact_schema_keeps_a_parameter_named_title():
    schema = {
        "type": "object",
        "title": "noteArguments",
        "properties": {
            "title": {"type": "string", "title": "Title"},
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["title"],
    }
    small = compact_input_schema(schema)
    assert small == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["title"],
    }
    assert compact_input_schema("garbage") == {"type": "object", "properties": {}}


def test_arguments_are_coerced_then_validated():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "flag": {"type": "boolean"},
            "name": {"type": "string"},
            "inner": {"type": "object", "properties": {"k": {"type": "integer"}}},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    args = check_arguments(
        "t/x", {"n": "12", "x": "2.5", "flag": "true", "name": "7", "inner": {"k": "3"}}, schema
    )
    assert args == {"n": 12, "x": 2.5, "flag": True, "name": "7", "inner": {"k": 3}}
    with pytest.raises(ToolError, match=r"invalid arguments for t/x: n: is required"):
        check_arguments("t/x", {}, schema)
    with pytest.raises(ToolError, match=r"n: 'twelve' is not of type 'integer'"):
        check_arguments("t/x", {"n": "twelve"}, schema)
    with pytest.raises(ToolError, match=r"tz: unknown argument"):
        check_arguments("t/x", {"n": 1, "tz": "UTC"}, schema)
    # A schema that is itself invalid cannot judge arguments: the server will.
    assert check_arguments("t/odd", {"a": "1"}, {"type": "object", "properties": {"a": 42}}) == {"a": "1"}


def test_result_text_names_media_and_caps_length():
    from mcp import types

    blocks = [
        types.TextContent(type="text", text="hello"),
        types.ImageContent(type="image", data="AAAA", mimeType="image/png"),
        types.EmbeddedResource(
            type="resource", resource=types.TextResourceContents(uri="file:///a.txt", text="inside")
        ),
    ]
    assert result_text(types.CallToolResult(content=blocks)) == "hello\n[image omitted]\ninside"
    structured = types.CallToolResult(content=[], structuredContent={"result": 42})
    assert result_text(structured) == '{"result": 42}'
    long = result_text(types.CallToolResult(content=[types.TextContent(type="text", text="x" * 10_000)]))
    assert len(long) <= MAX_RESULT_CHARS and long.endswith("(truncated)")


# --- real servers: lazy browse and execute ------------------------------------------


async def test_lazy_mode_shows_two_short_meta_tools_and_browses_the_tree():
    async with running(time_server(), calculator()) as (manager, registry):
        assert registry.names() == [BROWSE_TOOL, EXECUTE_TOOL]
        browse, run = registry.specs()
        assert all(len(spec.description) < 200 for spec in (browse, run))
        assert "top level: time, utilities" in browse.description
        assert f"before {EXECUTE_TOOL}" in browse.description and "Browse first" in run.description
        root = (await registry.call(BROWSE_TOOL, {"path": ""})).result
        assert "- time (2 tools)" in root and "- utilities (1 subcategory, 1 tool)" in root
        inner = (await registry.call(BROWSE_TOOL, {"path": "utilities"})).result
        assert "- utilities/math (1 tool)" in inner
        leaf = await registry.call(BROWSE_TOOL, {"path": "time"})
        assert leaf.ok
        assert "time/get_current_time: Get current time" in leaf.result
        assert "time/convert_time:" in leaf.result
        assert "timezone (string, required)" in leaf.result
        assert EXECUTE_TOOL in leaf.result.splitlines()[-1]
        unknown = await registry.call(BROWSE_TOOL, {"path": "weather"})
        assert not unknown.ok
        assert unknown.result == "Error: unknown category 'weather'. Top-level categories: time, utilities"


async def test_execute_tool_answers_the_time_in_paris():
    async with running(time_server()) as (_, registry):
        res = await execute(registry, "time/get_current_time", {"timezone": "Europe/Paris"})
        assert res.ok, res.result
        data = json.loads(res.result)
        assert data["timezone"] == "Europe/Paris"
        answered = datetime.fromisoformat(data["datetime"])
        now = datetime.now(ZoneInfo("Europe/Paris"))
        assert answered.utcoffset() == now.utcoffset()
        assert abs((answered - now).total_seconds()) < 120
        # Arguments as a JSON string and a path without its category are forgiven.
        again = await execute(registry, "get_current_time", '{"timezone": "Asia/Tokyo"}')
        assert again.ok and json.loads(again.result)["timezone"] == "Asia/Tokyo"


async def test_invalid_arguments_are_refused_before_sending(monkeypatch):
    async with running(time_server()) as (manager, registry):
        sent = []
        conn = manager.server("time")
        real_call = conn.call

        async def spy(tool, arguments, timeout=None):
            sent.append(tool)
            return await real_call(tool, arguments, timeout)

        monkeypatch.setattr(conn, "call", spy)
        missing = await execute(registry, "time/get_current_time", {})
        assert missing.result == "Error: invalid arguments for time/get_current_time: timezone: is required"
        wrong = await execute(registry, "time/get_current_time", {"timezone": ["Europe/Paris"]})
        assert "timezone: ['Europe/Paris'] is not of type 'string'" in wrong.result
        no_tool = await execute(registry, "time/get_weather", {})
        assert (
            no_tool.result
            == "Error: time has no tool 'get_weather'; its tools: get_current_time, convert_time"
        )
        category = await execute(registry, "time", {})
        assert "is a category, not a tool" in category.result
        assert sent == []
        # The server's own refusal (a valid string, an unknown zone) comes back as an error too.
        refused = await execute(registry, "time/get_current_time", {"timezone": "Mars/Olympus"})
        assert not refused.ok and refused.result.startswith("Error: ") and "Mars/Olympus" in refused.result
        assert sent == ["get_current_time"]


async def test_eager_mode_registers_category_tool_names_with_schemas():
    async with running(time_server(mode="eager")) as (_, registry):
        assert sorted(registry.names()) == ["time/convert_time", "time/get_current_time"]
        spec = registry.get("time/get_current_time").spec
        assert spec.parameters["required"] == ["timezone"]
        assert spec.parameters["properties"]["timezone"]["type"] == "string"
        res = await registry.call("time/get_current_time", {"timezone": "UTC"})
        assert res.ok and json.loads(res.result)["timezone"] == "UTC"
        bad = await registry.call("time/get_current_time", {})
        assert bad.result == "Error: invalid arguments for time/get_current_time: timezone: is required"


async def test_the_calculator_server_computes():
    async with running(calculator()) as (_, registry):
        res = await execute(registry, "utilities/math/calculate", {"expression": "23*47"})
        assert (res.ok, res.result) == (True, "1081")


# --- failure cases with the flaky FastMCP server --------------------------------------


async def test_slow_call_times_out_while_everything_else_stays_responsive():
    async with running(flaky(timeout_s=1.0)) as (_, registry):
        t0 = time.perf_counter()
        slow = asyncio.create_task(execute(registry, "test/flaky/slow", {"seconds": 20}))
        await asyncio.sleep(0.1)
        t1 = time.perf_counter()
        echo = await execute(registry, "test/flaky/echo", {"text": "still here"})
        assert (echo.ok, echo.result) == (True, "still here")
        assert time.perf_counter() - t1 < 0.5
        # The event loop is never blocked while the slow call waits.
        lags = []
        for _ in range(10):
            start = time.perf_counter()
            await asyncio.sleep(0.02)
            lags.append(time.perf_counter() - start - 0.02)
        assert max(lags) < 0.1
        res = await slow
        assert res.result == "Error: test/flaky/slow timed out after 1 s"
        assert 0.9 < time.perf_counter() - t0 < 2.5


async def test_a_crashed_server_becomes_an_error_then_comes_back():
    async with running(flaky()) as (manager, registry):
        conn = manager.server("test/flaky")
        t0 = time.perf_counter()
        crash = await execute(registry, "test/flaky/crash")
        assert crash.result.startswith("Error: MCP server 'flaky' is not available: ")
        assert time.perf_counter() - t0 < 1.0  # noticed at once, not after the call timeout
        assert await conn.wait_ready(10), conn.last_error
        back = await execute(registry, "test/flaky/echo", {"text": "back"})
        assert (back.ok, back.result) == (True, "back")
        assert conn.restarts == 1


async def test_malformed_schemas_render_in_every_format_and_stay_callable():
    async with running(flaky(mode="eager")) as (_, registry):
        specs = registry.specs()
        odd = registry.get("test/flaky/odd").spec
        assert "title" in odd.parameters["properties"]
        for fmt in FORMATS:
            out = render(specs, fmt)
            text = out if isinstance(out, str) else json.dumps(out)
            assert "test/flaky/odd" in text and "test/flaky/bare" in text
        res = await registry.call("test/flaky/odd", {"count": "2", "title": "hi"})
        assert (res.ok, res.result) == (True, "odd count=2 title=hi")
        res = await registry.call("test/flaky/bare", {})
        assert (res.ok, res.result) == (True, "bare ok")


async def test_list_changed_refreshes_the_cached_tools():
    async with running(flaky(mode="eager"), flaky_lazy := flaky_second()) as (manager, registry):
        assert "test/flaky/late_tool" not in registry
        added = await registry.call("test/flaky/add_tool", {"name": "late_tool"})
        assert added.ok, added.result
        for _ in range(100):
            if "test/flaky/late_tool" in registry:
                break
            await asyncio.sleep(0.05)
        res = await registry.call("test/flaky/late_tool", {})
        assert (res.ok, res.result) == (True, "I am late_tool")
        # The lazy twin learns about its own new tool the same way.
        await execute(registry, f"{flaky_lazy.category}/add_tool", {"name": "later"})
        for _ in range(100):
            if any(t.name == "later" for t in manager.server(flaky_lazy.category).tools):
                break
            await asyncio.sleep(0.05)
        assert f"{flaky_lazy.category}/later:" in (await manager.browse(flaky_lazy.category))
        res = await execute(registry, f"{flaky_lazy.category}/later")
        assert (res.ok, res.result) == (True, "I am later")


def flaky_second() -> McpServerConfig:
    """A second, lazy instance of the flaky server under another category."""
    return McpServerConfig(name="flaky2", category="test/twin", command=PY, args=[FLAKY])


async def test_start_returns_at_once_and_a_missing_server_is_an_error_not_a_hang():
    missing = McpServerConfig(
        name="ghost", category="ghost", command="/nonexistent/mcp-server", timeout_s=1.0
    )
    manager = McpManager([time_server(), missing], backoff_initial_s=0.2, backoff_max_s=1.0)
    registry = ToolRegistry()
    t0 = time.perf_counter()
    await manager.start()
    manager.register(registry)
    assert time.perf_counter() - t0 < 0.1
    try:
        # The first call during pre-warm waits for the server rather than failing.
        res = await execute(registry, "time/get_current_time", {"timezone": "UTC"})
        assert res.ok, res.result
        t1 = time.perf_counter()
        ghost = await execute(registry, "ghost/anything", {})
        assert ghost.result.startswith("Error: MCP server 'ghost' is not available: ")
        assert "nonexistent" in ghost.result
        with pytest.raises(ToolError, match="not available"):
            await manager.browse("ghost")
        assert time.perf_counter() - t1 < 0.5  # a server known to be down fails fast
        await asyncio.sleep(1.0)
        assert manager.server("ghost").restarts >= 2  # retried with backoff, in the background
        assert not await manager.wait_ready(0.2)
    finally:
        await manager.stop()
    assert all(c.state == "stopped" for c in manager.connections.values())


async def test_lifecycle_under_the_daemons_task_group():
    manager = McpManager([time_server()])
    registry = ToolRegistry()
    async with asyncio.TaskGroup() as tg:
        await manager.start(tg)
        manager.register(registry)
        assert {t.get_name() for t in asyncio.all_tasks()} >= {"mcp-time"}
        res = await execute(registry, "time/get_current_time", {"timezone": "UTC"})
        assert res.ok, res.result
        await manager.stop()
    assert manager.server("time").state == "stopped"


async def test_stop_ends_the_server_process():
    async with running(flaky()) as (_, registry):
        pid = int((await execute(registry, "test/flaky/pid")).result)
        os.kill(pid, 0)  # alive
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"MCP server process {pid} still running after stop()")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_streamable_http_server():
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        PY, FLAKY, "--http", str(port), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        # Started before the HTTP server listens: the connection retries with backoff until it does.
        url = McpServerConfig(name="web", category="web", url=f"http://127.0.0.1:{port}/mcp", timeout_s=2.0)
        async with running(url) as (_, registry):
            res = await execute(registry, "web/repeat", {"text": "hi", "times": "2"})
            assert (res.ok, res.result) == (True, "hi hi")
            slow = await execute(registry, "web/slow", {"seconds": 10})
            assert slow.result == "Error: web/slow timed out after 2 s"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)
