"""One model server, one request at a time, whichever conversation asks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from iris_voice.llm.client import ChatBackend, ChatChunk


class SerialBackend:
    """A ``ChatBackend`` that lets one request at a time reach the model it wraps.

    Every conversation (each satellite's, each Wyoming client's) has its own history, but
    they share the one model server: a second conversation's request waits for the first
    stream to end instead of interleaving with it. The lock is held only while a stream is read, so a turn the
    fast path answers never waits here.
    """

    def __init__(self, inner: ChatBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.formats = bool(getattr(inner, "formats", False))
        """Takes ``fmt`` when the inner backend does."""
        self.lock = asyncio.Lock()

    async def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatChunk]:
        """The inner backend's stream, under the lock (released when the stream is closed)."""
        async with self.lock:
            stream = self.inner.stream(messages, tools, options, **kwargs)
            try:
                async for chunk in stream:
                    yield chunk
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
