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
from iris_voice.tools.timers import TimerService, TimerStore
from iris_voice.tools.timertools import make_timer_tools

if TYPE_CHECKING:
    from iris_voice.tools.mcp import McpManager


def build_registry(
    cfg: Config, publish: Callable[[Event], None] | None = None
) -> tuple[ToolRegistry, TimerService]:
    """The enabled native tools and the timer service they share."""
    tz = cfg.tools.timezone or None
    store = TimerStore(Path(cfg.tools.timers_db) if cfg.tools.timers_db else None)
    service = TimerService(store, publish or (lambda _e: None), tz_name=tz)
    # The order is measured, not cosmetic: with nine tools, Qwen2.5-1.5B answered "what time
    # is it in Tokyo" with an empty "<tools></tools>" when the clock came first, and did the
    # arithmetic itself when the calculator came last; this order got both right.
    everything = ToolRegistry([*make_timer_tools(service, tz), make_calculator_tool(), make_clock_tool(tz)])
    names = set(everything.names())
    unknown = sorted(set(cfg.tools.enabled or []) - names) + sorted(set(cfg.tools.disabled) - names)
    known = ", ".join(everything.names())
    if unknown:
        raise ConfigError([f"tools: unknown tool {n!r} (known: {known})" for n in unknown], "tools")
    if unknown := sorted(set(cfg.llm.direct_return) - names):
        problems = [f"llm.direct_return: unknown tool {n!r} (known: {known})" for n in unknown]
        raise ConfigError(problems, "llm")
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
