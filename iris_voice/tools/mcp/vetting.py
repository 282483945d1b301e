"""Which tools of an MCP server may reach the model's prompt, and how each is shown there.

Whatever a server lists goes into the prompt of a model with a 4,096-token context, so
nothing is taken on trust: a tool is offered only with a sane name (no newline, markup
or path in it, at most 64 characters), a valid input schema that is small once compacted,
and a description cut to its first paragraph. A server offers at most ``MAX_TOOLS``
tools, and an eager server's definitions together stay within ``EAGER_BUDGET_CHARS``
(the rest are refused: a lazy server costs the prompt nothing). Every refused tool is
kept in ``skipped`` with the reason, under a name that is safe to print, for
``iris tools list`` and one log line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp import types

from iris_voice.tools.mcp.schema import compact_input_schema, schema_problem
from iris_voice.tools.registry import ToolSpec

NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
"""A usable tool name: what the model can write back verbatim, and no path (``..``, ``/``)."""
DESCRIPTION_CHARS = 300
"""A tool's description as the model reads it: the first paragraph, cut here."""
SCHEMA_CHARS = 2_000
"""Longest compact input schema (as JSON) offered; real servers' largest are ~650."""
RAW_SCHEMA_CHARS = 64_000
"""Longest input schema IRIS even checks (checking a schema costs time on the event loop)."""
MAX_TOOLS = 128
"""Most tools taken from one server; the rest are refused."""
EAGER_BUDGET_CHARS = 8_000
"""Most characters one eager server's definitions may add to the prompt (~2,000 tokens of
4,096); mcp-server-git's 12 tools take 3,900."""
MAX_SKIPPED = 64
"""Refused tools remembered (and logged) one by one; beyond that only counted."""
_MARKUP = re.compile(r"<\|[^|<>]{0,40}\|>|</?\s*(tool_call|tools|tool_response)\s*>", re.IGNORECASE)


def shown_name(name: object) -> str:
    """``name`` as safe to print in a log line or a listing: itself if usable, else quoted and cut."""
    text = name if isinstance(name, str) else repr(name)
    if NAME.fullmatch(text) and ".." not in text:
        return text
    cut = json.dumps(text[:40])  # escapes newlines and control characters
    return f"{cut}…({len(text)} characters)" if len(text) > 40 else cut


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a tool name the model sees, or None."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        return "not a usable tool name (1-64 of A-Z a-z 0-9 _ . -, no '..')"
    return None


def description_text(tool: types.Tool) -> str:
    """The first paragraph of a tool's description, on one line, without prompt markup, cut."""
    text = (tool.description or tool.title or "")[: DESCRIPTION_CHARS * 8].strip().split("\n\n")[0]
    text = " ".join(_MARKUP.sub("", text).split())
    if len(text) > DESCRIPTION_CHARS:
        text = text[: DESCRIPTION_CHARS - 1].rstrip() + "…"
    return text


def tool_spec(category: str, tool: types.Tool, fixed: Mapping[str, object] | None = None) -> ToolSpec:
    """An MCP tool as a model sees it: ``category/name``, first paragraph, compact schema
    without the ``fixed`` arguments (IRIS fills those in: ``McpServerConfig.arguments``)."""
    schema = compact_input_schema(tool.inputSchema)
    props = schema.get("properties")
    if fixed and isinstance(props, dict) and fixed.keys() & props.keys():
        schema = {**schema, "properties": {k: v for k, v in props.items() if k not in fixed}}
        if isinstance(schema.get("required"), list):
            schema["required"] = [r for r in schema["required"] if r not in fixed]
    return ToolSpec(f"{category}/{tool.name}", description_text(tool), schema)


def with_fixed(tool: types.Tool, arguments: dict[str, Any], fixed: Mapping[str, object]) -> dict[str, Any]:
    """``arguments`` with the ``fixed`` ones the tool's schema takes (the configured value wins)."""
    props = tool.inputSchema.get("properties") if isinstance(tool.inputSchema, dict) else None
    if not fixed or not isinstance(props, dict):
        return arguments
    return {**arguments, **{k: v for k, v in fixed.items() if k in props}}


def spec_chars(spec: ToolSpec) -> int:
    """What a tool definition costs the prompt, in characters of JSON."""
    fields = {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
    return len(json.dumps(fields, ensure_ascii=False, default=str))


def _json_chars(value: object) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False, default=str))
    except (ValueError, RecursionError):
        return RAW_SCHEMA_CHARS + 1  # unreadable counts as too large


def tool_problem(category: str, tool: types.Tool) -> str | None:
    """Why one tool cannot be offered at all, or None."""
    problem = name_problem(tool.name)
    if problem is None and _json_chars(tool.inputSchema) > RAW_SCHEMA_CHARS:
        problem = f"its input schema is longer than {RAW_SCHEMA_CHARS} characters"
    if problem is None:
        problem = schema_problem(tool.inputSchema)
    if problem is None:
        size = _json_chars(compact_input_schema(tool.inputSchema))
        if size > SCHEMA_CHARS:
            problem = f"its input schema takes {size} characters (at most {SCHEMA_CHARS})"
    return problem


@dataclass
class Vetted:
    """One tool list, sorted into what the model may see and what was refused."""

    usable: list[types.Tool] = field(default_factory=list)
    """Tools to offer, in the server's order."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Refused tools: printable name -> why (the first ``MAX_SKIPPED``)."""
    more_skipped: int = 0
    """Refused tools beyond those in ``skipped``."""

    def refuse(self, name: object, why: str) -> None:
        """Note one refused tool."""
        if len(self.skipped) < MAX_SKIPPED:
            self.skipped[shown_name(name)] = why
        else:
            self.more_skipped += 1


def vet_tools(category: str, tools: Iterable[types.Tool], *, eager: bool) -> Vetted:
    """Sort a server's tool list: sane and small tools first come, first served, within the caps."""
    out, budget = Vetted(), EAGER_BUDGET_CHARS
    over_budget = (
        f"over the prompt budget of {EAGER_BUDGET_CHARS} characters for one eager server "
        '(set mode = "lazy" to reach all its tools)'
    )
    # A server may list a name twice; the model can address only one of them.
    for tool in {t.name: t for t in tools}.values():
        if len(out.usable) >= MAX_TOOLS:  # before any costly check: the list may be endless
            problem: str | None = f"the server lists more than {MAX_TOOLS} tools"
        else:
            problem = tool_problem(category, tool)
        if problem is None and eager and budget >= 0:
            budget -= spec_chars(tool_spec(category, tool))
        if problem is None and eager and budget < 0:
            problem = over_budget  # once spent, the rest are refused, in the server's order
        if problem is None:
            out.usable.append(tool)
        else:
            out.refuse(tool.name, problem)
    return out
