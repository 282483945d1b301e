"""Satellites' timers on the hub: shown on the satellite that set them, rung there.

A timer set in a satellite's turn carries that satellite's name (``timers.origin``). Its
changes go to the satellite as Wyoming's ``timer-started``, ``timer-updated`` and
``timer-cancelled`` (a stock satellite runs its ``--timer-*-command`` hooks; Home
Assistant's voice devices show a countdown). When it falls due the satellite gets
``timer-finished``, then the chime and the sentence as audio after any reply under way. While
the satellite is away the hub's own speaker rings it when the hub has one; else the timer
stays pending in the database (a crash loses nothing) for ``satellite.hold_timers_s``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

from wyoming.timer import TimerCancelled, TimerStarted, TimerUpdated
from wyoming.timer import TimerFinished as WyTimerFinished

from iris_voice.audio.chime import chime
from iris_voice.events import Event, TimerChanged, TimerFinished
from iris_voice.speech.tts import Synthesizer
from iris_voice.wyoming.hub_turn import one_sentence, speak_to

log = logging.getLogger(__name__)


def timer_event(event: TimerChanged) -> Any:
    """The Wyoming event for a timer's change."""
    tid, left = str(event.timer_id), max(0, round(event.seconds_left))
    if event.change == "started":
        hours, rest = divmod(left, 3600)
        return TimerStarted(
            id=tid, total_seconds=left, name=event.label or None,
            start_hours=hours or None, start_minutes=(rest // 60) or None, start_seconds=(rest % 60) or None,
        ).event()  # fmt: skip
    if event.change == "cancelled":
        return TimerCancelled(id=tid).event()
    return TimerUpdated(id=tid, is_active=event.running, total_seconds=left).event()


class TimerHost(Protocol):
    """What ``SatelliteTimers`` needs of the ``SatellitePart``."""

    connected: Mapping[str, Any]
    local_announce: Callable[[TimerFinished], None] | None
    hold_timers_s: float
    tts: Synthesizer
    speech_jobs: asyncio.Semaphore | None

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """A task the part cancels when it closes."""
        ...


class SatelliteTimers:
    """What the ``SatellitePart`` does with timers (see the module notes)."""

    def __init__(self, part: TimerHost) -> None:
        self.part = part

    def hold(self, row: Any, now: float) -> float | None:
        """The timer service's ``Hold``: fire when someone can hear it."""
        part = self.part
        if not row.origin:
            return None  # the hub's own: its alarms ring it, or iris serve's TimerRouter keeps it
        if row.origin in part.connected or part.local_announce is not None:
            return None
        return (row.due_at or now) + part.hold_timers_s

    def on_event(self, event: Event) -> None:
        """EventBus subscriber: a satellite's timer events go to that satellite."""
        if isinstance(event, TimerChanged) and event.origin and event.kind == "timer":
            sat = self.part.connected.get(event.origin)
            if sat is not None:
                self.part.spawn(self._show(sat, event), f"timer-{sat.name}")
            return
        if not isinstance(event, TimerFinished) or not event.origin:
            return
        sat = self.part.connected.get(event.origin)
        if sat is not None:
            self.part.spawn(self._ring(sat, event), f"ring-{sat.name}")
        elif self.part.local_announce is not None:
            log.info("%s is not connected: %s rings here", event.origin, event.message)
            self.part.local_announce(event)
        else:
            log.warning("timer %d for %s not delivered: the satellite stayed away %.0f s (%s)",
                        event.timer_id, event.origin, self.part.hold_timers_s, event.message)  # fmt: skip

    async def _show(self, sat: Any, event: TimerChanged) -> None:
        try:
            await sat.conn.write_event(timer_event(event))
        except (ConnectionError, OSError) as exc:
            log.info("timer %d: %s not told (%s)", event.timer_id, sat.name, exc)

    async def _ring(self, sat: Any, event: TimerFinished) -> None:
        """``timer-finished``, then the chime and the sentence, after any reply under way."""
        part = self.part
        rate = part.tts.sample_rate
        try:
            async with sat.speaking:
                await sat.conn.write_event(WyTimerFinished(id=str(event.timer_id)).event())
                said = one_sentence(event.message)
                await speak_to(
                    sat.conn.write_event, part.tts, said, [], (chime(rate), rate), part.speech_jobs
                )
            log.info("timer %d rang on %s", event.timer_id, sat.name)
        except (ConnectionError, OSError) as exc:
            log.warning("timer %d could not ring on %s (%s)", event.timer_id, sat.name, exc)
            if part.local_announce is not None:
                part.local_announce(event)
        except Exception:  # a failed synthesis must not go unseen
            log.exception("timer %d could not ring on %s", event.timer_id, sat.name)
