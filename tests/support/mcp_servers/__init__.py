"""MCP server configs for the tests: the real PyPI servers and the misbehaving FastMCP one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from iris_voice.config import McpServerConfig
from iris_voice.tools.mcp.manager import EXECUTE_TOOL, McpManager
from iris_voice.tools.registry import ToolRegistry, ToolResult

FLAKY = str(Path(__file__).parent / "flaky_server.py")
PY = sys.executable
ROOT = str(Path(__file__).parents[3])
"""The repository root: the flaky server imports tests.support.hostile.tool_servers from there."""
FLAKY_ENV = {"PYTHONPATH": ROOT}
"""What the flaky server needs in its environment (a stdio server gets only a safe default)."""


def time_server(mode: str = "lazy", category: str = "time", **extra: object) -> McpServerConfig:
    """The real mcp-server-time, in UTC."""
    args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    name = category.replace("/", "-")
    return McpServerConfig(name=name, category=category, command=PY, args=args, mode=mode, **extra)


def calculator(category: str = "utilities/math", mode: str = "lazy", **extra: object) -> McpServerConfig:
    """The real mcp-server-calculator."""
    args = ["-m", "mcp_server_calculator"]
    return McpServerConfig(name="calculator", category=category, command=PY, args=args, mode=mode, **extra)


def flaky(
    mode: str = "lazy", category: str = "test/flaky", name: str = "flaky", **extra: object
) -> McpServerConfig:
    """The misbehaving test server of tests/support/mcp_servers (``args`` extends its command line)."""
    args = [FLAKY, *extra.pop("args", [])]  # type: ignore[misc]
    env = {**FLAKY_ENV, **extra.pop("env", {})}  # type: ignore[dict-item]
    return McpServerConfig(name=name, category=category, command=PY, args=args, mode=mode, env=env, **extra)


def hostile(*kinds: str, mode: str = "eager", category: str = "evil", **extra: object) -> McpServerConfig:
    """The flaky server with the hostile tool lists of ``kinds`` (names, schemas, many)."""
    args = [a for kind in kinds for a in ("--hostile", kind)]
    return flaky(mode=mode, category=category, name=category.replace("/", "-"), args=args, **extra)


@contextlib.asynccontextmanager
async def running(
    *configs: McpServerConfig, ready: bool = True, **opts: float
) -> AsyncIterator[tuple[McpManager, ToolRegistry]]:
    """A started manager with its tools in a fresh registry; stopped afterwards."""
    opts = {"backoff_initial_s": 0.2, "backoff_max_s": 1.0, **opts}
    manager = McpManager(configs, **opts)
    registry = ToolRegistry()
    await manager.start()
    try:
        if ready:
            assert await manager.wait_ready(30), {c.name: c.last_error for c in manager.connections.values()}
        manager.register(registry)
        yield manager, registry
    finally:
        await manager.stop()


async def execute(registry: ToolRegistry, tool_path: str, arguments: object = None) -> ToolResult:
    """Call the execute_tool meta-tool as the model would."""
    return await registry.call(EXECUTE_TOOL, {"tool_path": tool_path, "arguments": arguments})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.asynccontextmanager
async def http_flaky(*args: str) -> AsyncIterator[str]:
    """The flaky server on streamable HTTP (on 127.0.0.1, extra ``args``): yields its URL.

    The URL is handed out before the server listens: IRIS's connection retries until it does.
    """
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        PY,
        FLAKY,
        "--http",
        str(port),
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, **FLAKY_ENV},
    )
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)
