"""The local intent fast path: everyday commands answered before the model is asked.

A transcript that matches a sentence template exactly (``IntentMatcher``) runs the same
tool the model would call, through the registry, and its reply is spoken at once. The
turn goes into the conversation as a tool turn, so the model has the context next time
("…and in Paris?"). Anything else — no match, a doubtful match, a tool that declines
(no such timer, division by zero) — is left to the model: the fast path then hands
the same turn on to the producer behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from iris_voice.conversation.fastpath.matcher import IntentMatcher, Match
from iris_voice.conversation.followup import referent, resolved
from iris_voice.conversation.history import Message, ToolMode, tool_turn_messages, written_calls
from iris_voice.conversation.turn import Producer, Turn
from iris_voice.events import Event, ExecutionPath, ToolCalled
from iris_voice.llm.sentences import split_sentences
from iris_voice.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

__all__ = ["FastPath", "IntentMatcher", "Match"]


class FastPath:
    """Matches a request against the templates and, on a match, answers it without a model."""

    def __init__(
        self,
        registry: ToolRegistry,
        matcher: IntentMatcher | None = None,
        publish: Callable[[Event], None] | None = None,
        first_clause_words: int = 0,
    ) -> None:
        self.registry = registry
        self.first_clause_words = first_clause_words
        """The reply's first piece may be a clause of this many words (``tts.first_clause_words``)."""
        self.matcher = matcher if matcher is not None else IntentMatcher(registry.intents())
        self.publish = publish or (lambda _e: None)
        """Where ``ToolCalled`` goes."""

    async def warmup(self) -> None:
        """Run a match once (hassil's and the place index's first use cost ~100 ms)."""
        await asyncio.to_thread(self.matcher.match, "what time is it in Tokyo")

    async def route(
        self, text: str, behind: Producer, mode: ToolMode, history: list[Message] | None = None
    ) -> Producer:
        """The producer for ``text``: an answer of the fast path when a template matches
        (it falls back to ``behind`` if the tool declines), else ``behind`` itself. A
        template's "it" is what the conversation's ``history`` last acted on (``followup``)."""
        match = await asyncio.to_thread(self.matcher.match, text)
        if match is None or match.action.tool not in self.registry:
            return behind
        # With nothing in the conversation to refer to, "it" is the one timer running (the
        # tool says so, and the model takes the turn, when more than one could be meant).
        args = resolved(match.action.arguments, referent(history or [], self.registry) or "")
        if args is not match.action.arguments:
            match = replace(match, action=replace(match.action, arguments=args))
        return _FastAnswer(self, match, behind, mode)


class _FastAnswer:
    """One matched turn: run the tool, speak its reply; or hand the turn on."""

    def __init__(self, owner: FastPath, match: Match, behind: Producer, mode: ToolMode) -> None:
        self._owner = owner
        self._match = match
        self._behind = behind
        self._mode = mode

    async def produce(self, turn: Turn) -> AsyncIterator[str]:
        """The reply's sentences (``Producer``)."""
        action, trace = self._match.action, turn.trace
        if not self._owner.registry.read_only(action.tool):
            await turn.confirmed()  # a speculative turn sets no timer until it is confirmed
        result = await self._owner.registry.call(action.tool, action.arguments)
        reply = action.reply_for(result.result) if result.ok else None
        trace.extra["intent"] = {"name": action.intent, "match_ms": self._match.ms}
        if reply is None:
            # A refusal (no such timer, two timers, division by zero) changed nothing:
            # the model reads the same error and asks the user or explains.
            log.info("fast path: %s declined (%s); asking the model", action.tool, result.result)
            trace.extra["intent"]["declined"] = result.result
            async with contextlib.aclosing(self._behind.produce(turn)) as behind:
                async for sentence in behind:
                    yield sentence
            return
        self._owner.publish(
            ToolCalled(result.name, result.arguments, result.ok, result.result, result.duration_ms)
        )
        trace.execution_path = ExecutionPath.FAST
        trace.add_call(result)
        # Written as the model would have made the call, so a follow-up has the context.
        calls = written_calls([result]) if self._mode == ToolMode.TEXT else ""
        turn.messages.extend(tool_turn_messages(self._mode, calls, [result]))
        turn.open_reply = turn.keep_unspoken = True  # the tool ran, whatever is heard
        for sentence in split_sentences(reply, self._owner.first_clause_words):
            yield sentence
