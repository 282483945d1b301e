"""What "it" means in a conversation: the thing its last tool call acted on or spoke of.

"Set a pasta timer for 8 minutes." … "Actually, cancel it." — the referent is read from
what was called, not from what was said: the conversation's tool calls (native
``tool_calls``, or calls written as text in text mode), newest first, each asked of its
tool (``Tool.meta["referent"]``: the timer tools name the timer a call speaks of, and a
cancel leaves nothing to refer to). The fast path fills a template's "it" with it; the
grounding checks accept a call on it when the request refers back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from iris_voice.conversation.history import Message
from iris_voice.tools.intents import GONE, REFERRED
from iris_voice.tools.registry import ToolRegistry

_WRITTEN = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


def _calls(message: Message) -> Iterator[tuple[str, dict[str, Any]]]:
    """The calls one assistant message made, last first."""
    found: list[tuple[str, dict[str, Any]]] = []
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        args = fn.get("arguments")
        if isinstance(fn.get("name"), str):
            found.append((fn["name"], args if isinstance(args, dict) else {}))
    for raw in _WRITTEN.findall(str(message.get("content") or "")):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            args = data.get("arguments")
            found.append((data["name"], args if isinstance(args, dict) else {}))
    return reversed(found)


def referent(history: list[Message], registry: ToolRegistry) -> str | None:
    """The thing the conversation's newest call that names one speaks of (``which`` for its
    tool), or None: no call named one, or the newest that did ended it (a cancel)."""
    for message in reversed(history):
        if message.get("role") != "assistant":
            continue
        for name, args in _calls(message):
            tool = registry.get(name)
            find = tool.meta.get("referent") if tool is not None else None
            if find is None:
                continue
            found = find(tool.name, args)
            if found == GONE:
                return None
            if found:
                return found
    return None


def resolved(arguments: dict[str, Any], the_one: str) -> dict[str, Any]:
    """``arguments`` with each ``REFERRED`` value replaced by ``the_one`` ("" for a tool's
    "the only one")."""
    if REFERRED not in arguments.values():
        return arguments
    return {k: the_one if v == REFERRED else v for k, v in arguments.items()}
