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
