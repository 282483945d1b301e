"""MCP servers that misbehave: slow, crashing, slow to start, malformed schemas, changing lists.

The server is tests/mcp_servers/flaky_server.py (FastMCP), over stdio unless a test
says otherwise; backoff is shortened so restarts happen within a test.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

import pytest

from iris_voice.config import McpServerConfig
from iris_voice.tools.mcp.manager import BROWSE_TOOL, McpManager
from iris_voice.tools.registry import ToolRegistry
from iris_voice.tools.render import FORMATS, render
from tests.support.mcp_servers import execute, flaky, http_flaky, running, time_server

pytestmark = pytest.mark.timeout(90)


async def _until(check, timeout: float = 10.0) -> bool:
    """Poll ``check()`` every 50 ms until it is true or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


async def test_slow_call_times_out_while_everything_else_stays_responsive():
    async with running(flaky(timeout_s=1.0)) as (_, registry):
        t0 = time.perf_counter()
        slow = asyncio.create_task(execute(registry, "test/flaky/slow", {"seconds": 20}))
        await asyncio.sleep(0.1)
        echo = await execute(registry, "test/flaky/echo", {"text": "still here"})
        assert (echo.ok, echo.result) == (True, "still here")
        # Answered, and the event loop ran on, while the slow call still waits for its timeout.
        for _ in range(10):
            await asyncio.sleep(0.02)
        assert not slow.done()
        res = await slow
        assert res.result == "Error: test/flaky/slow timed out after 1 s"
        assert 0.9 < time.perf_counter() - t0 < 15  # the timeout, not the call's 20 s
        again = await execute(registry, "test/flaky/repeat", {"text": "ok", "times": "2"})
        assert (again.ok, again.result) == (True, "ok ok")  # "2" coerced to 2 for the server


async def test_a_crashed_server_becomes_an_error_then_comes_back():
    async with running(flaky()) as (manager, registry):
        conn = manager.server("test/flaky")
        pid = int((await execute(registry, "test/flaky/pid")).result)
        t0 = time.perf_counter()
        crash = await execute(registry, "test/flaky/crash")
        assert crash.result == (
            "Error: test/flaky/crash failed: MCP server 'flaky' stopped (the server closed the connection)"
        )
        assert time.perf_counter() - t0 < conn.config.timeout_s / 2  # noticed at once, not at the timeout
        # While it restarts, a call fails fast (or waits for the restart, briefly): never a hang.
        t1 = time.perf_counter()
        during = await execute(registry, "test/flaky/echo", {"text": "during"})
        assert time.perf_counter() - t1 < manager.server("test/flaky").start_wait_s + 5
        assert during.ok or during.result.startswith("Error: MCP server 'flaky' ")
        assert await conn.wait_ready(10), conn.last_error
        back = await execute(registry, "test/flaky/echo", {"text": "back"})
        assert (back.ok, back.result) == (True, "back")
        assert conn.restarts == 1
        assert int((await execute(registry, "test/flaky/pid")).result) != pid


async def test_a_server_that_keeps_dying_is_retried_with_growing_backoff():
    dead = McpServerConfig(name="ghost", category="ghost", command="/nonexistent/mcp-server", timeout_s=1.0)
    manager = McpManager([dead], backoff_initial_s=0.1, backoff_max_s=0.4, start_wait_s=20)
    registry = ToolRegistry()
    await manager.start()
    manager.register(registry)
    try:
        conn = manager.server("ghost")
        assert await manager.wait_settled(5) is False
        t0 = time.perf_counter()
        res = await execute(registry, "ghost/anything", {})
        assert res.result.startswith("Error: MCP server 'ghost' is not available: ")
        assert "nonexistent" in res.result and "(restarting" in res.result
        browse = await registry.call(BROWSE_TOOL, {"path": "ghost"})
        assert browse.result.startswith("Error: MCP server 'ghost' is not available")
        assert time.perf_counter() - t0 < 10  # a server known to be down fails fast, no 20 s wait
        await asyncio.sleep(1.5)
        # 0.1 + 0.2 + 0.4 + 0.4 … : about five attempts in 1.5 s, not fifteen.
        assert 2 <= conn.restarts <= 7, conn.restarts
    finally:
        await manager.stop()
    assert conn.state == "stopped"


async def test_a_slow_starting_server_never_holds_a_turn_longer_than_start_wait():
    slow_start = flaky(args=["--start-delay", "6"])
    async with running(slow_start, ready=False, start_wait_s=0.5) as (manager, registry):
        t0 = time.perf_counter()
        res = await execute(registry, "test/flaky/echo", {"text": "hi"})
        assert 0.4 < time.perf_counter() - t0 < 4  # start_wait_s, not the server's 6 s start
        assert res.result == "Error: MCP server 'flaky' is still starting; try again in a few seconds"
        root = await registry.call(BROWSE_TOOL, {"path": ""})
        assert "- test (1 subcategory, starting)" in root.result
        assert await manager.wait_ready(20)
        res = await execute(registry, "test/flaky/echo", {"text": "hi"})
        assert (res.ok, res.result) == (True, "hi")


async def test_malformed_schemas_are_skipped_with_a_log_line_and_the_rest_works(caplog):
    caplog.set_level(logging.WARNING, logger="iris_voice.tools.mcp.client")
    async with running(flaky(mode="eager"), flaky(category="test/lazy", name="flaky2")) as (
        manager,
        registry,
    ):
        names = registry.names()
        assert "test/flaky/odd" not in names and "test/flaky/bare" not in names
        assert {"test/flaky/echo", "test/flaky/quirky"} <= set(names)
        logged = [r.getMessage() for r in caplog.records]
        assert any("tool odd skipped: invalid JSON Schema at properties/weird" in m for m in logged), logged
        assert any("tool bare skipped: the input schema has type 'string'" in m for m in logged), logged
        # The odd-but-valid schema renders in every format and its tool works.
        for fmt in FORMATS:
            text = str(render(registry.specs(), fmt))
            assert "test/flaky/quirky" in text and "test/flaky/odd" not in text
        assert "title" in registry.get("test/flaky/quirky").spec.parameters["properties"]
        res = await registry.call("test/flaky/quirky", {"count": "2", "title": "hi"})
        assert (res.ok, res.result) == (True, "quirky count=2 title=hi")
        # Lazy: the browse listing leaves them out; executing one says why it cannot be used.
        leaf = (await registry.call(BROWSE_TOOL, {"path": "test/lazy"})).result
        assert "test/lazy/echo:" in leaf and "test/lazy/odd" not in leaf
        odd = await execute(registry, "test/lazy/odd", {"count": 1})
        assert odd.result.startswith(
            "Error: test/lazy/odd cannot be used: invalid JSON Schema at properties/weird"
        )
        listing = {i.path: i.description for i in manager.listing()}
        assert listing["test/flaky/bare"].startswith("(skipped: the input schema has type 'string'")


async def test_list_changed_refreshes_the_cached_tools():
    twin = flaky(category="test/twin", name="flaky2")
    async with running(flaky(mode="eager"), twin) as (manager, registry):
        assert "test/flaky/late_tool" not in registry
        added = await registry.call("test/flaky/add_tool", {"name": "late_tool"})
        assert added.ok, added.result
        assert await _until(lambda: "test/flaky/late_tool" in registry)
        res = await registry.call("test/flaky/late_tool", {})
        assert (res.ok, res.result) == (True, "I am late_tool")
        # The lazy twin learns about its own new tool the same way.
        await execute(registry, "test/twin/add_tool", {"name": "later"})
        assert await _until(lambda: any(t.name == "later" for t in manager.server("test/twin").tools))
        assert "test/twin/later:" in (await registry.call(BROWSE_TOOL, {"path": "test/twin"})).result
        res = await execute(registry, "test/twin/later")
        assert (res.ok, res.result) == (True, "I am later")


async def test_start_returns_at_once_and_the_first_call_waits_for_prewarm():
    manager = McpManager([time_server()], start_wait_s=15.0)
    registry = ToolRegistry()
    t0 = time.perf_counter()
    await manager.start()
    manager.register(registry)
    assert time.perf_counter() - t0 < 5  # not start_wait_s's 15 s
    try:
        res = await execute(registry, "time/get_current_time", {"timezone": "UTC"})
        assert res.ok, res.result
    finally:
        await manager.stop()


async def test_lifecycle_under_the_daemons_task_group():
    manager = McpManager([time_server()], start_wait_s=15.0)
    registry = ToolRegistry()
    async with asyncio.TaskGroup() as tg:
        await manager.start(tg)
        manager.register(registry)
        assert "mcp-time" in {t.get_name() for t in asyncio.all_tasks()}
        res = await execute(registry, "time/get_current_time", {"timezone": "UTC"})
        assert res.ok, res.result
        await manager.stop()
    assert manager.server("time").state == "stopped"


async def test_cancelling_the_task_group_stops_the_servers_cleanly():
    """A daemon shutting down by cancellation (SIGTERM) must not trip anyio's cancel scopes."""
    manager = McpManager([flaky()], start_wait_s=15.0)
    registry = ToolRegistry()
    pid = 0

    async def daemon() -> None:
        nonlocal pid
        async with asyncio.TaskGroup() as tg:
            await manager.start(tg)
            manager.register(registry)
            pid = int((await execute(registry, "test/flaky/pid")).result)
            await asyncio.sleep(3600)

    task = asyncio.create_task(daemon())
    assert await _until(lambda: pid != 0, 20)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _until(lambda: not _alive(pid), 10), f"MCP server process {pid} still running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


async def test_stop_ends_the_server_process():
    async with running(flaky()) as (_, registry):
        pid = int((await execute(registry, "test/flaky/pid")).result)
        assert _alive(pid)
    assert await _until(lambda: not _alive(pid), 5), f"MCP server process {pid} still running after stop()"


async def test_streamable_http_server():
    async with http_flaky() as url:
        # Started before the HTTP server listens: the connection retries with backoff until it does.
        web = McpServerConfig(name="web", category="web", url=url, timeout_s=2.0)
        async with running(web) as (_, registry):
            res = await execute(registry, "web/repeat", {"text": "hi", "times": "2"})
            assert (res.ok, res.result) == (True, "hi hi")
            slow = await execute(registry, "web/slow", {"seconds": 10})
            assert slow.result == "Error: web/slow timed out after 2 s"
