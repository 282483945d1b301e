"""The one interface the voice pipeline and the CLI use to get a reply: ``Responder``.

``ChatLoop`` (the local model alone) and ``BoostLoop`` (a planner in front of it) both
satisfy it; ``build_responder`` picks one from the configuration.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from iris_voice.config import Config
from iris_voice.events import Event
from iris_voice.llm.client import OllamaBackend
from iris_voice.llm.loop import ChatLoop
from iris_voice.llm.trace import TurnTrace
from iris_voice.tools.registry import ToolRegistry


class Responder(Protocol):
    """Turns a request into a reply streamed sentence by sentence."""

    history: list[list[dict[str, Any]]]
    """The conversation so far, one message list per turn."""

    def sentences(self, text: str, trace: TurnTrace | None = None) -> AsyncIterator[str]:
        """Run one turn; yield each sentence as soon as it exists. Stopping early (barge-in)
        keeps only what was yielded in the history. Raises ``LlmError`` if the local model fails."""
        ...

    async def ask(self, text: str) -> TurnTrace:
        """Run one turn to the end; its trace."""
        ...

    async def warmup(self) -> None:
        """Load the models and fill their prompt caches."""
        ...

    def reset(self) -> None:
        """Forget the conversation."""
        ...

    def record_turn(self, text: str, results: list[Any]) -> None:
        """Write a turn answered without the model (the fast path) into the history."""
        ...

    def amend_last_reply(self, heard: str) -> None:
        """After a barge-in, keep in the history only what the user heard of the last reply."""
        ...


def build_responder(
    cfg: Config, registry: ToolRegistry, publish: Callable[[Event], None] | None = None
) -> Responder:
    """What answers a request, outermost first: the intent fast path (``[intents] enabled``),
    then the boost planner (``[boost] enabled``), then the local tool-calling loop."""
    chat = ChatLoop(OllamaBackend(cfg.llm), registry, cfg.llm, publish=publish)
    inner: Responder = chat
    if cfg.boost.enabled:
        from iris_voice.llm.boost import build_boost

        inner = build_boost(cfg, chat)
    if not cfg.intents.enabled:
        return inner
    from iris_voice.intents import FastPathResponder, IntentMatcher

    return FastPathResponder(inner, IntentMatcher(), publish)
