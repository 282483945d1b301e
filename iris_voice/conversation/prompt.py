"""The prompt side of the tool loop: what the model is sent each round.

The system message and the tools never change between turns (the server's prompt cache
holds them); the tools retrieval picks ride on the turn's user message, and a round may be
a grammar-constrained choice among the tools shown (``llm.choice``). ``ChatLoop`` is a
``Prompt``; this part holds no policy and no turn state.
"""

from __future__ import annotations

from typing import Any

from iris_voice.config import LlmConfig
from iris_voice.conversation.history import Message, ToolMode
from iris_voice.conversation.toolpick import ToolPicker
from iris_voice.conversation.turn import Turn
from iris_voice.errors import Code, LlmError
from iris_voice.llm.client import ChatBackend
from iris_voice.tools.choice import CHOICE_NOTE, NotAChoice, choice_schema, chosen
from iris_voice.tools.registry import Tool, ToolRegistry
from iris_voice.tools.render import manifest, render


class Prompt:
    """The messages and tools of each round (the attributes are ``ChatLoop``'s)."""

    backend: ChatBackend
    registry: ToolRegistry
    cfg: LlmConfig
    picker: ToolPicker
    mode: ToolMode
    _rendered: tuple[tuple[str, ...], list[dict[str, Any]]] | None
    _no_format: NotAChoice

    @property
    def _native_tools(self) -> list[dict[str, Any]]:
        """The tools in Ollama's format, rendered again only when the registry changed (eager
        MCP servers add theirs after start); identical text keeps the server's prompt cache."""
        listed = self.picker.listed()  # on-demand tools ride on the turns that need them
        names = tuple(t.name for t in listed)
        if self._rendered is None or self._rendered[0] != names:
            self._rendered = (names, render([t.spec for t in listed], "ollama"))
        return self._rendered[1]

    def system_message(self) -> Message:
        """The constant system message for the current tool mode."""
        text = self.cfg.system_prompt
        if self.mode == ToolMode.TEXT and len(self.registry):
            text += "\n\n" + manifest(self.registry.specs(), self.cfg.text_format)
        return {"role": "system", "content": text}

    def _messages(self, turn: Turn, picked: list[Tool] | None = None, note: str = "") -> list[Message]:
        # The picked tools ride on this turn's user message only: the history keeps the words.
        first, *rest = turn.messages
        asked = self.picker.with_tools(first, picked or [], note)
        return [self.system_message(), *turn.history, asked, *rest]

    def _constrained(self, picked: list[Tool]) -> bool:
        """Whether this round's choice is written in JSON a grammar keeps (``llm.choice``)."""
        wanted = self.cfg.choice == "always" or (self.cfg.choice == "retrieved" and bool(picked))
        formats = bool(getattr(self.backend, "formats", False)) and not self._no_format.seen
        return wanted and formats and self.mode == ToolMode.NATIVE

    def _stream(self, turn: Turn, picked: list[Tool], tools: list[dict[str, Any]] | None, constrained: bool):
        """The model's reply to this round: a constrained choice among the tools shown (the
        listed ones and the turn's picked ones), else as it writes it. The listed tools
        still go as ``tools``, so the cached prompt prefix stays the same."""
        if not constrained:
            return self.backend.stream(self._messages(turn, picked), tools)
        shown = [*(t.spec for t in self.picker.listed()), *(t.spec for t in picked)]
        messages = self._messages(turn, picked, CHOICE_NOTE)
        reply = self.backend.stream(messages, tools, fmt=choice_schema(shown))  # type: ignore[call-arg]
        return chosen(reply, [s.name for s in shown], self._no_format)

    async def warmup(self, history: list[Message] | None = None) -> None:
        """Load the model and fill the server's prompt cache with the constant prefix
        (and ``history``, when given)."""
        msgs = [self.system_message(), *(history or []), {"role": "user", "content": "Hi"}]
        tools = self._native_tools if self.mode == ToolMode.NATIVE and self._native_tools else None
        try:
            async for _ in self.backend.stream(msgs, tools, {"num_predict": 1}):
                pass
        except LlmError as exc:
            if exc.code == Code.LLM_NO_TOOLS and self.cfg.tool_mode == "auto":
                self.mode = ToolMode.TEXT
                await self.warmup(history)
                return
            raise
