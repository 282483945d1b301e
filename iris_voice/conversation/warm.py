"""Keeping the model server's prompt cache in step with the conversation.

Ollama's runner (and IRIS's test server) keeps the tokens of the last prompt in its slot
and reuses the longest common prefix of the next one; everything after the first token
that differs is evaluated again, at 50–75 tokens a second for a 1.5B model on two
cores. Turns the model never saw — answered by the fast path, a direct-return tool, a
barge-in that trimmed the reply, ``iris forget``, the oldest turns dropped at the history's
bound (``Conversation``: rarely, and in one step) — leave the server's cache behind the
conversation, so the next question would first pay for all of them (368 tokens of four
fast-path turns cost ~6 s). Even after a model turn the history holds the reply as it
was spoken, not the tokens the model wrote.

``PromptWarmer`` closes that gap while IRIS is idle: when the conversation moved on
since the last warm-up, it sends the conversation so far with a one-token answer
(``ChatLoop.warmup``). A turn cancels it the moment it starts: the server stops at its
next batch and the turn goes on from what was evaluated.

A server evaluates a prompt in batches (Ollama's default is 512 tokens) and stops only
between them, so a cancelled warm-up of a whole trimmed history (~250 tokens, 4-5 s on two
cores) still held the next question until it finished (5.7 and 13.8 s of first audio in a
30-turn conversation). The warm-up therefore goes in steps of whole messages of about
``STEP_TOKENS`` each, from the first message the server has not seen from IRIS's last
warm-up: a question waits at most for one step, and every step's work stays cached.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from iris_voice.conversation.history import Conversation, Message, estimated_tokens
from iris_voice.errors import LlmError

log = logging.getLogger(__name__)

STEP_TOKENS = 96
"""New tokens one warm-up request adds at most (whole messages; a longer message is one step):
about 1.5 s of evaluation for a 1.5B model on two cores, the longest a question waits for it."""


def warm_steps(messages: list[Message], cached: list[Message], step_tokens: float = STEP_TOKENS) -> list[int]:
    """Where each warm-up step ends (message counts, the last one ``len(messages)``): steps of
    about ``step_tokens`` new tokens, from the first message that differs from ``cached``."""
    same = 0
    for old, new in zip(cached, messages, strict=False):
        if old != new:
            break
        same += 1
    ends: list[int] = []
    size = 0.0
    for i in range(same, len(messages)):
        size += estimated_tokens([messages[i]])
        if size >= step_tokens and i + 1 < len(messages):
            ends.append(i + 1)
            size = 0.0
    return [*ends, len(messages)]


class PromptWarmer:
    """Warms the server's prompt cache with the conversation whenever IRIS goes idle."""

    def __init__(
        self,
        warm: Callable[[list[Message]], Awaitable[None]],
        conversation: Conversation,
        enabled: bool = True,
    ) -> None:
        self._warm = warm
        self._conversation = conversation
        self.enabled = enabled
        """``llm.warm_cache``: off leaves the cache to the turns themselves."""
        self._task: asyncio.Task[None] | None = None
        self._warmed: int | None = None  # the conversation version the cache holds
        self._cached: list[Message] = []  # the messages of the last warm-up step that finished
        self.steps = 0
        """Warm-up requests sent (a warm-up of a long change is several)."""
        self.warmups = 0
        """Warm-ups that ran to the end."""
        self.cancelled = 0
        """Warm-ups a turn cut short."""
        self.last_ms: float | None = None
        """How long the last complete warm-up took."""

    @property
    def busy(self) -> bool:
        """A warm-up is running."""
        return self._task is not None and not self._task.done()

    def warmed(self) -> None:
        """The cache holds the conversation as it is now (the start-up warm-up did it)."""
        self._warmed = self._conversation.version
        self._cached = self._conversation.messages()

    def lost(self) -> None:
        """The server's cache now holds another conversation: the next warm-up reads this one
        again from its start."""
        self._warmed = None
        self._cached = []

    def idle(self) -> None:
        """IRIS has nothing to do: warm the cache if the conversation moved on since."""
        if not self.enabled or self.busy or self._warmed == self._conversation.version:
            return
        self._task = asyncio.get_running_loop().create_task(self._run(), name="prompt-warmup")

    def cancel(self) -> None:
        """A turn starts: stop a running warm-up now (what it evaluated stays cached)."""
        if self.busy and self._task is not None:
            self._task.cancel()
            self.cancelled += 1
        self._task = None

    async def settle(self) -> None:
        """Wait for a running warm-up (file mode and benchmarks, tests)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)

    async def _run(self) -> None:
        version = self._conversation.version
        started = time.perf_counter()
        messages = self._conversation.messages()
        try:
            for end in warm_steps(messages, self._cached):
                await self._warm(messages[:end])
                self._cached = messages[:end]
                self.steps += 1
        except LlmError as exc:  # the next turn reports a dead server; a warm-up only logs it
            log.info("prompt warm-up failed: %s [%s]", exc.message, exc.code)
            return
        self.last_ms = round((time.perf_counter() - started) * 1000, 1)
        self.warmups += 1
        if self._conversation.version == version:
            self._warmed = version
        log.debug("prompt cache warmed to conversation %d in %.0f ms", version, self.last_ms)
