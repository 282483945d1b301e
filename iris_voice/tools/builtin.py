"""IRIS's native tools, registered exactly as external ones would be."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from iris_voice.config import Config
from iris_voice.errors import ConfigError
from iris_voice.events import Event
from iris_voice.tools.calculator import make_calculator_tool
from iris_voice.tools.clock import make_clock_tool
from iris_voice.tools.registry import ToolRegistry
from iris_voice.tools.timers import TimerService, TimerStore
from iris_voice.tools.timertools import make_timer_tools


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
    known = ", ".join(everything.names())
    if unknown:
        raise ConfigError([f"tools: unknown tool {n!r} (known: {known})" for n in unknown], "tools")
    if unknown := sorted(set(cfg.llm.direct_return) - names):
        problems = [f"llm.direct_return: unknown tool {n!r} (known: {known})" for n in unknown]
        raise ConfigError(problems, "llm")
    return everything.filtered(cfg.tools.enabled, cfg.tools.disabled), service
