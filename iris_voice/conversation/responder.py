"""The one interface the voice pipeline and the CLI use to get a reply: ``Responder``.

``Assistant`` is IRIS's: one ``Conversation``, and per turn the producer that answers it —
the intent fast path (``[intents] enabled``) when a template matches, else the boost
planner (``[boost] enabled``) when it wants the turn, else the tool-calling chat loop —
run by ``run_turn``, which publishes the turn's events and records it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from iris_voice.config import Config
from iris_voice.conversation.boost import Boost
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.fastpath import FastPath
from iris_voice.conversation.history import Bounds, Conversation
from iris_voice.conversation.policy import ReplyPolicy
from iris_voice.conversation.trace import TurnTrace
from iris_voice.conversation.turn import Producer, Turn, run_turn
from iris_voice.conversation.warm import PromptWarmer
from iris_voice.events import Event
from iris_voice.llm.client import ChatBackend, OllamaBackend
from iris_voice.tools.registry import ToolRegistry


class Responder(Protocol):
    """Turns a request into a reply streamed sentence by sentence, in one conversation."""

    conversation: Conversation
    """The history every turn reads and is written into."""

    def sentences(
        self, text: str, trace: TurnTrace | None = None, hold: asyncio.Event | None = None
    ) -> AsyncIterator[str]:
        """Run one turn; yield each sentence as soon as it exists. Stopping early (barge-in)
        keeps only what was yielded in the history. Raises ``LlmError`` if the model fails.
        With ``hold``, the turn is speculative until it is set (``Turn.hold``)."""
        ...

    async def warmup(self) -> None:
        """Load the models and fill their prompt caches."""
        ...

    def idle(self) -> None:
        """IRIS has nothing to do (a reply or an announcement ended): bring the model's
        prompt cache up to the conversation, until the next turn starts."""
        ...


async def ask(responder: Responder, text: str) -> TurnTrace:
    """Run one turn to the end; its trace."""
    trace = TurnTrace(text=text)
    async for _ in responder.sentences(text, trace):
        pass
    return trace


class Assistant:
    """IRIS's ``Responder``: fast path, boost and chat loop over one conversation."""

    def __init__(
        self,
        chat: ChatLoop,
        conversation: Conversation | None = None,
        *,
        fast: FastPath | None = None,
        boost: Boost | None = None,
        publish: Callable[[Event], None] | None = None,
        warm_cache: bool = True,
    ) -> None:
        self.chat = chat
        self.conversation = conversation if conversation is not None else Conversation()
        self.fast = fast
        self.boost = boost
        self._publish = publish or (lambda _e: None)
        self.warmer = PromptWarmer(chat.warmup, self.conversation, enabled=warm_cache)
        """Keeps the server's prompt cache at the conversation while IRIS is idle."""

    @property
    def registry(self) -> ToolRegistry:
        """The tools every producer calls."""
        return self.chat.registry

    async def sentences(
        self, text: str, trace: TurnTrace | None = None, hold: asyncio.Event | None = None
    ) -> AsyncIterator[str]:
        """Answer one turn with whichever producer takes it (see the module notes)."""
        self.warmer.cancel()  # the turn's own request must not queue behind a warm-up
        turn = Turn.start(text, self.conversation, trace, hold)
        producer: Producer = self.boost if self.boost is not None else self.chat
        if self.fast is not None:
            producer = await self.fast.route(text, producer, self.chat.mode, turn.history)
        # aclosing: when the listener stops early, the turn is closed (and recorded) now
        async with contextlib.aclosing(run_turn(turn, producer, self.conversation, self._publish)) as said:
            async for sentence in said:
                yield sentence

    async def warmup(self) -> None:
        """The fast path's first match, the local model, then the planner."""
        if self.fast is not None:
            await self.fast.warmup()
        await self.chat.warmup(self.conversation.messages())
        self.warmer.warmed()
        if self.boost is not None:
            await self.boost.warmup()

    def idle(self) -> None:
        """Warm the prompt cache with the conversation as it is now (``PromptWarmer``)."""
        self.warmer.idle()

    def sibling(self) -> Assistant:
        """A new, empty conversation over the same producers (fast path, tool loop, boost):
        another origin's conversation costs its history, not another set of compiled
        templates and rendered tools (building those takes ~50 ms)."""
        return Assistant(
            self.chat, Conversation(self.conversation.bounds), fast=self.fast, boost=self.boost,
            publish=self._publish, warm_cache=self.warmer.enabled,
        )  # fmt: skip


def build_responder(
    cfg: Config,
    registry: ToolRegistry,
    publish: Callable[[Event], None] | None = None,
    backend: ChatBackend | None = None,
) -> Assistant:
    """The assistant ``cfg`` describes over ``registry``; ``backend`` replaces the Ollama
    server (tests)."""
    llm = cfg.llm
    clause = cfg.tts.first_clause_words
    chat = ChatLoop(
        backend or OllamaBackend(llm),
        registry,
        llm,
        publish=publish,
        first_clause_words=clause,
        retrieval=cfg.retrieval,
        policy=ReplyPolicy(frozenset(cfg.reply.off)),
    )
    bounds = Bounds(llm.history_turns, llm.history_tokens, llm.history_idle_reset_s)
    boost = None
    if cfg.boost.enabled:
        from iris_voice.conversation.boost import build_boost

        boost = build_boost(cfg, chat)
    fast = FastPath(registry, publish=publish, first_clause_words=clause) if cfg.intents.enabled else None
    return Assistant(
        chat, Conversation(bounds), fast=fast, boost=boost, publish=publish, warm_cache=llm.warm_cache
    )
