"""Timers set, changed and cancelled are published (``TimerChanged``) and reach the satellite
that set them as Wyoming's ``timer-started``, ``timer-updated`` and ``timer-cancelled``."""

from __future__ import annotations

from pathlib import Path

from wyoming.event import Event as WyEvent
from wyoming.timer import TimerCancelled, TimerStarted, TimerUpdated

from iris_voice.events import TimerChanged
from iris_voice.timers.origin import ORIGIN
from iris_voice.wyoming.hub_timers import SatelliteTimers, timer_event
from tests.support.timer_harness import Harness


async def test_every_change_of_a_timer_is_published(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    row = await h.service.set_timer(3725, "pasta")
    await h.service.add_time("pasta", 60)
    await h.service.pause("pasta")
    await h.service.resume("pasta")
    await h.service.cancel("pasta")
    h.assert_no_event()
    assert [(c.timer_id, c.change, c.running) for c in h.changes] == [
        (row.id, "started", True), (row.id, "updated", True), (row.id, "updated", False),
        (row.id, "updated", True), (row.id, "cancelled", False),
    ]  # fmt: skip
    assert [round(c.seconds_left) for c in h.changes] == [3725, 3785, 3785, 3785, 3785]
    assert h.changes[0].label == "pasta" and h.changes[0].origin == ""


def test_the_wyoming_events_of_a_change():
    started = TimerStarted.from_event(timer_event(TimerChanged(7, "timer", "pasta", "started", 3725.4, True)))
    assert (started.id, started.total_seconds, started.name) == ("7", 3725, "pasta")
    assert (started.start_hours, started.start_minutes, started.start_seconds) == (1, 2, 5)
    updated = TimerUpdated.from_event(timer_event(TimerChanged(7, "timer", "", "updated", 90, False)))
    assert (updated.id, updated.is_active, updated.total_seconds) == ("7", False, 90)
    assert (
        TimerCancelled.from_event(timer_event(TimerChanged(7, "timer", "", "cancelled", 5, False))).id == "7"
    )


class _Conn:
    def __init__(self) -> None:
        self.sent: list[WyEvent] = []

    async def write_event(self, event: WyEvent) -> None:
        self.sent.append(event)


class _Sat:
    def __init__(self, name: str) -> None:
        self.name, self.conn = name, _Conn()


class _Part:
    def __init__(self) -> None:
        self.connected = {"porch": _Sat("porch")}
        self.local_announce = None
        self.hold_timers_s = 60.0
        self.tts = None
        self.speech_jobs = None
        self.tasks: list = []

    def spawn(self, coro, name):
        import asyncio

        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.append(task)
        return task


async def test_a_satellites_timer_is_shown_on_that_satellite_only(tmp_path: Path) -> None:
    import asyncio

    part = _Part()
    ringer = SatelliteTimers(part)
    h = Harness(tmp_path)
    h.bus.subscribe(ringer.on_event)
    token = ORIGIN.set("porch")
    try:
        await h.service.set_timer(90, "tea")
    finally:
        ORIGIN.reset(token)
    await h.service.set_timer(30, "desk")  # this machine's own: no satellite is told
    await h.service.cancel("tea")
    await asyncio.gather(*part.tasks)
    sent = part.connected["porch"].conn.sent
    assert [e.type for e in sent] == ["timer-started", "timer-cancelled"]
    assert TimerStarted.from_event(sent[0]).name == "tea"
