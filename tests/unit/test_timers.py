"""Timers and reminders: the SQLite store, the service on a fake clock (the ``h`` fixture),
and tools. Parsing is tested in test_timeparse.py, restarts in test_timer_restarts.py."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import asdict
from pathlib import Path

import pytest

from iris_voice.errors import ToolError
from iris_voice.events import EventBus, TimerFinished
from iris_voice.timers.service import RETRY_SECONDS, TimerService
from iris_voice.timers.store import TimerRow, TimerStore, default_db_path
from iris_voice.tools.builtin.timers import make_timer_tools
from iris_voice.tools.registry import ToolRegistry
from tests.support.fakes_clock import FakeClock
from tests.support.timer_harness import T0, Harness

REPO = Path(__file__).resolve().parents[2]


# --- store ---------------------------------------------------------------------------------------


def test_store_crud(tmp_path: Path) -> None:
    store = TimerStore(tmp_path / "t.db")
    late = store.add("timer", "tea", 200.0, duration=100.0, created_at=100.0)
    soon = store.add("reminder", "call mom", 150.0, created_at=100.0)
    assert (late.id, late.kind, late.label, late.due_at, late.duration, late.state) == (
        1,
        "timer",
        "tea",
        200.0,
        100.0,
        "pending",
    )
    assert soon.duration is None and soon.fired_at is None
    assert [r.id for r in store.pending()] == [soon.id, late.id]
    assert store.get(late.id) == late
    assert store.get(99) is None

    assert store.mark_fired(soon.id, 151.0)
    assert not store.mark_fired(soon.id, 152.0)  # claimed once
    assert not store.cancel(soon.id)  # fired rows can't be cancelled
    assert store.cancel(late.id)
    assert not store.cancel(late.id)
    assert not store.mark_fired(late.id)  # a cancelled timer never fires
    assert store.pending() == []
    assert store.get(soon.id).fired_at == 151.0  # type: ignore[union-attr]
    assert [r.state for r in store.list()] == ["fired", "cancelled"]
    assert [r.id for r in store.list("cancelled")] == [late.id]
    with pytest.raises(ValueError):
        store.add("alarm", "", 1.0)
    with pytest.raises(ValueError):
        store.list("done")
    store.close()


def test_store_ids_never_reused_and_shared_between_connections(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with TimerStore(path) as a, TimerStore(path) as b:
        first = a.add("timer", "x", 10.0)
        assert b.get(first.id) == first  # committed as soon as add() returned
        with sqlite3.connect(path) as raw:
            raw.execute("DELETE FROM timers")
        assert a.add("timer", "y", 10.0).id == first.id + 1
        mode = a._conn.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"


def test_default_db_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_db_path() == tmp_path / "state" / "iris" / "timers.db"
    store = TimerStore()
    assert store.path.exists()  # directories created
    store.close()
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / ".local" / "state" / "iris" / "timers.db"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert default_db_path() == tmp_path / "home" / ".local" / "state" / "iris" / "timers.db"


# --- service on a fake clock ---------------------------------------------------------------------


async def test_timer_fires_exactly_when_due_and_not_before(h: Harness) -> None:
    await h.start()
    row = await h.service.set_timer(480, "pasta")
    assert row.due_at == T0 + 480
    await h.clock.sleeping_until(T0 + 480)
    h.clock.advance(479)
    await asyncio.sleep(0.05)  # give a wrongly woken service every chance to misfire
    h.assert_no_event()
    assert h.clock.deadlines() == [T0 + 480]
    h.clock.advance(1)
    event = await h.next_event()
    assert event == TimerFinished(row.id, "timer", "pasta", T0 + 480, False, "Your pasta timer is done.")
    stored = h.store.get(row.id)
    assert stored is not None and (stored.state, stored.fired_at) == ("fired", T0 + 480)


async def test_resync_wakeups_do_not_fire_early(tmp_path: Path) -> None:
    h = Harness(tmp_path, resync_seconds=60)
    await h.start(idle=False)
    await h.clock.sleeping_until(T0 + 60)
    await h.service.set_timer(150, "tea")
    for deadline in (T0 + 60, T0 + 120, T0 + 150):
        await h.clock.sleeping_until(deadline)
        h.assert_no_event()
        h.clock.advance_to(deadline)
    assert (await h.next_event()).label == "tea"
    assert h.clock.now() == T0 + 150
    assert h.task is not None
    h.task.cancel()


class SlowStore(TimerStore):
    """A store whose reads take five seconds of fake time."""

    clock: FakeClock

    def pending(self) -> list[TimerRow]:
        rows = super().pending()
        self.clock._now += 5  # only plain float arithmetic: this runs in a worker thread
        return rows


async def test_time_spent_reading_does_not_delay_the_alarm(tmp_path: Path) -> None:
    clock, bus = FakeClock(T0), EventBus()
    store = SlowStore(tmp_path / "t.db")
    store.clock = clock
    store.add("timer", "tea", T0 + 100, duration=100, created_at=T0)
    task = asyncio.create_task(TimerService(store, bus.publish, clock, resync_seconds=None).run())
    await clock.sleeping_until(T0 + 100)  # not T0 + 105: the sleep starts after the read
    task.cancel()


class FlakyStore(TimerStore):
    """A store whose first read fails like a locked database."""

    failures = 1

    def pending(self) -> list[TimerRow]:
        if self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError("database is locked")
        return super().pending()


async def test_a_database_error_is_retried_not_fatal(tmp_path: Path) -> None:
    clock, bus = FakeClock(T0), EventBus()
    events = bus.queue()
    store = FlakyStore(tmp_path / "t.db")
    store.add("timer", "tea", T0 - 10, duration=60, created_at=T0 - 70)
    task = asyncio.create_task(TimerService(store, bus.publish, clock, resync_seconds=None).run())
    await clock.sleeping_until(T0 + RETRY_SECONDS)
    clock.advance(RETRY_SECONDS)
    event = await asyncio.wait_for(events.get(), 2)
    assert isinstance(event, TimerFinished) and (event.label, event.missed) == ("tea", True)
    assert not task.done()
    task.cancel()


async def test_several_timers_fire_in_due_order(h: Harness) -> None:
    await h.start()
    await h.service.set_timer(300, "c")
    await h.service.set_timer(60, "a")
    await h.service.set_reminder(T0 + 120, "b")
    await h.clock.sleeping_until(T0 + 60)
    h.clock.advance(60)
    assert (await h.next_event()).label == "a"
    await h.clock.sleeping_until(T0 + 120)
    h.clock.advance(1000)  # overshoot: both remaining fire, still in due order
    first, second = await h.next_event(), await h.next_event()
    assert (first.label, first.kind, first.message) == ("b", "reminder", "Reminder: b.")
    assert (second.label, second.missed) == ("c", False)


async def test_cancel_before_due_never_fires(h: Harness) -> None:
    await h.start()
    pasta = await h.service.set_timer(60, "pasta")
    await h.service.set_timer(120, "tea")
    await h.clock.sleeping_until(T0 + 60)
    assert await h.service.cancel("pasta") == [pasta]
    await h.clock.sleeping_until(T0 + 120)  # re-planned past the cancelled one
    h.clock.advance(500)
    assert (await h.next_event()).label == "tea"  # pasta, due first, would have come first
    await asyncio.sleep(0.05)
    h.assert_no_event()
    assert h.store.get(pasta.id).state == "cancelled"  # type: ignore[union-attr]


async def test_adding_an_earlier_timer_reschedules(h: Harness) -> None:
    await h.start()
    await h.service.set_timer(600, "long")
    await h.clock.sleeping_until(T0 + 600)
    h.clock.advance(10)
    await h.service.set_timer(50, "short")  # due at T0 + 60, before the planned wake-up
    await h.clock.sleeping_until(T0 + 60)
    h.clock.advance(50)
    assert (await h.next_event()).label == "short"
    await h.clock.sleeping_until(T0 + 600)
    h.assert_no_event()
    h.clock.advance_to(T0 + 600)
    assert (await h.next_event()).label == "long"


async def test_missed_timers_fire_on_start(h: Harness) -> None:
    h.store.add("timer", "pasta", T0 - 3300, duration=480, created_at=T0 - 3780)  # 2:05 PM
    h.store.add("reminder", "call mom", T0 - 86400, created_at=T0 - 90000)  # yesterday 3 PM
    h.store.add("timer", "", T0 - 60, duration=600, created_at=T0 - 660)
    later = h.store.add("timer", "tea", T0 + 30, duration=60, created_at=T0 - 30)
    await h.start(idle=False)
    missed = [await h.next_event() for _ in range(3)]
    assert [e.missed for e in missed] == [True, True, True]
    assert [e.message for e in missed] == [
        "While I was off, a reminder was due yesterday at 3:00 PM: call mom.",
        "While I was off, your pasta timer went off at 2:05 PM.",
        "While I was off, your timer for 10 minutes went off at 2:59 PM.",
    ]
    await h.clock.sleeping_until(T0 + 30)
    h.assert_no_event()
    h.clock.advance(30)
    event = await h.next_event()
    assert (event.timer_id, event.missed) == (later.id, False)
    assert h.store.pending() == []


async def test_tools_persist_without_run_and_a_later_service_fires(h: Harness) -> None:
    row = await h.service.set_timer(90, "eggs")  # run() is not running
    assert h.store.pending() == [row]
    await h.start(idle=False)
    await h.clock.sleeping_until(T0 + 90)
    h.clock.advance(90)
    assert (await h.next_event()).timer_id == row.id


async def test_rows_added_by_another_process_fire_after_resync(tmp_path: Path) -> None:
    h = Harness(tmp_path, resync_seconds=60)
    await h.start(idle=False)
    await h.clock.sleeping_until(T0 + 60)
    with TimerStore(tmp_path / "timers.db") as other:  # e.g. a one-shot `iris ask`
        other.add("timer", "cli", T0 + 30, duration=30, created_at=T0)
    h.clock.advance(60)
    event = await h.next_event()
    assert (event.label, event.missed) == ("cli", False)
    assert h.task is not None
    h.task.cancel()


async def test_a_failing_subscriber_does_not_stop_later_timers(h: Harness) -> None:
    def broken(_event: object) -> None:
        raise RuntimeError("subscriber bug")

    h.bus.subscribe(broken)
    h.service.publish = lambda e: (h.bus.publish(e), broken(e))  # type: ignore[func-returns-value]
    await h.start()
    await h.service.set_timer(10, "one")
    await h.service.set_timer(20, "two")
    await h.clock.sleeping_until(T0 + 10)
    h.clock.advance(10)
    await h.clock.sleeping_until(T0 + 20)
    h.clock.advance(10)
    assert [(await h.next_event()).label for _ in range(2)] == ["one", "two"]


async def test_two_services_on_one_file_announce_once(h: Harness, tmp_path: Path) -> None:
    row = await h.service.set_timer(10, "once")
    with TimerStore(tmp_path / "timers.db") as store:  # e.g. a second daemon by mistake
        other = TimerService(store, h.bus.publish, h.clock, tz_name="UTC", resync_seconds=None)
        await h.start(idle=False)
        other_task = asyncio.create_task(other.run())
        await h.clock.sleeping_until(T0 + 10, count=2)
        h.clock.advance(10)
        assert (await h.next_event()).timer_id == row.id
        await asyncio.sleep(0.05)
        h.assert_no_event()  # the conditional UPDATE let only one of them announce it
        other_task.cancel()


async def test_cancel_selection(h: Harness) -> None:
    s = h.service
    pasta = await s.set_timer(480, "Pasta")
    tea = await s.set_timer(180, "green tea")
    eggs = await s.set_timer(600, "")
    call = await s.set_reminder(T0 + 3600, "call mom")

    assert await s.cancel(f"#{pasta.id}") == [pasta]
    assert await s.cancel("TEA") == [tea]  # case-insensitive substring
    with pytest.raises(ToolError, match="No running timer has number 1"):
        await s.cancel("1")  # already cancelled
    assert await s.cancel("the 10 minute one") == [eggs]
    assert await s.cancel("the last one") == [call]
    assert await s.list() == []
    assert await s.cancel("all") == []

    a = await s.set_timer(60, "pasta")
    b = await s.set_timer(120, "pasta")
    with pytest.raises(ToolError) as err:
        await s.cancel("pasta")
    assert f"#{a.id} pasta with 1 minute left" in err.value.message
    assert f"#{b.id} pasta with 2 minutes left" in err.value.message
    assert "Nothing was cancelled" in err.value.message
    assert len(await s.list()) == 2  # nothing cancelled
    with pytest.raises(ToolError, match="No timer matches 'soup'. Running: #"):
        await s.cancel("soup")
    assert await s.cancel(f"timer {b.id}") == [b]
    assert await s.cancel("it") == [a]  # the only one left
    r = await s.set_reminder(T0 + 60, "stretch")
    t = await s.set_timer(60, "x")
    assert await s.cancel("all reminders") == [r]
    assert await s.cancel("latest") == [t]
    with pytest.raises(ToolError, match="No timers are running"):
        await s.cancel("pasta")


# --- tools ---------------------------------------------------------------------------------------


@pytest.fixture
def tools(h: Harness) -> ToolRegistry:
    return ToolRegistry(make_timer_tools(h.service, "UTC"))


async def test_set_timer_tool(h: Harness, tools: ToolRegistry) -> None:
    result = await tools.call("set_timer", {"duration": "8 minutes", "label": "the pasta timer"})
    assert (result.ok, result.direct, result.result) == (True, True, "Pasta timer set for 8 minutes.")
    (row,) = h.store.pending()
    assert (row.kind, row.label, row.duration, row.due_at) == ("timer", "pasta", 480, T0 + 480)

    numeric = await tools.call("set_timer", {"duration": 300})  # the registry coerces numbers to str
    assert (numeric.ok, numeric.result) == (True, "Timer set for 5 minutes.")
    assert h.store.pending()[0].duration == 300

    bad = await tools.call("set_timer", json.dumps({"duration": "banana"}))
    assert not bad.ok and not bad.direct
    assert bad.result.startswith("Error: I couldn't understand the duration 'banana'. Try '8 minutes'")
    assert len(h.store.pending()) == 2
    missing = await tools.call("set_timer", {"label": "x"})
    assert not missing.ok and missing.result.startswith("Error: invalid arguments for set_timer: duration")


async def test_list_and_cancel_tools(h: Harness, tools: ToolRegistry) -> None:
    assert (await tools.call("list_timers", {})).result == "No timers are running."
    await tools.call("set_timer", {"duration": "8 minutes", "label": "pasta"})
    await tools.call("set_timer", {"duration": "3 minutes"})
    await tools.call("set_reminder", {"when": "at 7 pm", "message": "call mom"})
    h.clock.advance(20)
    listing = await tools.call("list_timers", {})
    assert listing.direct
    assert listing.result == (
        "You have 2 timers: a timer for 3 minutes with 2 minutes 40 seconds left and pasta with "
        "7 minutes 40 seconds left. You have 1 reminder: call mom at 7:00 PM."
    )
    assert (await tools.call("cancel_timer", {"which": "pasta"})).result == "Cancelled the pasta timer."
    ambiguous = await tools.call("cancel_timer", {"which": ""})
    assert not ambiguous.ok and ambiguous.result.startswith("Error: 2 are running: #")
    everything = await tools.call("cancel_timer", {"which": "all"})
    assert everything.result == "Cancelled 1 timer and 1 reminder."
    assert (await tools.call("cancel_timer", {"which": "all"})).result == (
        "Nothing was running, so nothing was cancelled."
    )
    assert (await tools.call("list_timers", {})).result == "No timers are running."


async def test_set_reminder_tool(h: Harness, tools: ToolRegistry) -> None:
    result = await tools.call("set_reminder", {"when": "at 7 pm", "message": "to call mom."})
    assert (result.ok, result.direct) == (True, True)
    assert result.result == "I'll remind you to call mom at 7:00 PM."
    (row,) = h.store.pending()
    assert (row.kind, row.label, row.due_at, row.duration) == ("reminder", "call mom", T0 + 4 * 3600, None)
    tomorrow = await tools.call("set_reminder", {"when": "tomorrow at 9", "message": "about the dentist"})
    assert tomorrow.result == "I'll remind you about the dentist tomorrow at 9:00 AM."
    bad = await tools.call("set_reminder", {"when": "someday", "message": "x"})
    assert not bad.ok and "Try 'in 10 minutes'" in bad.result
    empty = await tools.call("set_reminder", {"when": "in 5 minutes", "message": " "})
    assert not empty.ok and "what the reminder is for" in empty.result


def test_tool_specs_stay_small(h: Harness, tools: ToolRegistry) -> None:
    assert tools.names() == [
        "set_timer",
        "list_timers",
        "cancel_timer",
        "adjust_timer",
        "pause_timer",
        "resume_timer",
        "set_reminder",
    ]
    assert all(t.direct_return for t in tools)
    specs = [asdict(s) for s in tools.specs()]
    # about 4 characters a token: the timer tools must leave room for time and calculator
    assert len(json.dumps(specs)) < 1600
    assert all(len(s["description"]) <= 60 for s in specs)
    assert specs[0]["parameters"]["required"] == ["duration"]
    assert specs[0]["parameters"]["properties"]["label"]["type"] == "string"
