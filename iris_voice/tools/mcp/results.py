"""What an MCP tool call gives back to the model: its text, or one line saying what failed.

Everything here is bounded: a result is cut to ``MAX_RESULT_CHARS`` block by block, before
the blocks are joined, and an error or anything else a server sent is told (to the model
or the log) as at most a short line (``clip``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mcp import McpError, types

MAX_RESULT_CHARS = 4000
"""Longest tool result handed to the model; a small model's context is a few thousand tokens."""
MAX_ERROR_CHARS = 300
"""Longest description of an error (from a server, or about one) in a log line or for the model."""
_TRUNCATED = " … (truncated)"


def clip(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters; only its start is ever scanned."""
    head = " ".join(text[: limit * 2].split())  # a 20 MB string is never split or copied whole
    if len(head) > limit or len(text) > limit * 2:
        return head[: limit - 1].rstrip() + f"… ({len(text):,} characters)"
    return head


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
        return clip(exc.error.message)
    text = clip(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _block_text(block: object) -> str:
    """One content block as text: text itself, media named."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        return res.text if isinstance(res, types.TextResourceContents) else f"[binary resource {res.uri}]"
    if isinstance(block, types.ResourceLink):
        return f"[resource {block.uri}]"
    return f"[{getattr(block, 'type', 'content')} omitted]"


def result_text(result: types.CallToolResult) -> str:
    """The text a model should read from a tool result, at most ``MAX_RESULT_CHARS``; media are named.

    Each block is cut to what is left of the cap before it is kept: a 20 MB answer is
    never copied, joined or stripped whole.
    """
    parts: list[str] = []
    used, cut = 0, False
    for block in result.content:
        room = MAX_RESULT_CHARS + 1 - used  # one more than fits, so that the cut shows
        if room <= 0:
            cut = True
            break
        text = _block_text(block)
        if len(text) > room:
            text, cut = text[:room], True
        parts.append(text)
        used += len(text) + 1
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False, default=str))
    text = "\n".join(parts).strip() or "(no output)"
    if cut or len(text) > MAX_RESULT_CHARS:
        text = text[: MAX_RESULT_CHARS - len(_TRUNCATED)].rstrip() + _TRUNCATED
    return text
