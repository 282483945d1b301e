"""Where a timer rings: the ``origin`` column (schema 2), the turn's origin reaching the
store, and the desktop daemon leaving a satellite's timer to the hub."""

from __future__ import annotations

import asyncio
import math
import sqlite3
from pathlib import Path

from iris_voice.config import AudioConfig
from iris_voice.events import TimerFinished
from iris_voice.timers.origin import ORIGIN, local_only
from iris_voice.timers.store import SCHEMA_VERSION, TimerStore
from iris_voice.voice.alarms import AlarmAnnouncer
from tests.support.timer_harness import T0, Harness

V1_TABLE = """
CREATE TABLE timers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('timer', 'reminder')),
    label TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    due_at REAL CHECK (due_at IS NOT NULL OR state != 'pending'),
    duration REAL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'paused', 'fired', 'cancelled')),
    fired_at REAL,
    remaining REAL CHECK (remaining IS NOT NULL OR state != 'paused')
)"""


def make_v1(path: Path) -> None:
    """A version 1 file as IRIS wrote it before origins: a running, a paused and a
    set-aside row."""
    with sqlite3.connect(path) as raw:
        raw.execute(V1_TABLE)
        cols = "kind, label, created_at, due_at, duration, state, fired_at, remaining"
        add = f"INSERT INTO timers ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        raw.execute(add, ("timer", "pasta", T0, T0 + 480, 480, "pending", None, None))
        raw.execute(add, ("timer", "tea", T0, None, 180, "paused", None, 60))
        raw.execute(
            "CREATE TABLE timers_rejected (id, kind, label, created_at, due_at, duration, state, "
            "fired_at, remaining, reason TEXT NOT NULL, rejected_at REAL NOT NULL)"
        )
        raw.execute(
            "INSERT INTO timers_rejected VALUES (9, 'x', '', 0, 0, 0, 'pending', 0, 0, 'bad kind', 1)"
        )
        raw.execute("PRAGMA user_version = 1")


def test_a_version_1_database_gains_the_origin_column(tmp_path: Path) -> None:
    path = tmp_path / "timers.db"
    make_v1(path)
    with TimerStore(path) as store:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert [(r.label, r.state, r.remaining, r.origin) for r in store.active()] == [
            ("pasta", "pending", None, ""),
            ("tea", "paused", 60.0, ""),
        ]
        row = store.add("timer", "eggs", T0 + 60, duration=60.0, origin="kitchen")
        assert store.get(row.id) == row and row.origin == "kitchen" and row.id == 3
        # a bad row read now is set aside into the old rejected table, origin included
        store._conn.execute("UPDATE timers SET origin = ? WHERE id = ?", ("k" * 65, row.id))
        assert [r.label for r in store.active()] == ["pasta", "tea"]
        kept = store._conn.execute("SELECT id, origin, reason FROM timers_rejected ORDER BY id").fetchall()
        assert kept[0] == (3, "k" * 65, f"origin {'k' * 65!r} is not a satellite name") and kept[1][0] == 9
    with TimerStore(path) as again:  # a migrated file opens unchanged
        assert [r.origin for r in again.active()] == ["", ""]


def test_a_version_0_database_is_rebuilt_with_origin(tmp_path: Path) -> None:
    path = tmp_path / "timers.db"
    with sqlite3.connect(path) as raw:
        raw.execute(V1_TABLE.replace("remaining REAL CHECK (remaining IS NOT NULL OR state != 'paused')", "x")
                    .replace(",\n    x", ""))  # fmt: skip
        raw.execute("INSERT INTO timers (kind, label, created_at, due_at) VALUES ('timer', 'old', ?, ?)",
                    (T0, T0 + 5))  # fmt: skip
    with TimerStore(path) as store:
        assert [(r.label, r.origin) for r in store.active()] == [("old", "")]


async def test_the_turns_origin_reaches_the_row_and_the_event(h: Harness) -> None:
    await h.start()
    token = ORIGIN.set("office")
    try:
        office = await h.service.set_timer(5, "tea")
    finally:
        ORIGIN.reset(token)
    here = await h.service.set_timer(10, "pasta")
    assert (office.origin, here.origin) == ("office", "")
    h.clock.advance(10)
    first, second = await h.next_event(), await h.next_event()
    assert [(e.label, e.origin) for e in (first, second)] == [("tea", "office"), ("pasta", "")]


async def test_the_desktop_daemon_leaves_a_satellites_timer_pending(h: Harness) -> None:
    h.service.hold = local_only  # what the daemon sets
    token = ORIGIN.set("kitchen")
    try:
        await h.service.set_timer(5, "eggs")
    finally:
        ORIGIN.reset(token)
    await h.service.set_timer(8, "pasta")
    await h.start(idle=False)
    h.clock.advance(10)
    event = await h.next_event()
    assert (event.label, event.origin) == ("pasta", "")
    await asyncio.sleep(0.05)
    h.assert_no_event()
    assert [(r.label, r.state) for r in h.store.list("pending")] == [("eggs", "pending")]
    assert local_only(h.store.list("pending")[0], T0) == math.inf


async def test_the_desktops_alarms_ignore_a_satellites_timer_unless_handed_over() -> None:
    said: list[str] = []

    async def announce(text: str, _clip: object) -> None:
        said.append(text)

    alarms = AlarmAnnouncer(AudioConfig(chime=False, notifications=False), announce)
    kitchen = TimerFinished(1, "timer", "eggs", T0, True, "Your eggs timer is done.", "kitchen")
    alarms.on_event(kitchen)
    assert alarms._queue.empty()
    alarms.take(kitchen)  # the hub hands it over: the kitchen is not connected
    task = asyncio.create_task(alarms.run())
    for _ in range(50):
        if said:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    assert said == ["Your eggs timer is done."]


async def test_a_satellites_timer_held_while_it_was_away_says_when_it_went_off(h: Harness) -> None:
    away = {"kitchen"}
    h.service.hold = lambda row, now: (row.due_at or now) + 3600 if row.origin in away else None
    token = ORIGIN.set("kitchen")
    try:
        await h.service.set_timer(60, "pasta")
    finally:
        ORIGIN.reset(token)
    await h.start(idle=False)
    h.clock.advance(60 + 600)  # due 10 minutes ago; the kitchen is still away
    await h.clock.sleeping_until(T0 + 60 + 3600)  # run() plans to look again when the hold ends
    h.assert_no_event()
    away.clear()  # the kitchen is back
    h.service.poke()
    event = await h.next_event()
    assert (event.origin, event.missed) == ("kitchen", True)
    assert event.message == "While this speaker was offline, your pasta timer went off at 3:01 PM."
