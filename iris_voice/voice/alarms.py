"""Finished timers and reminders, announced aloud until someone answers.

A ``TimerFinished`` becomes a chime and its sentence ("Your pasta timer is done."),
repeated every ``audio.alarm_repeat_s`` until dismissed — "stop" (no wake word needed
while it rings: ``on_ringing`` tells the listener), the wake word, ``iris stop`` — or
``audio.alarm_timeout_s`` passes; a desktop notification goes out
too where a notification service runs. Timers missed while IRIS was off are said once,
and so is ``TimerStoreRecovered`` (the timer list was damaged and replaced).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Awaitable, Callable

import numpy as np

from iris_voice.config import AudioConfig
from iris_voice.events import Event, TimerFinished, TimerStoreRecovered

log = logging.getLogger(__name__)

Announce = Callable[[str, "tuple[np.ndarray, int] | None"], Awaitable[object]]


async def notify_desktop(title: str, body: str, timeout: float = 5.0) -> bool:
    """Show a desktop notification with ``notify-send`` when a session bus has one; True if shown."""
    exe = shutil.which("notify-send")
    if not exe or not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return False
    try:
        proc = await asyncio.create_subprocess_exec(
            exe, "--app-name=IRIS", "--urgency=critical", title, body,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        return await asyncio.wait_for(proc.wait(), timeout) == 0
    except (OSError, TimeoutError) as exc:
        log.debug("notify-send failed: %s", exc)
        return False


def _notification(event: TimerFinished | TimerStoreRecovered) -> tuple[str, str]:
    """The desktop notification's title and body; a recovery names the file it kept."""
    if isinstance(event, TimerStoreRecovered):
        return "IRIS timers", f"{event.message} Old list: {event.moved_to}"
    return ("IRIS reminder" if event.kind == "reminder" else "IRIS timer"), event.message


class AlarmAnnouncer:
    """Speaks ``TimerFinished`` events through ``announce`` (the pipeline's)."""

    def __init__(
        self,
        cfg: AudioConfig,
        announce: Announce,
        chime: Callable[[], tuple[np.ndarray, int]] | None = None,
        notify: Callable[[str, str], Awaitable[bool]] = notify_desktop,
        on_ringing: Callable[[bool], None] | None = None,
    ) -> None:
        self.cfg = cfg
        self._announce = announce
        self._chime = chime if cfg.chime else None
        self._notify = notify if cfg.notifications else None
        self._queue: asyncio.Queue[TimerFinished | TimerStoreRecovered] = asyncio.Queue(64)
        self._dismissed = asyncio.Event()
        self._on_ringing = on_ringing or (lambda _ringing: None)
        self.ringing: TimerFinished | None = None
        """The alarm being repeated now, if any."""

    def on_event(self, event: Event) -> None:
        """EventBus subscriber: queue finished timers (and a replaced timer list). A
        satellite's timer rings on that satellite (``wyoming.hub``), not here."""
        if isinstance(event, TimerFinished) and event.origin:
            return
        if isinstance(event, TimerFinished | TimerStoreRecovered):
            self.take(event)

    def take(self, event: TimerFinished | TimerStoreRecovered) -> None:
        """Queue ``event`` to ring here, whatever its origin (the hub hands over a
        satellite's timer when that satellite is not connected)."""
        if self._queue.full():
            self._queue.get_nowait()
        self._queue.put_nowait(event)

    def dismiss(self) -> bool:
        """Stop the ringing alarm (and the rest of the queue); True if one was ringing."""
        ringing = self.ringing is not None
        self._dismissed.set()
        return ringing

    async def run(self) -> None:
        """Announce queued alarms one after another until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            event = await self._queue.get()
            self._dismissed.clear()
            if self._notify is not None:
                loop.create_task(self._notify(*_notification(event)), name="notify")
            try:
                if isinstance(event, TimerStoreRecovered):
                    await self._announce(event.message, None)  # once, no chime: news, not an alarm
                else:
                    await self._ring(event)
            except Exception:  # a failing speaker must not stop later alarms
                log.exception("announcing %s failed", event)
            finally:
                if self.ringing is not None:
                    self._on_ringing(False)
                self.ringing = None

    async def _ring(self, event: TimerFinished) -> None:
        self.ringing = event
        self._on_ringing(True)
        deadline = asyncio.get_running_loop().time() + self.cfg.alarm_timeout_s
        while True:
            clip = self._chime() if self._chime is not None else None
            await self._announce(event.message, clip)
            if event.missed or self._dismissed.is_set():
                return
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                log.info("alarm %d not dismissed within %.0f s", event.timer_id, self.cfg.alarm_timeout_s)
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dismissed.wait(), min(self.cfg.alarm_repeat_s, remaining))
            if self._dismissed.is_set():
                return
