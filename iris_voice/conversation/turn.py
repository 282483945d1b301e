"""One turn of the conversation, run the same way whoever answers it.

A ``Producer`` — the intent fast path, boost, the tool-calling chat loop — only makes a
turn's sentences (and its tool calls, into the turn's messages and trace). ``run_turn``
does everything else, once: the turn's events, a repeated sentence dropped, the fallback
reply when nothing was said, the trace's reply, path and times, and the turn written into
the conversation — also when the listener stops early (a barge-in keeps what was said).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from iris_voice.conversation.history import Conversation, Message
from iris_voice.conversation.trace import TurnTrace
from iris_voice.events import Event, SentenceReady, TurnDiscarded, TurnFinished, TurnStarted

FALLBACK_REPLY = "Sorry, I could not work that out."
"""Said when a turn produced no sentence and no tool result to fall back on."""


@dataclass
class Turn:
    """One exchange while it is being answered."""

    text: str
    """What the user said or typed."""
    trace: TurnTrace
    """Its record (``iris ask --json``, ``iris status``)."""
    history: list[Message] = field(default_factory=list)
    """The conversation before this turn, as a model reads it."""
    messages: list[Message] = field(default_factory=list)
    """This turn's messages, the user's first; producers append calls and results, which
    become history. A producer may add a message for itself and take it out again (boost's plan)."""
    open_reply: bool = False
    """The turn ends with a tool result whose own sentence was the reply (direct return,
    the fast path): see ``Conversation.add``."""
    keep_unspoken: bool = False
    """Write the turn into the history even if nothing of it was said (a tool already ran)."""
    hold: asyncio.Event | None = None
    """Set once the turn is confirmed; None for a turn confirmed from the start. A held
    turn (started at a pause, before the end of the question was decided) may think and
    run read-only tools, but a tool with side effects waits for it (``confirmed``), and
    if it is dropped unconfirmed nothing of it is recorded."""

    @classmethod
    def start(
        cls,
        text: str,
        conversation: Conversation,
        trace: TurnTrace | None = None,
        hold: asyncio.Event | None = None,
    ) -> Turn:
        """A new turn after the conversation so far (which resets itself when idle)."""
        conversation.begin_turn()
        return cls(
            text,
            trace if trace is not None else TurnTrace(text=text),
            conversation.messages(),
            [{"role": "user", "content": text}],
            hold=hold,
        )

    @property
    def held(self) -> bool:
        """Not (yet) confirmed: nothing of it may be spoken, changed or remembered."""
        return self.hold is not None and not self.hold.is_set()

    async def confirmed(self) -> None:
        """Wait until the turn is confirmed (at once for an ordinary turn): call this before
        anything with side effects."""
        if self.hold is not None:
            await self.hold.wait()


class Producer(Protocol):
    """Makes a turn's sentences: the fast path, boost or the chat loop."""

    def produce(self, turn: Turn) -> AsyncIterator[str]:
        """Yield the reply sentence by sentence, each as soon as it exists; record tool
        calls in ``turn.messages`` and ``turn.trace``; set ``trace.execution_path``.
        Raises ``LlmError`` when the model server fails."""
        ...


async def run_turn(
    turn: Turn,
    producer: Producer,
    conversation: Conversation,
    publish: Callable[[Event], None],
) -> AsyncIterator[str]:
    """Run ``turn`` with ``producer`` and yield its sentences (see the module notes).

    If the consumer stops early (barge-in), the turn is recorded with what it got; an
    ``LlmError`` propagates and a turn with nothing said is not remembered.
    """
    trace = turn.trace
    publish(TurnStarted(turn.text))
    spoken: list[str] = []
    completed = False
    try:
        # aclosing: a consumer that stops early (barge-in) also stops the producer now.
        async with contextlib.aclosing(producer.produce(turn)) as sentences:
            async for sentence in sentences:
                if spoken and sentence == spoken[-1]:
                    continue  # small models sometimes repeat their last sentence verbatim
                spoken.append(sentence)
                publish(SentenceReady(sentence, len(spoken) - 1))
                if trace.first_sentence_ms is None:
                    trace.first_sentence_ms = trace.elapsed_ms()
                yield sentence
        if not spoken:
            ok = [c for c in trace.tool_calls if c["ok"]]
            fallback = ok[-1]["result"] if ok else FALLBACK_REPLY
            spoken.append(fallback)
            publish(SentenceReady(fallback, 0))
            trace.first_sentence_ms = trace.elapsed_ms()
            yield fallback
        completed = True
        await turn.confirmed()  # a speculative turn is recorded once it is confirmed, or never
    finally:
        reply = " ".join(spoken)
        trace.reply = reply
        trace.finish()
        if turn.held:  # dropped before it was confirmed: as if it never happened
            publish(TurnDiscarded(turn.text))
        else:
            if spoken or turn.keep_unspoken:
                if turn.open_reply:
                    conversation.add(turn.messages, open_reply=reply)
                else:
                    conversation.add([*turn.messages, {"role": "assistant", "content": reply}])
            conversation.touch()
            if completed:
                publish(TurnFinished(reply, trace.execution_path or "", trace.to_dict()))
