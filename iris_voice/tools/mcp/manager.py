"""MCP tool servers in IRIS's registry: eager tools as ``category/tool``, lazy ones behind two meta-tools.

A small model pays for every tool definition on every turn, and MCP servers bring
dozens. A ``lazy`` server's tools stay out of the prompt: the model sees only
``get_tools_in_category`` and ``execute_tool`` (see ``mcp_lazy``). An ``eager``
server's tools join the registry directly, named ``category/tool``.

``McpManager`` owns every server connection (``mcp_client``). ``start()`` returns at
once and the servers start in the background (pre-warm); a turn never waits for a
starting server longer than ``mcp.start_wait_s``, and every failure reaches the model
as ``Error: …``. The daemon runs it for its whole life::

    manager = McpManager(cfg.mcp)
    await manager.start(task_group)      # returns at once
    manager.register(registry)           # eager tools now and on list changes, meta-tools
    ...
    await manager.stop()                 # on shutdown, before the task group ends
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TextIO

from mcp import types

from iris_voice.config import LlmConfig, McpConfig, McpServerConfig
from iris_voice.tools.mcp.client import McpServerConnection
from iris_voice.tools.mcp.lazy import BROWSE_TOOL, EXECUTE_TOOL, LazyTools, call_checked, meta_tools
from iris_voice.tools.mcp.saying import listing_label, say_result
from iris_voice.tools.mcp.vetting import tool_spec
from iris_voice.tools.paths import server_folders
from iris_voice.tools.registry import Tool, ToolRegistry, ToolSpec

log = logging.getLogger(__name__)

LAZY_HINT = "Call tools directly; never describe a tool call in words."
"""Appended to the system prompt when lazy MCP tools are offered (see ``McpManager.system_hint``)."""
_NAMED_CATEGORIES = 12  # lazy categories named in get_tools_in_category's description, at most

__all__ = [
    "BROWSE_TOOL",
    "EXECUTE_TOOL",
    "LAZY_HINT",
    "McpManager",
    "McpToolInfo",
    "tool_spec",
    "with_mcp_hint",
]


def with_mcp_hint(llm: LlmConfig, manager: McpManager | None) -> LlmConfig:
    """``llm`` with the manager's system-prompt hint appended (unchanged without lazy tools)."""
    hint = manager.system_hint() if manager else ""
    return llm.model_copy(update={"system_prompt": f"{llm.system_prompt}\n{hint}"}) if hint else llm


@dataclass(frozen=True)
class McpToolInfo:
    """One MCP tool as ``iris tools list`` shows it."""

    path: str
    """``category/tool``, or ``category/*`` for a server whose tools are not known yet."""
    description: str
    """The tool's description, or the server's state when it has no tool list."""
    mode: str
    """``lazy`` (reached through execute_tool) or ``eager`` (a registry tool)."""
    server: str
    """The server's configured name."""
    parameters: dict[str, Any] = field(default_factory=dict)
    """The compact input schema, as the model sees it."""


class McpManager:
    """Every configured MCP server: background start, registry tools, browse and execute."""

    def __init__(
        self,
        config: McpConfig | Iterable[McpServerConfig],
        *,
        start_wait_s: float | None = None,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        errlog: TextIO | None = None,
    ) -> None:
        if isinstance(config, McpConfig):
            servers = config.active()
            wait = config.start_wait_s if start_wait_s is None else start_wait_s
            self.say_results = config.say_results
        else:
            servers = [s for s in config if s.enabled]
            wait = 2.0 if start_wait_s is None else start_wait_s
            self.say_results = McpConfig().say_results
        """Whether short results may be said without a model round (``mcp.say_results``)."""
        opts = {"start_wait_s": wait, "backoff_initial_s": backoff_initial_s, "backoff_max_s": backoff_max_s}
        self.connections = {s.name: McpServerConnection(s, errlog=errlog, **opts) for s in servers}
        """Connections by server name, in config order."""
        self.lazy = LazyTools(c for c in self.connections.values() if c.config.mode == "lazy")
        """The browse tree and the meta-tools' behaviour."""
        self._by_category = {c.config.category: c for c in self.connections.values()}
        self._registries: list[ToolRegistry] = []
        self._eager_names: dict[tuple[int, str], list[str]] = {}
        for conn in self.connections.values():
            conn.on_tools_changed(self._sync_tools)

    def __bool__(self) -> bool:
        return bool(self.connections)

    async def start(self, task_group: asyncio.TaskGroup | None = None) -> None:
        """Start every server in the background (pre-warm); returns without waiting for them."""
        for conn in self.connections.values():
            conn.start(task_group)

    async def stop(self, timeout: float = 8.0) -> None:
        """Stop every server, in parallel, each within ``timeout`` seconds (plus a kill margin)."""
        await asyncio.gather(*(c.stop(timeout) for c in self.connections.values()))

    async def wait_ready(self, timeout: float) -> bool:
        """Wait for every server to be ready; False if any is not within ``timeout`` seconds."""
        results = await asyncio.gather(*(c.wait_ready(timeout) for c in self.connections.values()))
        return all(results)

    async def wait_settled(self, timeout: float | None = None) -> bool:
        """Wait until every server is ready or failed once (the CLI should not sit out backoff).

        ``timeout`` defaults to the longest ``startup_timeout_s``; True if all are ready.
        """
        if timeout is None:
            timeout = max((c.config.startup_timeout_s for c in self.connections.values()), default=0)
        results = await asyncio.gather(*(c.wait_settled(timeout) for c in self.connections.values()))
        return all(results)

    async def __aenter__(self) -> McpManager:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def server(self, category: str) -> McpServerConnection | None:
        """The server whose tools live at ``category`` (``time``, ``utilities/math``)."""
        return self._by_category.get(category.strip().strip("/").lower())

    def register(self, registry: ToolRegistry, *, meta: bool = True) -> None:
        """Add eager tools now and whenever their lists change, lazy ones as hidden tools
        (callable by name, shown only when retrieval picks them), and, with ``meta``, the
        meta-tools if a server is lazy."""
        self._registries.append(registry)
        for conn in self.connections.values():
            self._sync_into(registry, conn)
        if self.lazy and meta:
            # First in the prompt, execute before browse: the order in which
            # Qwen2.5-Coder-1.5B browsed and then executed (at the end it wrote an empty
            # <tools></tools> for a question only an MCP tool answers).
            for tool in reversed(meta_tools(self.lazy, self._categories())):
                registry.register(tool, first=True)

    def _categories(self) -> list[tuple[str, str]]:
        """``(category, description)`` per lazy server, from the config alone (a stable prompt).

        With many servers only the top-level categories are named, to keep the prompt short.
        """
        servers = self.lazy.tree.servers()
        if len(servers) <= _NAMED_CATEGORIES:
            return [(s.config.category, s.config.description) for s in servers]
        return [(name, "") for name in self.lazy.tree.children]

    def system_hint(self) -> str:
        """A line for the system prompt when lazy tools are offered, else ``""``.

        Asked to browse first, a small model tends to say what it would call instead of
        calling it; this line (with the enum of categories) made Qwen2.5-Coder-1.5B call.
        It stays with retrieval too (no meta-tools): without it the development half of
        bench-tools fell from 30 to 28 right ("Remember that my sister Anna's birthday…"
        was described in words, not stored; a square root was answered without the
        calculator).
        """
        return LAZY_HINT if self.lazy else ""

    def tool_specs(self, mode: str | None = None) -> list[ToolSpec]:
        """Every known MCP tool as an eager registration shows it (``mode`` filters: lazy, eager)."""
        return [
            tool_spec(c.config.category, t, c.config.arguments)
            for c in self.connections.values()
            if mode is None or c.config.mode == mode
            for t in c.tools
        ]

    def listing(self) -> list[McpToolInfo]:
        """Every MCP tool under its path, and one line per server that has not listed its tools."""
        rows = []
        for conn in self.connections.values():
            cfg = conn.config
            for tool in conn.tools:
                spec = tool_spec(cfg.category, tool, cfg.arguments)
                rows.append(McpToolInfo(spec.name, spec.description, cfg.mode, cfg.name, spec.parameters))
            for name, why in conn.skipped.items():  # names made printable by vetting
                rows.append(McpToolInfo(f"{cfg.category}/{name}", f"(skipped: {why})", cfg.mode, cfg.name))
            if conn.more_skipped:
                why = f"(skipped: {conn.more_skipped} more tools)"
                rows.append(McpToolInfo(f"{cfg.category}/…", why, cfg.mode, cfg.name))
            if not conn.listed:
                rows.append(McpToolInfo(f"{cfg.category}/*", f"({conn.unavailable()})", cfg.mode, cfg.name))
        return rows

    async def browse(self, path: str = "") -> str:
        """What ``get_tools_in_category`` answers (raises ``ToolError`` on a bad path)."""
        return await self.lazy.browse(path)

    async def execute(self, tool_path: str, arguments: dict[str, Any] | None = None) -> str:
        """What ``execute_tool`` does (raises ``ToolError`` with what to fix)."""
        return await self.lazy.execute(tool_path, arguments or {})

    # -- registry tools (eager: listed; lazy: hidden) -------------------------------------
    def _registry_tool(self, conn: McpServerConnection, tool: types.Tool, folders: list[str]) -> Tool:
        async def handler(**arguments: Any) -> str:
            # The newest schema the server listed, in case it changed since registration.
            current = next((t for t in conn.tools if t.name == tool.name), tool)
            return await call_checked(conn, current, arguments)

        spec = tool_spec(conn.config.category, tool, conn.config.arguments)
        meta = {
            "server": conn.name,
            "category": conn.config.category,
            "mode": conn.config.mode,
            "mcp_tool": tool.name,
            "server_description": conn.config.description,
            "folders": folders,  # where a guessed path is mapped (tools.paths)
        }
        # A server's own word that the tool changes nothing lets it run for a speculative turn.
        read_only = bool(tool.annotations is not None and tool.annotations.readOnlyHint)
        # the chat loop uses it for readers only; a tool without parameters says what it lists
        label = "" if (spec.parameters.get("properties") or {}) else listing_label(tool.name)
        say = partial(say_result, label=label) if self.say_results else None
        return Tool(spec=spec, handler=handler, model=None, meta=meta, read_only=read_only, say=say)

    def _sync_tools(self, conn: McpServerConnection) -> None:
        for registry in self._registries:
            self._sync_into(registry, conn)

    def _sync_into(self, registry: ToolRegistry, conn: McpServerConnection) -> None:
        """Replace ``conn``'s tools in ``registry`` by its current list (hidden when lazy)."""
        key = (id(registry), conn.name)
        for name in self._eager_names.pop(key, []):
            registry.unregister(name)
        names = []
        folders = server_folders(conn.config.args)  # a few stat calls, once per server
        for tool in conn.tools:
            entry = self._registry_tool(conn, tool, folders)
            if entry.name in registry.callable_names():
                log.warning("MCP tool %s clashes with a registered tool; skipped", entry.name)
                continue
            registry.register(entry, hidden=conn.config.mode == "lazy")
            names.append(entry.name)
        self._eager_names[key] = names
