"""Where a finished timer of the headless hub (``iris serve``) goes when nothing can say it.

A satellite's timer rings on that satellite (``wyoming.hub.SatellitePart``). A timer set
through ``handle`` (Home Assistant, a script, ``iris ask`` on the hub) belongs to no room
and the hub has no speaker: ``TimerRouter`` logs it and keeps it for ``iris status``.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import Any

from iris_voice.events import Event, TimerFinished

log = logging.getLogger(__name__)


class TimerRouter:
    """Finished timers of a hub without a speaker, and of no satellite: logged and kept
    (the last ``keep``) for ``iris status``."""

    def __init__(self, keep: int = 20) -> None:
        self.unannounced: collections.deque[dict[str, Any]] = collections.deque(maxlen=keep)
        """Timers that fired with nowhere to say them (newest last)."""
        self._queue: asyncio.Queue[TimerFinished] = asyncio.Queue(64)

    def on_event(self, event: Event) -> None:
        """Bus subscriber: queue a ``TimerFinished`` of no satellite (never blocks; the
        oldest waits are dropped)."""
        if isinstance(event, TimerFinished) and not event.origin:  # a satellite's: its part rings it
            if self._queue.full():
                self._queue.get_nowait()
            self._queue.put_nowait(event)

    async def run(self) -> None:
        """Keep finished timers until cancelled."""
        while True:
            self.deliver(await self._queue.get())

    def deliver(self, event: TimerFinished) -> None:
        """Log ``event`` and keep it for ``iris status``."""
        log.warning("%s %d finished with no speaker or satellite to say it: %s",
                    event.kind, event.timer_id, event.message)  # fmt: skip
        self.unannounced.append({"id": event.timer_id, "kind": event.kind, "message": event.message,
                                 "due_at": event.due_at, "fired_at": time.time()})  # fmt: skip
