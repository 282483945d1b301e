"""A TimerService on a fake clock, shared by the timer tests (conftest.py's ``h`` fixture makes one)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from iris_voice.events import EventBus, TimerChanged, TimerFinished
from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerStore
from tests.support.fakes_clock import FakeClock

IDLE = 100_000.0
T0 = datetime(2027, 1, 15, 15, 0, tzinfo=UTC).timestamp()  # a Friday, 3:00 PM UTC


class Harness:
    """A TimerService on a FakeClock (from ``start``, in zone ``tz_name``) with its events in a queue."""

    def __init__(self, tmp_path: Path, *, start: float = T0, tz_name: str = "UTC", **kwargs: object) -> None:
        self.clock = FakeClock(start)
        self.store = TimerStore(tmp_path / "timers.db")
        self.bus = EventBus()
        self.events = self.bus.queue()
        self.changes: list[TimerChanged] = []
        """Timers set, changed and cancelled, as published (drained by the two methods below)."""
        # a resync far beyond every test's horizon: run() then always has a sleep to observe
        kwargs.setdefault("resync_seconds", IDLE)
        self.service = TimerService(self.store, self.bus.publish, self.clock, tz_name=tz_name, **kwargs)  # type: ignore[arg-type]
        self.task: asyncio.Task[None] | None = None

    async def start(self, idle: bool = True) -> None:
        """Start run(); with ``idle``, return once it has read the store and gone to sleep."""
        self.task = asyncio.create_task(self.service.run(), name="timers")
        if idle:  # later changes must then wake it, not a lucky first read
            await self.clock.sleeping_until(self.clock.now() + IDLE)

    async def next_event(self) -> TimerFinished:
        """The next event other than a ``TimerChanged`` (those are kept in ``changes``)."""
        while isinstance(event := await asyncio.wait_for(self.events.get(), 2.0), TimerChanged):
            self.changes.append(event)
        assert isinstance(event, TimerFinished)
        return event

    def assert_no_event(self) -> None:
        """Nothing but ``TimerChanged`` events came (kept in ``changes``)."""
        while not self.events.empty():
            event = self.events.get_nowait()
            assert isinstance(event, TimerChanged), f"unexpected event {event}"
            self.changes.append(event)
