"""Timer operations people use — add/remove time, pause/resume, status — and the schema migration."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from iris_voice.errors import ToolError
from iris_voice.timers.store import SCHEMA_VERSION, TimerStore
from iris_voice.tools.builtin.timers import make_timer_tools
from iris_voice.tools.registry import ToolRegistry
from tests.support.timer_harness import IDLE, T0, Harness

# The layout IRIS shipped first (schema version 0), as it is on users' disks.
V0_SCHEMA = """
CREATE TABLE IF NOT EXISTS timers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('timer', 'reminder')),
    label TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    due_at REAL NOT NULL,
    duration REAL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'fired', 'cancelled')),
    fired_at REAL
);
CREATE INDEX IF NOT EXISTS timers_pending ON timers (state, due_at);
"""


@pytest.fixture
def tools(h: Harness) -> ToolRegistry:
    return ToolRegistry(make_timer_tools(h.service, "UTC"))


async def say(tools: ToolRegistry, name: str, **args: object) -> str:
    result = await tools.call(name, args)
    assert result.ok, result.result
    assert result.direct  # every timer answer is a spoken sentence
    return result.result


# --- schema migration ----------------------------------------------------------------------------


def make_v0(path: Path) -> None:
    with sqlite3.connect(path) as raw:
        raw.executescript(V0_SCHEMA)
        raw.executemany(
            "INSERT INTO timers (kind, label, created_at, due_at, duration, state, fired_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                ("timer", "pasta", T0, T0 + 480, 480.0, "pending", None),
                ("reminder", "call mom", T0, T0 + 3600, None, "pending", None),
                ("timer", "old", T0 - 900, T0 - 300, 600.0, "fired", T0 - 300),
                ("timer", "gone", T0, T0 + 60, 60.0, "cancelled", None),
            ],
        )
        raw.execute("UPDATE sqlite_sequence SET seq = 41 WHERE name = 'timers'")  # rows 5..41 were deleted


def test_a_version_0_database_is_migrated_and_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "timers.db"
    make_v0(path)
    with TimerStore(path) as store:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        rows = store.list()
        assert [(r.id, r.label, r.state, r.due_at, r.remaining) for r in rows] == [
            (3, "old", "fired", T0 - 300, None),
            (4, "gone", "cancelled", T0 + 60, None),
            (1, "pasta", "pending", T0 + 480, None),
            (2, "call mom", "pending", T0 + 3600, None),
        ]
        assert store.get(3).fired_at == T0 - 300  # type: ignore[union-attr]
        assert store.add("timer", "new", T0 + 10).id == 42  # ids are never reused, even across the rebuild
        assert store.pause(1, 300.0)  # the new column and state work on migrated rows
        paused = store.get(1)
        assert paused is not None and (paused.state, paused.due_at, paused.remaining) == ("paused", None, 300)
        assert [r.id for r in store.pending()] == [42, 2]
        assert [r.id for r in store.active()] == [42, 2, 1]
    with TimerStore(path) as again:  # opening a migrated file changes nothing
        assert again.get(1) == paused
        indexes = again._conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
        assert ("timers_pending",) in indexes


def test_a_fresh_database_starts_at_the_current_version(tmp_path: Path) -> None:
    with TimerStore(tmp_path / "t.db") as store:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        row = store.add("timer", "x", T0 + 5, duration=5)
        with pytest.raises(sqlite3.IntegrityError):  # a running timer must have a due time
            store._conn.execute("UPDATE timers SET due_at = NULL WHERE id = ?", (row.id,))


def test_a_database_from_a_newer_iris_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA user_version = 99")
    with pytest.raises(RuntimeError, match="newer IRIS"):
        TimerStore(path)


def test_two_processes_migrating_at_once_migrate_once(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    make_v0(path)
    a, b = TimerStore(path), TimerStore(path)  # the second sees version 1 and leaves it alone
    assert [r.id for r in a.active()] == [r.id for r in b.active()] == [1, 2]
    a.close()
    b.close()


# --- pause and resume ----------------------------------------------------------------------------


async def test_a_paused_timer_does_not_fire_and_resumes_with_its_time_left(h: Harness) -> None:
    await h.start()
    row = await h.service.set_timer(480, "pasta")
    await h.clock.sleeping_until(T0 + 480)
    h.clock.advance(100)
    done, already = await h.service.pause("pasta")
    assert already == [] and [(r.id, r.state, r.due_at, r.remaining) for r in done] == [
        (row.id, "paused", None, 380)
    ]
    await h.clock.sleeping_until(T0 + 100 + IDLE)  # re-planned: nothing left to wake up for
    h.clock.advance(1000)  # far past the old due time
    await asyncio.sleep(0.05)
    h.assert_no_event()
    done, _ = await h.service.resume("the pasta timer")
    assert done[0].due_at == T0 + 1100 + 380
    await h.clock.sleeping_until(T0 + 1100 + 380)
    h.clock.advance(379)
    await asyncio.sleep(0.05)
    h.assert_no_event()
    h.clock.advance(1)
    assert (await h.next_event()).label == "pasta"


async def test_pause_and_resume_tools(h: Harness, tools: ToolRegistry) -> None:
    await say(tools, "set_timer", duration="8 minutes", label="pasta")
    await say(tools, "set_timer", duration="3 minutes", label="tea")
    h.clock.advance(20)
    assert (
        await say(tools, "pause_timer", which="pasta")
        == "Paused the pasta timer with 7 minutes 40 seconds left."
    )
    h.clock.advance(60)
    assert await say(tools, "pause_timer", which="pasta") == "The pasta timer is already paused."
    # "pause the timer": the one still running is meant, not the paused one
    assert await say(tools, "pause_timer") == "Paused the tea timer with 1 minute 40 seconds left."
    ambiguous = await tools.call("resume_timer", {})
    assert not ambiguous.ok and "Nothing was changed; say which number or 'all'" in ambiguous.result
    assert await say(tools, "resume_timer", which="tea") == (
        "Resumed the tea timer with 1 minute 40 seconds left."
    )
    assert await say(tools, "resume_timer", which="tea") == "The tea timer is already running."
    # "resume the timer": the paused one
    assert await say(tools, "resume_timer") == "Resumed the pasta timer with 7 minutes 40 seconds left."
    assert await say(tools, "pause_timer", which="all") == "Paused 2 timers."
    missing = await tools.call("pause_timer", {"which": "soup"})
    assert not missing.ok and missing.result.startswith("Error: No timer matches 'soup'. Running: #")


async def test_reminders_cannot_be_paused(h: Harness, tools: ToolRegistry) -> None:
    await say(tools, "set_reminder", when="in 1 hour", message="call mom")
    result = await tools.call("pause_timer", {"which": "call mom"})
    assert not result.ok and "No timers are running" in result.result


# --- adding and removing time --------------------------------------------------------------------


async def test_added_time_moves_the_alarm(h: Harness) -> None:
    await h.start()
    await h.service.set_timer(480, "pasta")
    await h.clock.sleeping_until(T0 + 480)
    (row,) = await h.service.add_time("pasta", 120)
    assert row.due_at == T0 + 600 and row.duration == 480  # still "the 8 minute timer"
    await h.clock.sleeping_until(T0 + 600)  # run() re-planned its sleep
    h.clock.advance(480)
    await asyncio.sleep(0.05)
    h.assert_no_event()
    h.clock.advance(120)
    assert (await h.next_event()).label == "pasta"


async def test_removed_time_brings_the_alarm_forward(h: Harness) -> None:
    await h.start()
    await h.service.set_timer(600, "")
    await h.clock.sleeping_until(T0 + 600)
    await h.service.add_time("the 10 minute one", -240)
    await h.clock.sleeping_until(T0 + 360)
    h.clock.advance(360)
    assert (await h.next_event()).message == "Your timer for 10 minutes is done."


async def test_adjust_timer_tool(h: Harness, tools: ToolRegistry) -> None:
    await say(tools, "set_timer", duration="8 minutes", label="pasta")
    h.clock.advance(20)
    assert await say(tools, "adjust_timer", duration="2 minutes", which="the pasta timer") == (
        "Added 2 minutes to the pasta timer. It has 9 minutes 40 seconds left."
    )
    assert await say(tools, "adjust_timer", duration="-1 minute") == (
        "Took 1 minute off the pasta timer. It has 8 minutes 40 seconds left."
    )
    assert await say(tools, "adjust_timer", duration="minus 30 seconds", which="pasta") == (
        "Took 30 seconds off the pasta timer. It has 8 minutes 10 seconds left."
    )
    too_much = await tools.call("adjust_timer", {"duration": "-10 minutes"})
    assert not too_much.ok
    assert (
        too_much.result
        == "Error: The pasta timer has only 8 minutes 10 seconds left, so no time was removed."
    )
    assert h.store.pending()[0].due_at == T0 + 20 + 490  # unchanged by the refusal
    await say(tools, "pause_timer")
    h.clock.advance(300)  # paused: its time left does not run down
    assert await say(tools, "adjust_timer", duration=90) == (
        "Added 1 minute 30 seconds to the pasta timer. It has 9 minutes 40 seconds left."
    )
    bad = await tools.call("adjust_timer", {"duration": "a bit"})
    assert not bad.ok and "Try '8 minutes'" in bad.result
    await say(tools, "set_timer", duration="1 minute", label="tea")
    # "add a minute to the timer": the running one is meant
    assert await say(tools, "adjust_timer", duration="1 minute") == (
        "Added 1 minute to the tea timer. It has 2 minutes left."
    )
    await say(tools, "pause_timer", which="all")
    ambiguous = await tools.call("adjust_timer", {"duration": "1 minute"})
    assert not ambiguous.ok and "Nothing was changed" in ambiguous.result
    assert await say(tools, "adjust_timer", duration="1 minute", which="all") == "Added 1 minute to 2 timers."
    with pytest.raises(ToolError, match="at most 7 days"):
        await h.service.add_time("tea", 8 * 86400)


# --- status --------------------------------------------------------------------------------------


async def test_status_of_one_timer_or_all(h: Harness, tools: ToolRegistry) -> None:
    assert await say(tools, "list_timers") == "No timers are running."
    await say(tools, "set_timer", duration="8 minutes", label="pasta")
    await say(tools, "set_timer", duration="3 minutes")
    await say(tools, "set_reminder", when="at 7 pm", message="call mom")
    h.clock.advance(20)
    assert await say(tools, "list_timers", which="pasta") == "The pasta timer has 7 minutes 40 seconds left."
    assert await say(tools, "list_timers", which="the 3 minute one") == (
        "The timer for 3 minutes has 2 minutes 40 seconds left."
    )
    assert await say(tools, "list_timers", which="call mom") == "Your reminder to call mom is at 7:00 PM."
    await say(tools, "pause_timer", which="pasta")
    h.clock.advance(100)
    assert (
        await say(tools, "list_timers", which="pasta")
        == "The pasta timer is paused with 7 minutes 40 seconds left."
    )
    assert await say(tools, "list_timers") == (
        "You have 2 timers: a timer for 3 minutes with 1 minute left and pasta, paused with "
        "7 minutes 40 seconds left. You have 1 reminder: call mom at 7:00 PM."
    )
    assert await say(tools, "list_timers", which="all timers") == (
        "You have 2 timers: a timer for 3 minutes with 1 minute left and pasta, paused with "
        "7 minutes 40 seconds left."
    )
    unknown = await tools.call("list_timers", {"which": "soup"})
    assert not unknown.ok and "No timer matches 'soup'" in unknown.result


async def test_a_timer_named_by_its_place_among_those_running(h: Harness, tools: ToolRegistry) -> None:
    await say(tools, "set_timer", duration="8 minutes", label="pasta")
    h.clock.advance(1)
    await say(tools, "set_timer", duration="20 minutes", label="sauce")
    assert await say(tools, "pause_timer", which="second") == "Paused the sauce timer with 20 minutes left."
    assert await say(tools, "cancel_timer", which="first") == "Cancelled the pasta timer."
    third = await tools.call("cancel_timer", {"which": "third"})
    assert not third.ok and "Only 1 running" in third.result and "Nothing was cancelled" in third.result
    assert [r.label for r in h.store.active()] == ["sauce"]


async def test_cancel_all_includes_paused_timers(h: Harness, tools: ToolRegistry) -> None:
    await say(tools, "set_timer", duration="8 minutes", label="pasta")
    await say(tools, "set_timer", duration="3 minutes", label="tea")
    await say(tools, "pause_timer", which="pasta")
    assert await say(tools, "cancel_timer", which="all timers") == "Cancelled 2 timers."
    assert h.store.active() == []
    assert [r.state for r in h.store.list()] == ["cancelled", "cancelled"]
