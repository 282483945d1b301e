"""Lazy MCP tools: the model sees two meta-tools instead of every server's tools.

``get_tools_in_category(path)`` browses a tree built from the servers' category paths
(``time``, ``utilities/math``): the top level lists categories with a one-line summary
and tool counts; a leaf lists its tools as ``category/tool`` with compact parameters and
an example call. ``execute_tool(tool_path, arguments)`` finds the tool, coerces and
validates the arguments against the server's input schema and calls it. Every mistake
comes back as ``Error: …`` saying exactly what to fix: the model can try again.

The two descriptions depend on the configuration only, never on what the servers
listed, so the prompt prefix (and the server's prompt cache) stays the same all day.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp import types

from iris_voice import safejson
from iris_voice.errors import ToolError
from iris_voice.tools.mcp.client import McpServerConnection
from iris_voice.tools.mcp.schema import check_arguments_async
from iris_voice.tools.mcp.vetting import tool_spec, with_fixed
from iris_voice.tools.registry import CALL_LEAD_IN, Tool, ToolSpec
from iris_voice.tools.render import SYSTEM_TOOL_INSTRUCTIONS, render

log = logging.getLogger(__name__)

BROWSE_TOOL = "get_tools_in_category"
"""Name of the meta-tool that browses lazy MCP categories."""
EXECUTE_TOOL = "execute_tool"
"""Name of the meta-tool that runs a lazy MCP tool by its path."""
_MAX_PATHS = 30  # tool paths listed in an error; more would drown a small model
_SUMMARY_CHARS = 80
BROWSE_ANSWER_CHARS = 3_000
"""Longest ``get_tools_in_category`` answer (~750 tokens of a 4,096-token context): the
first tools in full, then names only, then how many more."""


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

    def find(self, path: str) -> CategoryNode | None:
        """The node at ``path`` below this one (``""`` is this node), or None."""
        node: CategoryNode | None = self
        for part in path.split("/") if path else ():
            node = node.children.get(part) if node else None
        return node

    def summary(self) -> str:
        """``path: what it holds (counts)`` — one line of a category listing."""
        servers = self.servers()
        desc = self.server.config.description if self.server else ""
        if not desc and self.server and self.server.tools:
            desc = "tools " + ", ".join(t.name for t in self.server.tools)
        if len(desc) > _SUMMARY_CHARS:
            desc = desc[: _SUMMARY_CHARS - 1].rstrip() + "…"
        counts = []
        if self.children:
            counts.append(_plural(len(self.children), "subcategory", "subcategories"))
        if servers and all(s.listed for s in servers):
            counts.append(_plural(sum(len(s.tools) for s in servers), "tool", "tools"))
        elif servers:
            counts.append("starting" if any(s.state == "starting" for s in servers) else "unavailable")
        return f"- {self.path}" + (f": {desc}" if desc else "") + f" ({', '.join(counts)})"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def build_tree(connections: Iterable[McpServerConnection]) -> CategoryNode:
    """The category tree of ``connections`` (their configs' ``category`` paths)."""
    root = CategoryNode("")
    for conn in connections:
        node = root
        for part in conn.config.category.split("/"):
            node = node.children.setdefault(part, CategoryNode(f"{node.path}/{part}".lstrip("/")))
        node.server = conn
    return root


def _placeholder(schema: Any) -> Any:
    """A value of the right type for an example call (``"..."``, 1, true…)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if isinstance(schema, dict) and isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    return {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(kind, "...")


def example_call(spec: ToolSpec) -> str:
    """A whole ``execute_tool`` call for ``spec``, its required arguments as placeholders.

    Small models copy what they last read: written as a call object, a copy with the
    placeholders filled in is a call IRIS recognizes even when it arrives as text.
    """
    props = spec.parameters.get("properties") or {}
    required = [r for r in spec.parameters.get("required") or [] if r in props]
    args = {name: _placeholder(props[name]) for name in required}
    call = {"name": EXECUTE_TOOL, "arguments": {"tool_path": spec.name, "arguments": args}}
    return json.dumps(call, ensure_ascii=False)


def _concise(specs: list[ToolSpec]) -> str:
    """Tools in the renderer's ``concise`` style, without its header and call instructions."""
    text = render(specs, "concise")
    text = text if isinstance(text, str) else ""
    return text.removeprefix("Tools:\n").removesuffix("\n" + SYSTEM_TOOL_INSTRUCTIONS["concise"])


def _listing(specs: list[ToolSpec], room: int) -> str:
    """The tools in the ``concise`` style while they fit in ``room`` characters, then names, then a count.

    A server may list a hundred tools; the model needs only enough to pick one, and a
    name it read is enough for execute_tool (a wrong call is answered with the arguments).
    """
    full: list[str] = []
    used = 0
    for spec in specs:
        block = _concise([spec])
        if used + len(block) + 1 > room * 2 // 3:  # keep a third for the names of the rest
            break
        full.append(block)
        used += len(block) + 1
    rest = specs[len(full) :]
    if not rest:
        return "\n".join(full)
    names: list[str] = []
    for spec in rest:
        if used + len(spec.name) + 2 > room - 60:  # room for the count at the end
            break
        names.append(spec.name)
        used += len(spec.name) + 2
    more = len(rest) - len(names)
    tail = f"{len(rest)} more tools" + (f": {', '.join(names)}" if names else "")
    tail += f" (and {more} not shown)" if names and more else ""
    return "\n".join([*full, tail])


class LazyTools:
    """The browse tree of the lazy servers and what the two meta-tools do."""

    def __init__(self, connections: Iterable[McpServerConnection]) -> None:
        self.tree = build_tree(connections)
        """Root of the category tree."""

    def __bool__(self) -> bool:
        return bool(self.tree.children)

    def paths(self) -> list[str]:
        """Every known lazy tool path, in config order."""
        return [f"{c.config.category}/{t.name}" for c in self.tree.servers() for t in c.tools]

    async def browse(self, path: str = "") -> str:
        """What ``get_tools_in_category`` answers: sub-categories, and a leaf's tools."""
        key = _normalize(path)
        node = self.tree.find(key)
        if node is None and "/" in key:  # a tool path names its category: show that
            holder = self.tree.find(key.rpartition("/")[0])
            node = holder if holder is not None and holder.server is not None else None
        if node is None:
            tops = ", ".join(self.tree.children)
            raise ToolError(f'unknown category {path!r}. Categories: {tops}. Use "" for the top level')
        lines: list[str] = []
        if node.children:
            lines.append(f"Categories in {node.path}:" if node.path else "Categories:")
            lines += [child.summary() for child in node.children.values()]
        specs: list[ToolSpec] = []
        if node.server is not None:
            try:
                tools = await node.server.wait_listed()
            except ConnectionError as exc:
                if not node.children:
                    raise ToolError(str(exc)) from None
                lines.append(f"Tools in {node.path}: not available now ({exc})")
            else:
                specs = [tool_spec(node.path, t, node.server.config.arguments) for t in tools]
                lines.append(f"Tools in {node.path}:" if specs else f"No tools in {node.path}.")
        if specs:
            # A small model copies this line; the copied call is recognized even as text.
            example = f"{CALL_LEAD_IN} {example_call(specs[0])}"
            room = BROWSE_ANSWER_CHARS - sum(len(line) + 1 for line in lines) - len(example)
            lines += [_listing(specs, room), example]
        else:
            lines.append(f"Next: call {BROWSE_TOOL} with one of these paths.")
        return "\n".join(lines)[:BROWSE_ANSWER_CHARS]

    def resolve(self, tool_path: str) -> tuple[McpServerConnection, str]:
        """The server and tool name of ``category/tool`` (forgiving case, slashes, a missing category)."""
        key = tool_path.strip().strip("/").replace("\\", "/")
        category, _, name = key.rpartition("/")
        node = self.tree.find(_normalize(category)) if category else None
        conn = node.server if node is not None else None
        if conn is None and not category:
            owners = [c for c in self.tree.servers() if any(t.name == name for t in c.tools)]
            conn = owners[0] if len(owners) == 1 else None
        if conn is None:
            if self.tree.find(_normalize(key)) is not None:
                raise ToolError(
                    f"{tool_path!r} is a category, not a tool: call {BROWSE_TOOL} with path {key!r}"
                )
            raise ToolError(f"unknown tool {tool_path!r}. {self._valid_paths()}")
        return conn, name

    def _valid_paths(self) -> str:
        paths = self.paths()
        if not paths:
            return f"Call {BROWSE_TOOL} to see the tools."
        more = f" (and {len(paths) - _MAX_PATHS} more)" if len(paths) > _MAX_PATHS else ""
        return "Valid tool paths: " + ", ".join(paths[:_MAX_PATHS]) + more

    async def execute(self, tool_path: str, arguments: dict[str, Any]) -> str:
        """What ``execute_tool`` does: resolve ``category/tool``, validate, call, return the text."""
        conn, name = self.resolve(tool_path)
        try:
            tools = await conn.wait_listed()
        except ConnectionError as exc:
            raise ToolError(str(exc)) from None
        tool = next((t for t in tools if t.name == name), None)
        tool = tool or next((t for t in tools if t.name.casefold() == name.casefold()), None)
        if tool is None:
            if name in conn.skipped:
                raise ToolError(f"{conn.config.category}/{name} cannot be used: {conn.skipped[name]}")
            raise ToolError(f"{conn.config.category} has no tool {name!r}. {self._valid_paths()}")
        return await call_checked(conn, tool, arguments)


async def call_checked(conn: McpServerConnection, tool: types.Tool, arguments: dict[str, Any]) -> str:
    """Coerce and validate ``arguments`` against the tool's schema, call it, return its text."""
    path = f"{conn.config.category}/{tool.name}"
    arguments = with_fixed(tool, arguments, conn.config.arguments)
    args = await check_arguments_async(path, arguments, tool.inputSchema)
    outcome = await conn.call(tool.name, args)
    if not outcome.ok:
        raise ToolError(outcome.text.removeprefix("Error:").strip())
    return outcome.text


def _normalize(path: str) -> str:
    """A category path as typed by a model: case, spaces and stray slashes forgiven."""
    return "/".join(p.strip().lower() for p in path.replace("\\", "/").split("/") if p.strip())


def _arguments_object(value: Any) -> dict[str, Any]:
    """``arguments`` as a dict: small models often send a JSON string, or nothing."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = safejson.loads(value)
        except ValueError as exc:  # not JSON, or nested deeper than any tool's arguments
            raise ToolError(f"arguments must be a JSON object; this is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ToolError(
            f'arguments must be a JSON object such as {{"name": value}}, not {type(value).__name__}'
        )
    return value


def _either(items: list[str]) -> str:
    """``a``, ``a, or b``, ``a, b, or c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", or " + items[-1]


def meta_tools(lazy: LazyTools, categories: list[tuple[str, str]]) -> list[Tool]:
    """The two registry tools, described from ``(category, what its tools do)`` pairs.

    Worded for a 1.5B model (tried on Qwen2.5-Coder-1.5B): the browse description starts
    with what the tools do, as the native tools' descriptions do, and ``path`` is an enum
    of the categories, so a time question maps to ``{"path": "time"}`` at once.
    """
    first = categories[0][0] if categories else "category"
    example = f'"{first}/tool_name"'
    uses = [desc or f'the "{cat}" tools' for cat, desc in categories] or ["more tools"]
    names = " or ".join(f'"{cat}"' for cat, _ in categories) if categories else '""'
    what = _either(uses)
    # The enum ends with "" (the top level); key order as tried with the model.
    path_schema: dict[str, Any] = {"type": "string"}
    if categories:
        path_schema["enum"] = [cat for cat, _ in categories] + [""]
    path_schema["description"] = "The category"

    async def browse(path: Any = "", **extra: Any) -> str:
        path = path or extra.get("category") or ""  # a name small models reach for
        if not isinstance(path, str):
            raise ToolError('path must be a string such as "time" (or "" for the top level)')
        return await lazy.browse(path)

    async def execute(tool_path: Any = None, arguments: Any = None, **extra: Any) -> str:
        if not isinstance(tool_path, str) or not tool_path.strip():
            raise ToolError(f"tool_path is required, e.g. {example}. {lazy._valid_paths()}")
        args = _arguments_object(arguments)
        # Small models put a tool's arguments next to tool_path instead of inside "arguments".
        args = {**{k: v for k, v in extra.items() if k not in ("name", "tool")}, **args}
        return await lazy.execute(tool_path, args)

    browse_spec = ToolSpec(
        BROWSE_TOOL,
        f"{what[:1].upper()}{what[1:]}: call this with the category ({names}); "
        "it answers with the tool to run next.",
        {"type": "object", "properties": {"path": path_schema}, "required": ["path"]},
    )
    execute_spec = ToolSpec(
        EXECUTE_TOOL,
        f"Runs a tool that {BROWSE_TOOL} listed.",
        {
            "type": "object",
            "properties": {
                "tool_path": {"type": "string", "description": f"A tool path from {BROWSE_TOOL}'s answer"},
                "arguments": {"type": "object", "description": "The tool's arguments"},
            },
            "required": ["tool_path", "arguments"],
        },
    )
    # Browse last: the tool nearest the question in the prompt is the one a small model picks.
    return [
        Tool(spec=execute_spec, handler=execute, meta={"mcp": "execute"}),
        Tool(spec=browse_spec, handler=browse, meta={"mcp": "browse"}, read_only=True),
    ]
