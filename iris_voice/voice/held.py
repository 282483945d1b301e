"""A turn started at a pause, before the end of the question is decided.

With ``stt.speculative`` the transcript of a question is often ready at the speaker's
first pause, while the end-of-turn decision (a turn detector or the silence) is still
to come. ``HeldTurn`` starts answering it there: the fast path matches, the model reads
the question and writes, read-only tools run. Its sentences wait in a buffer, and a tool
with side effects (a timer, a reminder, an MCP tool not marked read-only) waits for the
turn to be confirmed (``Turn.hold``).

When the question is confirmed with the same words, ``sentences()`` releases the turn and
the buffered sentences are spoken at once. When the speaker goes on, or the final words
differ, ``discard()`` drops it: nothing was spoken, no tool with side effects ran, and the
conversation does not remember it. (LiveKit's preemptive generation is the model; its
users saw calls made twice and answers spoken twice — here a turn either is adopted once
or leaves no trace.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from iris_voice.conversation.responder import Responder
from iris_voice.conversation.trace import TurnTrace

log = logging.getLogger(__name__)

_END = object()
BUFFER = 32
"""Sentences held at most before the producer waits (a reply is rarely longer)."""


@dataclass(frozen=True)
class _Failed:
    error: BaseException


class HeldTurn:
    """One speculative turn: started now, spoken only if ``sentences()`` releases it."""

    def __init__(self, responder: Responder, text: str) -> None:
        self.text = text
        """The words it answers (after the wake phrase was stripped)."""
        self.trace = TurnTrace(text=text)
        """Its record; ``trace.extra["speculative"]`` says so."""
        self.trace.extra["speculative"] = True
        self._hold = asyncio.Event()
        self._queue: asyncio.Queue[object] = asyncio.Queue(BUFFER)
        self._task = asyncio.get_running_loop().create_task(self._produce(responder), name="held-turn")

    @property
    def released(self) -> bool:
        """The turn was confirmed and is being spoken."""
        return self._hold.is_set()

    async def _produce(self, responder: Responder) -> None:
        try:
            async for sentence in responder.sentences(self.text, self.trace, hold=self._hold):
                await self._queue.put(sentence)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the model failed: raised where the turn is spoken
            await self._queue.put(_Failed(exc))
        await self._queue.put(_END)

    def discard(self) -> None:
        """Drop the turn unconfirmed: it leaves no trace (``Turn.hold``)."""
        if not self._task.done():
            self._task.cancel()
        log.debug("speculative turn dropped: %r", self.text)

    async def sentences(self) -> AsyncIterator[str]:
        """Confirm the turn and stream its sentences, the buffered ones first. Stopping
        early (barge-in) stops the turn, which keeps what it produced, as any turn does."""
        self._hold.set()
        try:
            while (item := await self._queue.get()) is not _END:
                if isinstance(item, _Failed):
                    raise item.error
                yield str(item)
        finally:
            if not self._task.done():
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
