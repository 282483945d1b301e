"""Timers and reminders that fire on time, survive restarts and own up to what was missed.

``TimerStore`` (SQLite) is the single source of truth; ``TimerService.run`` is one
long-lived task that sleeps until the next due time or until the set of timers changes,
then claims the row in the database and publishes ``TimerFinished``. Rows that fell due
while IRIS was off are announced as missed when it starts. Timers can gain or lose time
and be paused (a paused timer keeps its seconds left and has no due time, so it never
fires) and resumed; every change wakes ``run`` to re-plan. The async API works without
``run`` too: a one-shot ``iris ask`` stores the timer and the daemon fires it.

``run`` never ends on an error: a failed cycle (a locked or damaged file, anything
unforeseen) is logged and retried with a growing pause. When the store had to replace a
damaged file — in this process or another — ``run`` publishes ``TimerStoreRecovered``
once, so the user hears that earlier timers are gone.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from iris_voice.errors import ToolError
from iris_voice.events import Event, TimerChanged, TimerFinished, TimerStoreRecovered
from iris_voice.timers.dbfile import is_damage, is_locked
from iris_voice.timers.origin import ORIGIN, Hold
from iris_voice.timers.parse import (
    MAX_DURATION,
    ORDINALS,
    parse_duration,
    resolve_tz,
    speak_duration,
    speak_when,
)
from iris_voice.timers.store import Recovery, TimerRow, TimerStore

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0
"""How long run() waits before reading the store again after a failed cycle (the first time)."""
MAX_RETRY_SECONDS = 60.0
"""The longest wait between retries: each failure in a row doubles the wait up to this."""
LATE_SECONDS = 60.0
"""A satellite's timer rung this long after it fell due (it waited for the satellite) says so."""
RECOVERED_MESSAGE = (
    "My timer list was damaged, so I started a new one. Timers and reminders set before "
    "won't go off; the old list is kept in a file next to the new one."
)
"""What IRIS says after the store replaced a damaged database (the log names the files)."""


class Clock(Protocol):
    """Wall time and sleeping, so tests can drive time by hand."""

    def now(self) -> float:
        """The current Unix timestamp."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return after ``seconds`` of this clock's time."""
        ...


class SystemClock:
    """The real clock: ``time.time`` and ``asyncio.sleep``."""

    def now(self) -> float:
        """The current Unix timestamp."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` (at least one loop iteration)."""
        await asyncio.sleep(max(0.0, seconds))


def cap(text: str) -> str:
    """Upper-case the first letter only ("iPhone timer" stays as said)."""
    return text[:1].upper() + text[1:]


def noun(row: TimerRow, article: str = "the") -> str:
    """How a row is named in a sentence: "the pasta timer", "your reminder to call mom"."""
    if row.kind == "reminder":
        return f"{article} reminder to {row.label}" if row.label else f"{article} reminder"
    if row.label:
        return f"{article} {row.label} timer"
    return f"{article} timer for {speak_duration(row.duration or 0)}"


class TimerService:
    """Fires stored timers and reminders on time and offers the async API tools use.

    ``publish`` receives one ``TimerFinished`` per fired row (``EventBus.publish``).
    ``resync_seconds`` bounds any single sleep: asyncio sleeps on the monotonic clock,
    which stops during a laptop suspend, and another process (``iris ask``) may add rows
    this process never hears about; both are caught within this bound. None disables it.
    """

    def __init__(
        self,
        store: TimerStore,
        publish: Callable[[Event], None],
        clock: Clock = SystemClock(),
        *,
        tz_name: str | None = None,
        resync_seconds: float | None = 60.0,
    ) -> None:
        self.store = store
        self.publish = publish
        self.clock = clock
        self.tz = resolve_tz(tz_name)
        self.resync_seconds = resync_seconds
        self.next_due: float | None = None
        """Due time of the soonest pending row as of the last check (for ``iris status``)."""
        self.hold: Hold = lambda _row, _now: None
        """Which due rows wait (see ``Hold``); the hub and the daemon set it."""
        self._changed = asyncio.Event()
        self._suspect = False  # a cycle failed on a damaged file: check it before the next

    def _local(self, ts: float) -> datetime:
        return datetime.fromtimestamp(ts, self.tz)

    def describe(self, row: TimerRow, now: float) -> str:
        """A row in a listing: "pasta with 7 minutes left", "tea, paused with 3 minutes left"."""
        if row.kind == "reminder" and row.due_at is not None:
            return f"{row.label or 'a reminder'} {speak_when(self._local(row.due_at), self._local(now))}"
        name = row.label or f"a timer for {speak_duration(row.duration or 0)}"
        return f"{name}{', paused' if row.paused else ''} with {speak_duration(row.left(now))} left"

    def status(self, row: TimerRow, now: float) -> str:
        """One row's state as a sentence: "The pasta timer has 7 minutes left."."""
        if row.kind == "reminder" and row.due_at is not None:
            return cap(f"{noun(row, 'your')} is {speak_when(self._local(row.due_at), self._local(now))}.")
        left = speak_duration(row.left(now))
        return cap(f"{noun(row)} {'is paused with' if row.paused else 'has'} {left} left.")

    def _message(self, row: TimerRow, missed: bool, now: float) -> str:
        """The sentence spoken when a row fires."""
        if missed and row.origin:  # it waited for its satellite (the hub's Hold)
            when = speak_when(self._local(row.due_at or now), self._local(now))
            away = "While this speaker was offline,"
            if row.kind == "reminder":
                return f"{away} a reminder was due {when}: {row.label or 'no message'}."
            return f"{away} {noun(row, 'your')} went off {when}."
        if missed:
            when = speak_when(self._local(row.due_at or now), self._local(now))
            if row.kind == "reminder":
                return f"While I was off, a reminder was due {when}: {row.label or 'no message'}."
            return f"While I was off, {noun(row, 'your')} went off {when}."
        if row.kind == "reminder":
            return f"Reminder: {row.label}." if row.label else "This is your reminder."
        return cap(f"{noun(row, 'your')} is done.")

    async def _add(
        self, kind: str, label: str, due_at: float, now: float, duration: float | None
    ) -> TimerRow:
        origin = ORIGIN.get()
        row = await asyncio.to_thread(
            self.store.add, kind, label, due_at, duration=duration, created_at=now, origin=origin
        )
        self._changed.set()  # run() re-reads the store and re-plans its sleep
        log.info("%s %d set: %r due %s%s", kind, row.id, label, self._local(due_at).isoformat(),
                 f" (from {origin})" if origin else "")  # fmt: skip
        self._tell("started", row, now)
        return row

    async def set_timer(self, seconds: float, label: str = "") -> TimerRow:
        """Store a timer that falls due ``seconds`` from now."""
        if not 0 < seconds <= MAX_DURATION:
            raise ValueError(f"a timer must last between 0 and {MAX_DURATION:.0f} seconds, not {seconds}")
        now = self.clock.now()
        return await self._add("timer", label, now + seconds, now, seconds)

    async def set_reminder(self, when_ts: float, message: str) -> TimerRow:
        """Store a reminder due at the Unix timestamp ``when_ts``."""
        now = self.clock.now()
        if when_ts <= now:
            raise ValueError("a reminder must be in the future")
        return await self._add("reminder", message, when_ts, now, None)

    async def list(self) -> list[TimerRow]:
        """Running and paused timers and reminders, soonest first."""
        return await asyncio.to_thread(self.store.active)

    async def cancel(self, which: str) -> list[TimerRow]:
        """Cancel by id ("1", "#1"), label, "all" or "the last one"; the rows cancelled.

        An ambiguous or unmatched ``which`` cancels nothing and raises ``ToolError``
        naming the candidates, so the model can ask which one.
        """
        rows = await asyncio.to_thread(self.store.active)
        chosen = self._select(which, rows, self.clock.now())
        return await self._apply(chosen, lambda r: self.store.cancel(r.id), reread=False, what="cancelled")

    async def find(self, which: str) -> list[TimerRow]:
        """The rows ``which`` designates, without changing them (see ``cancel``)."""
        rows = await asyncio.to_thread(self.store.active)
        return self._select(which, rows, self.clock.now(), "Nothing was changed")

    async def add_time(self, which: str, seconds: float) -> list[TimerRow]:
        """Add ``seconds`` (negative: remove) to the timers ``which`` designates; the rows after.

        Removing as much time as a timer has left or more is refused (``ToolError``):
        that is a cancel, or a mishearing, not something to do silently.
        """
        now = self.clock.now()
        rows = self._pick(which, await self._timers(), now, lambda r: not r.paused)
        for row in rows:
            if seconds < 0 and row.left(now) + seconds < 1:
                raise ToolError(
                    f"{cap(noun(row))} has only {speak_duration(row.left(now))} left, so no time was removed."
                )
            if row.left(now) + seconds > MAX_DURATION:
                raise ToolError("Timers can last at most 7 days, so no time was added.")
        return await self._apply(rows, lambda r: self.store.shift(r.id, seconds))

    async def pause(self, which: str) -> tuple[list[TimerRow], list[TimerRow]]:
        """Pause running timers; (rows paused, rows that were paused already)."""
        now = self.clock.now()
        rows = self._pick(which, await self._timers(), now, lambda r: not r.paused)
        running = [r for r in rows if not r.paused]
        done = await self._apply(running, lambda r: self.store.pause(r.id, r.left(now)))
        return done, [r for r in rows if r.paused]

    async def resume(self, which: str) -> tuple[list[TimerRow], list[TimerRow]]:
        """Run paused timers again; (rows resumed, rows that were running already)."""
        now = self.clock.now()
        rows = self._pick(which, await self._timers(), now, lambda r: r.paused)
        paused = [r for r in rows if r.paused]
        done = await self._apply(paused, lambda r: self.store.resume(r.id, now + r.left(now)))
        return done, [r for r in rows if not r.paused]

    async def _timers(self) -> list[TimerRow]:
        return [r for r in await asyncio.to_thread(self.store.active) if r.kind == "timer"]

    async def _apply(
        self,
        rows: list[TimerRow],
        change: Callable[[TimerRow], bool],
        reread: bool = True,
        what: str = "updated",
    ) -> list[TimerRow]:
        """Run ``change`` on each row (in a thread); the rows changed, as stored now
        (``reread``) or as they were before. ``what`` the change was, for ``TimerChanged``."""
        done = []
        for row in rows:
            if await asyncio.to_thread(change, row):  # False: it fired or was cancelled meanwhile
                done.append((await asyncio.to_thread(self.store.get, row.id) or row) if reread else row)
        if done:
            self._changed.set()  # run() re-reads the store and re-plans its sleep
        now = self.clock.now()
        for row in done:
            self._tell(what, row, now)
        return done

    def _tell(self, change: str, row: TimerRow, now: float) -> None:
        """Publish a ``TimerChanged`` (a broken subscriber changes nothing here)."""
        running = change != "cancelled" and not row.paused
        event = TimerChanged(row.id, row.kind, row.label, change, row.left(now), running, row.origin)
        try:
            self.publish(event)
        except Exception:
            log.exception("publishing %s failed", event)

    def _pick(
        self, which: str, rows: list[TimerRow], now: float, prefer: Callable[[TimerRow], bool]
    ) -> list[TimerRow]:
        """``_select`` among the ``prefer``red rows first ("pause the timer" means the running
        one), then among all, so a named timer in the other state is still found."""
        preferred = [r for r in rows if prefer(r)]
        if preferred and len(preferred) < len(rows):
            try:
                return self._select(which, preferred, now, "Nothing was changed")
            except ToolError:
                pass
        return self._select(which, rows, now, "Nothing was changed")

    def _select(
        self, which: str, rows: list[TimerRow], now: float, nothing: str = "Nothing was cancelled"
    ) -> list[TimerRow]:
        """The rows ``which`` designates (see ``cancel``); ``nothing`` ends refusals."""
        words = re.sub(r"[^\w#\s]", " ", which.lower()).split()
        kinds = {"timer": "timer", "timers": "timer", "reminder": "reminder", "reminders": "reminder"}
        kind = next((kinds[w] for w in words if w in kinds), None)
        skip = {"the", "my", "that", "this", "one", "ones", "please", "of", "them", "it", *kinds}
        key = " ".join(w for w in words if w not in skip)
        pool = [r for r in rows if kind is None or r.kind == kind]
        running = "; ".join(f"#{r.id} {self.describe(r, now)}" for r in rows) or "none"
        if key in ("all", "everything", "every"):
            return pool
        if not pool:
            raise ToolError(f"No {kind or 'timer'}s are running. {nothing}.")
        if key in ("last", "latest", "newest", "most recent", "recent"):
            return [max(pool, key=lambda r: (r.created_at, r.id))]
        if key in ORDINALS:  # "the first one": by when it was set, as the person set them
            ordered = sorted(pool, key=lambda r: (r.created_at, r.id))
            if ORDINALS[key] >= len(ordered):
                raise ToolError(f"Only {len(ordered)} running: {running}. {nothing}.")
            return [ordered[ORDINALS[key]]]
        if m := re.fullmatch(r"(?:#|number |no )?#?(\d+)", key):
            hits = [r for r in rows if r.id == int(m[1])]
            if not hits:
                raise ToolError(f"No running timer has number {m[1]}. Running: {running}.")
            return hits
        if not key:
            hits = pool
        else:
            hits = [r for r in pool if r.label.lower() == key] or [r for r in pool if key in r.label.lower()]
        if not hits and key:
            try:
                seconds = parse_duration(key)  # "the 10 minute one"
                hits = [r for r in pool if r.duration and abs(r.duration - seconds) < 0.5]
            except ValueError:
                pass
        if not hits:
            raise ToolError(f"No timer matches {which!r}. Running: {running}.")
        if len(hits) > 1:
            options = "; ".join(f"#{r.id} {self.describe(r, now)}" for r in hits)
            what = f"match {which!r}" if key else "are running"
            raise ToolError(f"{len(hits)} {what}: {options}. {nothing}; say which number or 'all'.")
        return hits

    async def _fire(self, row: TimerRow, missed: bool) -> None:
        """Claim the row in the store, then announce it (at most once, even across processes)."""
        now = self.clock.now()
        if not await asyncio.to_thread(self.store.mark_fired, row.id, now):
            return  # cancelled or fired by someone else since we read it
        message = self._message(row, missed, now)
        event = TimerFinished(row.id, row.kind, row.label, row.due_at or now, missed, message, row.origin)
        log.info("%s %d fired%s: %s", row.kind, row.id, " (missed)" if missed else "", event.message)
        try:
            self.publish(event)
        except Exception:  # a broken subscriber must not stop later timers
            log.exception("publishing %s failed", event)

    def poke(self) -> None:
        """Look at the due rows again now (a satellite came back for its held timer)."""
        self._changed.set()

    async def _wait(self, delay: float | None) -> None:
        """Sleep ``delay`` seconds (forever when None) or until the set of timers changes."""
        if self._changed.is_set():
            return
        waiters = [asyncio.ensure_future(self._changed.wait())]
        if delay is not None:
            waiters.append(asyncio.ensure_future(self.clock.sleep(delay)))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def _fire_due(self, missed_until: float) -> float | None:
        """Fire every row due by now (missed if due by ``missed_until``); seconds to the next."""
        now = self.clock.now()
        upcoming: list[float] = []
        for row in await asyncio.to_thread(self.store.pending):
            if row.due_at is None:
                continue
            until = self.hold(row, now) if row.due_at <= now else None
            if row.due_at > now:
                upcoming.append(row.due_at)
            elif until is None or until <= now:
                late = bool(row.origin) and now - row.due_at > LATE_SECONDS  # held for its satellite
                await self._fire(row, missed=row.due_at <= missed_until or late)
            elif until != math.inf:
                upcoming.append(until)  # held for its satellite: look again when the hold ends
        self.next_due = min(upcoming) if upcoming else None
        # measured again: reading and firing took time, and the sleep starts from now
        return None if self.next_due is None else self.next_due - self.clock.now()

    async def _sync_store(self) -> None:
        """Reopen the store's file if it was replaced (or is suspect), then announce recoveries."""
        await asyncio.to_thread(self.store.refresh, self._suspect)
        self._suspect = False
        for recovery in await asyncio.to_thread(self.store.take_recoveries):
            self._announce_recovery(recovery)

    def _announce_recovery(self, recovery: Recovery) -> None:
        path, message = str(self.store.path), RECOVERED_MESSAGE
        event = TimerStoreRecovered(path, recovery.moved_to, recovery.reason, message)
        log.warning("announcing that the timers database was replaced; the old one is %s", recovery.moved_to)
        try:
            self.publish(event)
        except Exception:  # a broken subscriber must not stop the timers
            log.exception("publishing %s failed", event)

    async def run(self) -> None:
        """Fire missed rows, then every row when it falls due, until cancelled.

        One failed cycle never ends it: the error is logged (in full the first time in a
        row), the wait doubles from ``RETRY_SECONDS`` up to ``MAX_RETRY_SECONDS``, and a
        damaged file is checked (and replaced) before the next try.
        """
        missed_until = self.clock.now()  # rows already due when IRIS starts were missed
        failures = 0
        while True:
            self._changed.clear()  # before reading, so a change during the read wakes us again
            try:
                await self._sync_store()
                delay = await self._fire_due(missed_until)
                missed_until = -math.inf
                if failures:
                    log.info("timers work again after %d failed attempts", failures)
                failures = 0
            except Exception as exc:  # a locked, full or damaged disk must not take the daemon down
                failures += 1
                delay = min(RETRY_SECONDS * 2 ** min(failures - 1, 16), MAX_RETRY_SECONDS)
                self._suspect = self._suspect or is_damage(exc)
                if is_locked(exc):  # another program holds the file: nothing to debug, rows wait
                    log.warning("the timers database %s is locked by another program (%s); due timers "
                                "wait, retrying in %.0f s", self.store.path, exc, delay)  # fmt: skip
                elif failures == 1:
                    log.exception("timers failed; retrying in %.0f s", delay)
                else:
                    what = f"{type(exc).__name__}: {exc}"
                    log.warning("timers failed again (%s); retrying in %.0f s", what, delay)
            if self.resync_seconds is not None:
                delay = self.resync_seconds if delay is None else min(delay, self.resync_seconds)
            if delay is None or delay > 0:
                await self._wait(delay)
