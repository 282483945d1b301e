"""The responder with a fast path: everyday commands answered before the model is asked.

``FastPathResponder`` has the interface the voice pipeline and ``iris ask`` use on a
``ChatLoop`` — ``sentences(text, trace)``, ``amend_last_reply(heard)``, ``history`` — and
wraps one. A transcript that matches a template runs the same native tool through the
registry and speaks a templated reply; the turn is written into the chat loop's history
as a tool turn, so the model has the context next time ("…and in Paris?"). Anything
else — no match, a doubtful match, a tool error — goes to the chat loop as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from iris_voice.events import Event, SentenceReady, ToolCalled, TurnFinished, TurnStarted
from iris_voice.intents.actions import phrase
from iris_voice.intents.matcher import IntentMatcher, Match
from iris_voice.llm.loop import ChatLoop
from iris_voice.llm.sentences import split_sentences
from iris_voice.llm.trace import TurnTrace
from iris_voice.tools.registry import ToolResult

log = logging.getLogger(__name__)


class Responder(Protocol):
    """What the pipeline needs from whatever answers a turn (a ChatLoop or a wrapper)."""

    def sentences(self, text: str, trace: TurnTrace | None = None) -> AsyncIterator[str]:
        """Answer one turn, sentence by sentence."""
        ...

    def amend_last_reply(self, heard: str) -> None:
        """After a barge-in, keep only what the user heard of the last reply."""
        ...


class FastPathResponder:
    """A ``ChatLoop`` with the local intent fast path in front of it."""

    def __init__(
        self, chat: ChatLoop, matcher: IntentMatcher, publish: Callable[[Event], None] | None = None
    ) -> None:
        self.chat = chat
        self.matcher = matcher
        self._publish = publish or (lambda _e: None)

    @property
    def history(self) -> list[list[dict]]:
        """The chat loop's history, fast-path turns included."""
        return self.chat.history

    def reset(self) -> None:
        """Forget the conversation."""
        self.chat.reset()

    def amend_last_reply(self, heard: str) -> None:
        """After a barge-in, keep only what the user heard (see ``ChatLoop.amend_last_reply``)."""
        self.chat.amend_last_reply(heard)

    async def warmup(self) -> None:
        """Run a match (hassil's and the place index's first use cost ~100 ms), then warm the model."""
        await asyncio.to_thread(self.matcher.match, "what time is it in Tokyo")
        await self.chat.warmup()

    async def ask(self, text: str) -> TurnTrace:
        """Run one turn to the end and return its trace."""
        trace = TurnTrace(text=text)
        async for _ in self.sentences(text, trace):
            pass
        return trace

    async def sentences(self, text: str, trace: TurnTrace | None = None) -> AsyncIterator[str]:
        """Answer from the templates if the text matches one exactly, else ask the model."""
        trace = trace if trace is not None else TurnTrace(text=text)
        answer = await self._answer(text, trace)
        if answer is None:
            async for sentence in self.chat.sentences(text, trace):
                yield sentence
            return
        result, reply = answer
        said: list[str] = []
        try:
            for sentence in split_sentences(reply):
                said.append(sentence)
                self._publish(SentenceReady(sentence, len(said) - 1))
                if trace.first_sentence_ms is None:
                    trace.first_sentence_ms = trace.elapsed_ms()
                yield sentence
        finally:
            # The tool ran, whatever was heard: the history keeps the call and its result.
            trace.reply = " ".join(said) or reply
            trace.finish()
            self.chat.record_turn(text, [result])
        self._publish(TurnFinished(trace.reply, "fast", trace.to_dict()))

    async def _answer(self, text: str, trace: TurnTrace) -> tuple[ToolResult, str] | None:
        """Match and run the tool; (result, reply), or None to leave the turn to the model."""
        match: Match | None = await asyncio.to_thread(self.matcher.match, text)
        if match is None or match.action.tool not in self.chat.registry:
            return None
        action = match.action
        result = await self.chat.registry.call(action.tool, action.arguments)
        reply = phrase(action, result.result) if result.ok else None
        trace.extra["intent"] = {"name": action.intent, "match_ms": match.ms}
        if reply is None:
            # A refusal (no such timer, two timers, division by zero) changed nothing:
            # the model reads the same error and asks the user or explains.
            log.info("fast path: %s declined (%s); asking the model", action.tool, result.result)
            trace.extra["intent"]["declined"] = result.result
            return None
        self._publish(TurnStarted(text))
        self._publish(ToolCalled(result.name, result.arguments, result.ok, result.result, result.duration_ms))
        trace.execution_path = "fast"
        trace.add_call(result)
        return result, reply
