"""MCP tools in IRIS's registry: eager tools under ``category/tool``, lazy ones behind two meta-tools.

A small model pays for every tool definition on every turn, and MCP servers bring
dozens. For a ``lazy`` server the model sees only ``get_tools_in_category`` (browse the
category tree; a leaf lists its tools with compact parameters) and ``execute_tool``
(run ``category/tool`` with arguments validated against the server's schema). An
``eager`` server's tools join the registry directly, renamed ``category/tool``.

Servers start in the background (``McpManager.start``); nothing here waits longer
than a server's own timeouts, and every failure reaches the model as ``Error: …``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, TextIO

from mcp import types
from pydantic import BeforeValidator

from iris_voice.errors import ToolError
from iris_voice.llm.render import SYSTEM_TOOL_INSTRUCTIONS, render
from iris_voice.tools.mcp_client import McpServerConnection
from iris_voice.tools.mcp_config import McpConfig, McpServerConfig
from iris_voice.tools.mcp_schema import check_arguments, compact_input_schema
from iris_voice.tools.registry import Tool, ToolRegistry, ToolSpec, tool_from_function

log = logging.getLogger(__name__)

BROWSE_TOOL = "get_tools_in_category"
"""Name of the meta-tool that browses lazy MCP categories."""
EXECUTE_TOOL = "execute_tool"
"""Name of the meta-tool that runs a lazy MCP tool by its path."""
_DESCRIPTION_CHARS = 400  # eager descriptions: the first paragraph, cut here


def tool_spec(category: str, tool: types.Tool) -> ToolSpec:
    """How an MCP tool is shown to a model: ``category/name``, first paragraph, compact schema."""
    text = (tool.description or tool.title or "").strip().split("\n\n")[0]
    text = " ".join(text.split())
    if len(text) > _DESCRIPTION_CHARS:
        text = text[: _DESCRIPTION_CHARS - 1].rstrip() + "…"
    return ToolSpec(f"{category}/{tool.name}", text, compact_input_schema(tool.inputSchema))


def _json_object(value: Any) -> Any:
    """Small models often send ``arguments`` as a JSON string: accept it as the object it holds."""
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            return value  # pydantic then says "must be a valid dictionary"
    return value


@dataclass
class CategoryNode:
    """One category of the browse tree: sub-categories and at most one server's tools."""

    path: str
    """Full path (``utilities/math``); empty for the root."""
    children: dict[str, CategoryNode] = field(default_factory=dict)
    """Sub-categories by their last path segment."""
    server: McpServerConnection | None = None
    """The server whose tools live exactly here, if any."""

    def servers(self) -> list[McpServerConnection]:
        """Every server in this subtree."""
        found = [self.server] if self.server else []
        for child in self.children.values():
            found += child.servers()
        return found


def build_tree(connections: Iterable[McpServerConnection]) -> CategoryNode:
    """The category tree of ``connections`` (their configs' ``category`` paths)."""
    root = CategoryNode("")
    for conn in connections:
        node = root
        for part in conn.config.category.split("/"):
            node = node.children.setdefault(part, CategoryNode(f"{node.path}/{part}".lstrip("/")))
        node.server = conn
    return root


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
    """All configured MCP servers: background start, registry tools, browse and execute."""

    def __init__(
        self,
        config: McpConfig | Iterable[McpServerConfig],
        *,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        errlog: TextIO | None = None,
    ) -> None:
        if isinstance(config, McpConfig):
            servers = list(config.servers) if config.enabled else []
        else:
            servers = list(config)
        backoff = {"backoff_initial_s": backoff_initial_s, "backoff_max_s": backoff_max_s, "errlog": errlog}
        self.connections = {s.name: McpServerConnection(s, **backoff) for s in servers}
        """Connections by server name."""
        self._by_category = {c.config.category: c for c in self.connections.values()}
        self.tree = build_tree(c for c in self.connections.values() if c.config.mode == "lazy")
        """Browse tree of the lazy servers."""
        self._registries: list[ToolRegistry] = []
        self._eager_names: dict[tuple[int, str], list[str]] = {}
        for conn in self.connections.values():
            if conn.config.mode == "eager":
                conn.on_tools_changed(self._sync_eager)

    async def start(self, task_group: asyncio.TaskGroup | None = None) -> None:
        """Start every server in the background (pre-warm); returns without waiting for them."""
        for conn in self.connections.values():
            conn.start(task_group)

    async def stop(self, timeout: float = 8.0) -> None:
        """Stop every server, in parallel, each within ``timeout`` seconds."""
        await asyncio.gather(*(c.stop(timeout) for c in self.connections.values()))

    async def wait_ready(self, timeout: float) -> bool:
        """Wait for every server to be ready; False if any is not within ``timeout`` seconds."""
        results = await asyncio.gather(*(c.wait_ready(timeout) for c in self.connections.values()))
        return all(results)

    async def wait_settled(self, timeout: float) -> bool:
        """Wait until every server is ready or has failed once (a CLI should not sit out backoff)."""
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

    def top_level(self) -> list[str]:
        """Top-level categories of the lazy servers, in config order."""
        return list(self.tree.children)

    def register(self, registry: ToolRegistry) -> None:
        """Add eager tools now and whenever their lists change, plus the meta-tools if any server is lazy."""
        self._registries.append(registry)
        for conn in self.connections.values():
            if conn.config.mode == "eager":
                self._sync_into(registry, conn)
        if self.tree.children:
            registry.register(self._browse_tool())
            registry.register(self._execute_tool())

    def tool_specs(self) -> list[ToolSpec]:
        """Every known MCP tool as an eager registration would show it (for listings and benchmarks)."""
        return [tool_spec(c.config.category, t) for c in self.connections.values() for t in c.tools]

    def listing(self) -> list[McpToolInfo]:
        """Every MCP tool under its path, and a placeholder for servers that have not listed yet."""
        rows = []
        for conn in self.connections.values():
            cfg = conn.config
            for tool in conn.tools:
                spec = tool_spec(cfg.category, tool)
                rows.append(McpToolInfo(spec.name, spec.description, cfg.mode, cfg.name, spec.parameters))
            if not conn.listed:
                state = f"server {conn.state}" + (f": {conn.last_error}" if conn.last_error else "")
                rows.append(McpToolInfo(f"{cfg.category}/*", f"({state})", cfg.mode, cfg.name))
        return rows

    async def browse(self, path: str = "") -> str:
        """What ``get_tools_in_category`` answers: sub-categories, and a leaf's tools."""
        key = path.strip().strip("/").lower()
        node = self._find(key)
        if node is None:
            holder = self._find(key.rpartition("/")[0]) if "/" in key else None
            if holder is None or holder.server is None:  # a tool path names its category: show that
                tops = ", ".join(self.top_level())
                raise ToolError(f"unknown category {path!r}. Top-level categories: {tops}")
            node = holder
        lines: list[str] = []
        if node.children:
            lines.append(f"Categories in {node.path}:" if node.path else "Categories:")
            lines += [self._category_line(child) for child in node.children.values()]
        listed = False
        if node.server is not None:
            try:
                tools = await node.server.wait_listed(node.server.config.timeout_s)
            except ConnectionError as exc:
                if not node.children:
                    raise ToolError(f"MCP server '{node.server.name}' is not available: {exc}") from None
                lines.append(f"Tools in {node.path}: not available ({exc})")
            else:
                specs = [tool_spec(node.path, t) for t in tools]
                lines.append(f"Tools in {node.path}:")
                lines.append(_concise(specs))
                listed = bool(specs)
        if listed:
            example = tool_spec(node.path, node.server.tools[0]).name if node.server else ""
            lines.append(f'Next: call {EXECUTE_TOOL} with tool_path (e.g. "{example}") and arguments.')
        else:
            lines.append(f"Next: call {BROWSE_TOOL} with one of these paths.")
        return "\n".join(lines)

    async def execute(self, tool_path: str, arguments: dict[str, Any] | None = None) -> str:
        """What ``execute_tool`` does: resolve ``category/tool``, validate, call, return the text."""
        key = tool_path.strip().strip("/")
        category, _, name = key.rpartition("/")
        conn = self.server(category) if category else self._owner_of(name)
        if conn is None:
            if self._find(key.lower()) is not None:
                raise ToolError(
                    f"{tool_path!r} is a category, not a tool: call {BROWSE_TOOL} with path {key!r}"
                )
            tops = ", ".join(self.top_level())
            raise ToolError(
                f"unknown tool {tool_path!r}: call {BROWSE_TOOL} first (top-level categories: {tops})"
            )
        try:
            tools = await conn.wait_listed(conn.config.timeout_s)
        except ConnectionError as exc:
            raise ToolError(f"MCP server '{conn.name}' is not available: {exc}") from None
        tool = next((t for t in tools if t.name == name), None)
        tool = tool or next((t for t in tools if t.name.casefold() == name.casefold()), None)
        if tool is None:
            names = ", ".join(t.name for t in tools) or "none"
            raise ToolError(f"{conn.config.category} has no tool {name!r}; its tools: {names}")
        return await self._call(conn, tool, arguments or {})

    def _find(self, key: str) -> CategoryNode | None:
        node = self.tree
        for part in key.split("/") if key else ():
            node = node.children.get(part)
            if node is None:
                return None
        return node

    def _owner_of(self, name: str) -> McpServerConnection | None:
        """The one lazy server that has a tool called ``name`` (a model may leave out the category)."""
        owners = [c for c in self.tree.servers() if any(t.name == name for t in c.tools)]
        return owners[0] if len(owners) == 1 else None

    @staticmethod
    def _category_line(node: CategoryNode) -> str:
        servers = node.servers()
        desc = node.server.config.description if node.server else ""
        count = ""
        if servers and all(s.listed for s in servers):
            n = sum(len(s.tools) for s in servers)
            count = f"{n} tool" + ("s" if n != 1 else "")
        subs = len(node.children)
        if subs:
            count = ", ".join(filter(None, [f"{subs} subcategor" + ("ies" if subs > 1 else "y"), count]))
        return f"- {node.path}" + (f": {desc}" if desc else "") + (f" ({count})" if count else "")

    async def _call(self, conn: McpServerConnection, tool: types.Tool, arguments: dict[str, Any]) -> str:
        """Validate ``arguments`` against the tool's input schema, call it, return its text."""
        path = f"{conn.config.category}/{tool.name}"
        args = check_arguments(path, arguments, tool.inputSchema)
        outcome = await conn.call(tool.name, args)
        if not outcome.ok:
            raise ToolError(outcome.text.removeprefix("Error:").strip())
        return outcome.text

    def _eager_tool(self, conn: McpServerConnection, tool: types.Tool) -> Tool:
        async def handler(**arguments: Any) -> str:
            """Validate and call this MCP tool (the registry passes the model's arguments as is)."""
            # The newest schema the server listed, in case it changed since registration.
            current = next((t for t in conn.tools if t.name == tool.name), tool)
            return await self._call(conn, current, arguments)

        spec = tool_spec(conn.config.category, tool)
        meta = {"server": conn.name, "category": conn.config.category, "mode": "eager", "mcp_tool": tool.name}
        return Tool(spec=spec, handler=handler, model=None, meta=meta)

    def _sync_eager(self, conn: McpServerConnection) -> None:
        for registry in self._registries:
            self._sync_into(registry, conn)

    def _sync_into(self, registry: ToolRegistry, conn: McpServerConnection) -> None:
        """Replace ``conn``'s eager tools in ``registry`` by its current list."""
        key = (id(registry), conn.name)
        for name in self._eager_names.pop(key, []):
            registry.unregister(name)
        names = []
        for tool in conn.tools:
            entry = self._eager_tool(conn, tool)
            if entry.name in registry:
                log.warning("MCP tool %s clashes with a registered tool; skipped", entry.name)
                continue
            registry.register(entry)
            names.append(entry.name)
        self._eager_names[key] = names

    def _browse_tool(self) -> Tool:
        async def get_tools_in_category(
            path: Annotated[str, 'Category path: "" for the top level, or e.g. "time"'] = "",
        ) -> str:
            """Browse the lazy MCP categories (the model reads ``description`` below, not this)."""
            return await self.browse(path)

        tops = ", ".join(self.top_level())
        description = (
            f"Find more tools by category (top level: {tops}). A category lists its tools and their "
            f"arguments. Call this before {EXECUTE_TOOL}."
        )
        tool = tool_from_function(get_tools_in_category, name=BROWSE_TOOL, description=description)
        return replace(tool, meta={"mcp": "browse"})

    def _execute_tool(self) -> Tool:
        async def execute_tool(
            tool_path: Annotated[str, 'Full tool name from the listing, e.g. "category/tool_name"'],
            arguments: Annotated[dict[str, Any] | None, BeforeValidator(_json_object)] = None,
        ) -> str:
            """Run a lazy MCP tool by its path (the model reads ``description`` below, not this)."""
            return await self.execute(tool_path, arguments)

        description = (
            f"Run a tool listed by {BROWSE_TOOL}. Browse first to learn its exact path and arguments."
        )
        tool = tool_from_function(execute_tool, name=EXECUTE_TOOL, description=description)
        return replace(tool, meta={"mcp": "execute"})


def _concise(specs: list[ToolSpec]) -> str:
    """Tools in the renderer's ``concise`` style, without its header and call instructions."""
    text = render(specs, "concise")
    text = text if isinstance(text, str) else ""
    return text.removeprefix("Tools:\n").removesuffix("\n" + SYSTEM_TOOL_INSTRUCTIONS["concise"])
