"""IRIS's built-in tools, found in this package: the one place a tool is registered.

Every module here that defines ``provide(ctx) -> list[Tool]`` is a tool family; its
``ORDER`` is its place in the prompt. Adding a tool means adding a module (or a function
to one): its function, whether its sentence is a direct answer, its trigger words and
its fast-path intents are all declared on the ``Tool`` it provides, and the rest of IRIS
— the registry, the chat loop, boost, the fast path, ``iris check-config`` — reads them
from there. Built-in tools register exactly as MCP tools do.

The order is measured, not cosmetic: with nine tools, Qwen2.5-1.5B answered "what time
is it in Tokyo" with an empty "<tools></tools>" when the clock came first, and did the
arithmetic itself when the calculator came last; timers, calculator, clock got both right.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from iris_voice.config import Config
from iris_voice.errors import ConfigError
from iris_voice.events import Event
from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerStore
from iris_voice.tools.builtin.context import ToolContext
from iris_voice.tools.registry import Tool, ToolRegistry

__all__ = [
    "ToolContext",
    "build_registry",
    "builtin_tools",
    "declared_names",
    "declared_registry",
    "name_problems",
]


def tool_modules() -> list[ModuleType]:
    """The modules of this package that provide tools, in prompt order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if callable(getattr(module, "provide", None)):
            found.append(module)
    return sorted(found, key=lambda m: (getattr(m, "ORDER", 100), m.__name__))


def builtin_tools(ctx: ToolContext) -> list[Tool]:
    """Every built-in tool, in prompt order."""
    return [tool for module in tool_modules() for tool in module.provide(ctx)]


def _ignore(_event: Event) -> None:
    pass


def declared_registry(timezone: str | None = None) -> ToolRegistry:
    """Every built-in tool over a scratch timer service (an in-memory store): what the tools
    declare — names, words, intents — without opening any state of the user's."""
    scratch = TimerService(TimerStore(":memory:"), _ignore, tz_name=timezone, resync_seconds=None)
    return ToolRegistry(builtin_tools(ToolContext(timezone, scratch)))


def declared_names() -> list[str]:
    """The names of every built-in tool (``iris check-config``)."""
    return declared_registry().names()


def name_problems(cfg: Config, names: list[str]) -> list[str]:
    """``key: reason`` lines for tool names in the configuration that no tool has."""
    known = ", ".join(names)
    out = []
    for key, listed in (
        ("tools.enabled", cfg.tools.enabled or []),
        ("tools.disabled", cfg.tools.disabled),
        ("llm.direct_return", cfg.llm.direct_return or []),
    ):
        out += [f"{key}: unknown tool {n!r} (known: {known})" for n in listed if n not in names]
    return out


def build_registry(cfg: Config, timers: TimerService) -> ToolRegistry:
    """The enabled built-in tools over ``timers``; a ConfigError for unknown tool names."""
    everything = ToolRegistry(builtin_tools(ToolContext(cfg.tools.timezone or None, timers)))
    problems = name_problems(cfg, everything.names())
    if problems:
        raise ConfigError(problems, "tools")
    return everything.filtered(cfg.tools.enabled, cfg.tools.disabled, cfg.llm.direct_return)
