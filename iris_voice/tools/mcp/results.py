"""What an MCP tool call gives back to the model: its text, or one line saying what failed."""

from __future__ import annotations

import json
from dataclasses import dataclass

from mcp import McpError, types

MAX_RESULT_CHARS = 4000
"""Longest tool result handed to the model; a small model's context is a few thousand tokens."""


@dataclass(frozen=True)
class CallOutcome:
    """The result of one ``tools/call`` as text for the model."""

    ok: bool
    """False for a timeout, an unavailable server or a tool that reported an error."""
    text: str
    """The tool's text output, or what went wrong (without the ``Error:`` prefix)."""


def leaf_error(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException) -> str:
    """A short, single-line description of an exception for logs and the model."""
    exc = leaf_error(exc)
    if isinstance(exc, McpError):
        return exc.error.message
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def result_text(result: types.CallToolResult) -> str:
    """The text a model should read from a tool result; media are named, not inlined."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource):
            res = block.resource
            parts.append(
                res.text if isinstance(res, types.TextResourceContents) else f"[binary resource {res.uri}]"
            )
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'content')} omitted]")
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False, default=str))
    text = "\n".join(parts).strip() or "(no output)"
    if len(text) > MAX_RESULT_CHARS:
        text = text[: MAX_RESULT_CHARS - 14].rstrip() + " … (truncated)"
    return text
