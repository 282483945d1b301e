"""Where a finished timer is said when IRIS has no speaker of its own (``iris serve``).

``TimerRouter`` subscribes to the bus and offers each ``TimerFinished`` to its ``routes``
in order — a satellite part adds one that says the timer in the room that set it — and
when none takes it, logs it and keeps it for ``iris status``.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from iris_voice.events import Event, TimerFinished

log = logging.getLogger(__name__)


TimerRoute = Callable[[TimerFinished], Awaitable[bool]]
"""Says a finished timer somewhere (a satellite); True when it was delivered."""


class TimerRouter:
    """Finished timers of a hub without a speaker: to the first route that takes them, else
    logged and kept (the last ``keep``) for ``iris status``."""

    def __init__(self, keep: int = 20) -> None:
        self.routes: list[TimerRoute] = []
        """Tried in order; a satellite part adds its own."""
        self.unannounced: collections.deque[dict[str, Any]] = collections.deque(maxlen=keep)
        """Timers that fired with nowhere to say them (newest last)."""
        self._queue: asyncio.Queue[TimerFinished] = asyncio.Queue(64)

    def on_event(self, event: Event) -> None:
        """Bus subscriber: queue a ``TimerFinished`` (never blocks; the oldest waits are dropped)."""
        if isinstance(event, TimerFinished):
            if self._queue.full():
                self._queue.get_nowait()
            self._queue.put_nowait(event)

    async def run(self) -> None:
        """Deliver finished timers until cancelled."""
        while True:
            await self.deliver(await self._queue.get())

    async def deliver(self, event: TimerFinished) -> bool:
        """Offer ``event`` to each route; True when one said it."""
        for route in list(self.routes):
            try:
                if await route(event):
                    return True
            except Exception:  # one broken route must not lose the timer
                log.exception("timer route %r failed", route)
        log.warning("%s %d finished with no speaker or satellite to say it: %s",
                    event.kind, event.timer_id, event.message)  # fmt: skip
        self.unannounced.append({"id": event.timer_id, "kind": event.kind, "message": event.message,
                                 "due_at": event.due_at, "fired_at": time.time()})  # fmt: skip
        return False
