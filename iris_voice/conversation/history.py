"""The conversation: the one history of what was said, whoever answered.

Every turn — answered by the model, by boost, by the intent fast path — lands here as
the messages a model would have seen, so the next question has its context ("…and in
Paris?"). ``Conversation`` is the only owner of that history: the idle reset, the
bounds in turns and tokens, a turn that ends with a tool's own sentence, and trimming
a reply to what was heard after a barge-in all happen here, nowhere else.

The bounds are trimmed with hysteresis. The model server reuses the longest prefix of the
last prompt it read; dropping the oldest turn moves the conversation's start, so everything
after the system prompt must be read again (~1,000 tokens, seconds on two cores). Dropping
one turn per question, once the bound is reached, paid that on every turn of a long
conversation. Instead a turn past the bound drops the oldest turns in one step, down to a
low-water mark (``Bounds.keep``): between trims a turn only appends, and after one only the
few turns kept are read again (while IRIS is idle: ``PromptWarmer``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from iris_voice.tools.registry import ToolResult

Message = dict[str, Any]
"""One chat message in Ollama's format (``role``, ``content``, maybe ``tool_calls``)."""


class ToolMode(StrEnum):
    """How tools reach the model, and so how tool turns are written into the history."""

    NATIVE = "native"
    """Ollama's ``tools`` parameter; calls come back as ``tool_calls``, results as ``tool`` messages."""
    TEXT = "text"
    """Tools described in the system prompt; calls written as text, results as a user message."""


def tool_turn_messages(mode: ToolMode, content: str, results: Sequence[ToolResult]) -> list[Message]:
    """The assistant's call (``content``: what it wrote around it) and the results, as
    ``mode`` writes them into the conversation."""
    if mode == ToolMode.NATIVE:
        calls = [{"function": {"name": r.name, "arguments": r.arguments}} for r in results]
        out: list[Message] = [{"role": "assistant", "content": content, "tool_calls": calls}]
        return out + [{"role": "tool", "content": r.result, "tool_name": r.name} for r in results]
    # Models without a tool template read results as a user turn, Hermes/Qwen style.
    body = "\n".join(
        f"<tool_response>\n{json.dumps({'name': r.name, 'content': r.result}, ensure_ascii=False)}"
        "\n</tool_response>"
        for r in results
    )
    return [{"role": "assistant", "content": content}, {"role": "user", "content": body}]


def written_calls(results: Sequence[ToolResult]) -> str:
    """Calls as a text-mode model writes them (for a turn no model took part in)."""
    return "\n".join(
        f"<tool_call>\n{json.dumps({'name': r.name, 'arguments': r.arguments}, ensure_ascii=False)}"
        "\n</tool_call>"
        for r in results
    )


@dataclass(frozen=True)
class Bounds:
    """How much history a model is shown."""

    turns: int = 12
    """Most turns kept (``llm.history_turns``; 0 keeps none)."""
    tokens: int = 1500
    """Rough token budget of the kept turns, at most (``llm.history_tokens``)."""
    idle_reset_s: float = 300.0
    """Silence after which a new question starts a new conversation (``llm.history_idle_reset_s``)."""
    keep: float = 1 / 3
    """The low-water mark: a turn past ``turns`` or ``tokens`` drops the oldest turns until at
    most this share of both is left. 1.0 drops one turn at a time, just under the bounds
    (the policy before hysteresis; benchmarks compare with it)."""


def estimated_tokens(turn: list[Message]) -> float:
    """A turn's size in tokens, roughly: 4 characters of its JSON a token."""
    return len(json.dumps(turn)) / 4


class Conversation:
    """The history, one message list per turn, oldest first."""

    def __init__(self, bounds: Bounds = Bounds(), clock: Callable[[], float] = time.monotonic) -> None:
        self.bounds = bounds
        self._clock = clock
        self.turns: list[list[Message]] = []
        """Kept turns, each the messages of one exchange."""
        self._open_reply: str | None = None  # what the last turn said, if it ends with a tool result
        self._last_activity = clock()
        self.version = 0
        """Counts every change, so a reader can tell the history moved on."""
        self.trims = 0
        """Times the oldest turns were dropped to stay within the bounds."""

    def __len__(self) -> int:
        return len(self.turns)

    def messages(self) -> list[Message]:
        """The kept turns as one message list (what precedes a new question)."""
        return [m for turn in self.turns for m in turn]

    def begin_turn(self) -> None:
        """A turn starts: after ``idle_reset_s`` of silence the conversation starts afresh."""
        if self.turns and self._clock() - self._last_activity > self.bounds.idle_reset_s:
            self.reset()

    def touch(self) -> None:
        """A turn ended (recorded or not): the idle clock starts again from now."""
        self._last_activity = self._clock()

    def add(self, turn: list[Message], open_reply: str | None = None) -> None:
        """Keep a finished turn. ``open_reply`` is what a turn that ends with a tool result
        said: it stays open while it is the last turn, and gets its spoken reply as an
        assistant message once another turn follows.

        Why both: after a tool result the model calls the tool again for "…and in Paris?"
        (with a trailing assistant sentence Qwen2.5-1.5B copied it with the place swapped
        and the time wrong), while four such turns in a row made it answer the next chat
        question with nothing at all — so only the last turn stays open.
        """
        self.touch()
        if self.bounds.turns == 0:
            return
        if self._open_reply is not None and self.turns:
            self.turns[-1].append({"role": "assistant", "content": self._open_reply})
        self._open_reply = open_reply
        self.turns.append(turn)
        self._trim()
        self.version += 1

    def _trim(self) -> None:
        """Past a bound, drop the oldest turns in one step down to the low-water mark; the
        newest turn always stays, even alone over the budget."""
        b = self.bounds
        sizes = [estimated_tokens(t) for t in self.turns]
        if len(sizes) <= b.turns and (len(sizes) == 1 or sum(sizes) <= b.tokens):
            return
        # 1e-9: 6 turns at a third keep 2, whatever the float rounding of 1/3.
        most_turns, most_tokens = max(1, int(b.turns * b.keep + 1e-9)), b.tokens * b.keep
        kept, total = 1, sizes[-1]
        for size in reversed(sizes[:-1]):
            if kept >= most_turns or total + size > most_tokens:
                break
            kept, total = kept + 1, total + size
        del self.turns[:-kept]
        self.trims += 1

    def amend_last(self, heard: str) -> None:
        """After a barge-in, keep only what the user actually heard of the last reply;
        with nothing heard, the whole turn is forgotten."""
        if not self.turns:
            return
        if self._open_reply is not None:  # a tool's own sentence was cut off
            if heard:
                self._open_reply = heard
            else:
                self.turns.pop()
                self._open_reply = None
            self.version += 1
            return
        if self.turns[-1][-1].get("role") != "assistant":
            return
        if heard:
            self.turns[-1][-1] = {"role": "assistant", "content": heard}
        else:
            self.turns.pop()
        self.version += 1

    def reset(self) -> None:
        """Forget everything (``iris forget``, the idle reset)."""
        self.turns.clear()
        self._open_reply = None
        self.version += 1
