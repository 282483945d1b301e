"""IRIS's native tools, registered exactly as external ones would be, and the MCP servers beside them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from iris_voice.config import Config
from iris_voice.errors import ConfigError
from iris_voice.events import Event
from iris_voice.tools.calculator import make_calculator_tool
from iris_voice.tools.clock import make_clock_tool
from iris_voice.tools.registry import ToolRegistry
from iris_voice.tools.timers import TimerService, TimerStore, make_timer_tools

if TYPE_CHECKING:
    from iris_voice.tools.mcp import McpManager


def build_registry(
    cfg: Config, publish: Callable[[Event], None] | None = None
) -> tuple[ToolRegistry, TimerService]:
    """The enabled native tools and the timer service they share."""
    tz = cfg.tools.timezone or None
    store = TimerStore(Path(cfg.tools.timers_db) if cfg.tools.timers_db else None)
    service = TimerService(store, publish or (lambda _e: None), tz_name=tz)
    everything = ToolRegistry([make_clock_tool(tz), make_calculator_tool(), *make_timer_tools(service, tz)])
    names = set(everything.names())
    unknown = sorted(set(cfg.tools.enabled or []) - names) + sorted(set(cfg.tools.disabled) - names)
    if unknown:
        known = ", ".join(everything.names())
        raise ConfigError([f"tools: unknown tool {n!r} (known: {known})" for n in unknown], "tools")
    return everything.filtered(cfg.tools.enabled, cfg.tools.disabled), service


@contextlib.asynccontextmanager
async def open_registry(
    cfg: Config,
    publish: Callable[[Event], None] | None = None,
    *,
    wait: bool = True,
    errlog: TextIO | None = None,
) -> AsyncIterator[tuple[ToolRegistry, TimerService, McpManager | None]]:
    """``build_registry`` plus the configured MCP servers, stopped again on exit.

    For one-shot commands (``iris ask``, ``iris tools``): with ``wait``, the servers'
    first start is awaited (up to their ``startup_timeout_s``) so their tools are
    listed; ``errlog`` receives the stdio servers' stderr (default: IRIS's). The
    manager is None when no server is configured, and the MCP SDK is then never
    imported. The daemon owns its manager itself (see ``iris_voice.tools.mcp``).
    """
    registry, timers = build_registry(cfg, publish)
    if not cfg.mcp.active():
        yield registry, timers, None
        return
    from iris_voice.tools.mcp import McpManager

    manager = McpManager(cfg.mcp, errlog=errlog)
    await manager.start()
    try:
        if wait:
            await manager.wait_settled()
        manager.register(registry)
        yield registry, timers, manager
    finally:
        await manager.stop()
