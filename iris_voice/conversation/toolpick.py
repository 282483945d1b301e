"""Which hidden tools a turn shows the model, and where: after the history, in the turn itself.

The server reuses its prompt cache only for the longest common prefix, and Qwen's chat
template writes the ``tools`` parameter into the system block, before the history: a tool
list that changed per turn would make the server read the whole history again (1,000
tokens are 14 s on two cores). So the listed tools (built-in, eager MCP, the meta-tools)
never change, and a turn's retrieved tools — lazy MCP tools, ranked by
``tools.retrieval.ToolIndex`` — are written into that turn's user message, in the same
``<tools>`` form the template uses. The history keeps the user's words only, so the next
turn's prefix is what the server saw (up to this turn).

A follow-up that names no tool and starts like one ("and in Berlin?", "what about tea?")
gets the hidden tools the previous turn called.
"""

from __future__ import annotations

import json
import logging
import re

from iris_voice.config import RetrievalConfig
from iris_voice.conversation.history import Message
from iris_voice.tools.registry import Tool, ToolRegistry
from iris_voice.tools.render import render
from iris_voice.tools.retrieval import ToolIndex

log = logging.getLogger(__name__)
_FOLLOW_UP = re.compile(r"^\W*(?:and|also|now|then|what about|how about|same for)\b", re.IGNORECASE)

LEAD = "Tools for this request, called like the tools above:"
"""The line before the retrieved definitions in the user message."""


def indexed(tool: Tool) -> bool:
    """Tools the retriever ranks: all but the lazy meta-tools (they are always listed)."""
    return "mcp" not in tool.meta


def tools_block(tools: list[Tool]) -> str:
    """The definitions as the chat template writes them: compact JSON, one per line."""
    rendered = render([t.spec for t in tools], "ollama")
    lines = rendered if isinstance(rendered, list) else []
    body = "\n".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in lines)
    return f"<tools>\n{body}\n</tools>"


class ToolPicker:
    """Retrieval over a registry's tools, re-indexed whenever its tools change."""

    def __init__(self, registry: ToolRegistry, cfg: RetrievalConfig) -> None:
        self.registry = registry
        self.cfg = cfg
        self._index: tuple[tuple[str, ...], ToolIndex] | None = None

    def index(self) -> ToolIndex:
        """The index of every tool now registered (built again when the names changed)."""
        names = tuple(self.registry.callable_names())
        if self._index is None or self._index[0] != names:
            tools = [t for t in (*self.registry, *self.registry.hidden()) if indexed(t)]
            self._index = (names, ToolIndex(tools))
        return self._index[1]

    def pick(self, text: str, history: list[Message]) -> list[Tool]:
        """The hidden tools to show for ``text``: the best-ranked ones above the score
        floor that match better than every listed tool, else those the previous turn called.

        A listed tool that matches better already answers the request ("what time is it in
        Paris": the built-in clock): adding the hidden ones would only cost prompt time.
        """
        if not self.cfg.enabled or not self.registry.hidden():
            return []
        hidden = {t.name: t for t in self.registry.hidden()}
        ranked = self.index().rank(text)
        floor = max([self.cfg.min_score, *(s.score for s in ranked if s.name not in hidden)])
        picked = [hidden[s.name] for s in ranked if s.name in hidden and s.score >= floor]
        if not picked and _FOLLOW_UP.match(text):
            picked = [hidden[n] for n in previous_calls(history) if n in hidden]
        log.debug("retrieved for %r: %s", text, [t.name for t in picked])
        return picked[: self.cfg.tools_per_turn]

    @staticmethod
    def with_tools(message: Message, tools: list[Tool]) -> Message:
        """The user ``message`` as sent this turn: its words, then the picked definitions."""
        if not tools:
            return message
        return {**message, "content": f"{message['content']}\n\n{LEAD}\n{tools_block(tools)}"}


def previous_calls(history: list[Message]) -> list[str]:
    """Names of the tools called since the last user message of ``history``."""
    names: list[str] = []
    for message in reversed(history):
        if message.get("role") == "user":
            break
        for call in message.get("tool_calls") or ():
            name = (call.get("function") or {}).get("name")
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names
