"""A damaged timers database or one bad row never takes IRIS down: the file is moved aside
for a new one (and IRIS says so), a bad row is set aside, and ``TimerService.run`` outlives
any failed cycle. The hostile inputs are in tests/support/hostile/timer_db.py."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from pathlib import Path

import pytest

from iris_voice.cli.main import main
from iris_voice.events import EventBus, TimerChanged, TimerFinished, TimerStoreRecovered
from iris_voice.timers import service as timer_service
from iris_voice.timers.service import RETRY_SECONDS, TimerService
from iris_voice.timers.store import TimerRow, TimerStore
from iris_voice.tools.builtin.timers import make_timer_tools
from iris_voice.tools.registry import ToolRegistry
from tests.support.fakes_clock import FakeClock
from tests.support.hostile.timer_db import BAD_ROWS, DAMAGED_FILES, insert_raw_row
from tests.support.timer_harness import T0, Harness


def corrupt_copies(path: Path) -> list[Path]:
    """The files a recovery kept beside ``path`` (main file and side files)."""
    return sorted(path.parent.glob(f"{path.name}.corrupt-*"))


# --- a damaged file ------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", DAMAGED_FILES.values(), ids=list(DAMAGED_FILES))
def test_a_damaged_file_is_moved_aside_and_a_new_one_works(tmp_path: Path, damage, caplog) -> None:
    path = tmp_path / "timers.db"
    damage(path)
    before = path.read_bytes()
    with caplog.at_level(logging.WARNING), TimerStore(path) as store:
        row = store.add("timer", "tea", T0 + 60, duration=60)
        assert store.pending() == [row]
        (recovery,) = store.take_recoveries()
    assert corrupt_copies(path) == [Path(recovery.moved_to)]
    assert Path(recovery.moved_to).read_bytes() == before  # kept, byte for byte
    warning = [r.getMessage() for r in caplog.records if "was damaged" in r.getMessage()]
    assert len(warning) == 1 and str(path) in warning[0] and recovery.moved_to in warning[0]
    with TimerStore(path) as again:  # the new file is a good one: nothing more is moved
        assert [r.label for r in again.pending()] == ["tea"]
        assert again.take_recoveries() == []  # claimed once already
    assert len(corrupt_copies(path)) == 1


def test_the_side_files_of_a_damaged_file_move_with_it(tmp_path: Path) -> None:
    path = tmp_path / "timers.db"
    DAMAGED_FILES["damaged pages"](path)
    holder = sqlite3.connect(path, isolation_level=None)  # another process still has it open,
    holder.execute("PRAGMA journal_mode=WAL")  # so its -wal and -shm stay on disk
    assert path.with_name("timers.db-wal").exists()
    with TimerStore(path) as store:
        (recovery,) = store.take_recoveries()
        kept = Path(recovery.moved_to)
        assert corrupt_copies(path) == [
            kept,
            kept.with_name(kept.name + "-shm"),
            kept.with_name(kept.name + "-wal"),
        ]
        assert store.pending() == []  # the old -wal was not replayed into the new file
        store.add("timer", "tea", T0 + 60, duration=60)
    holder.close()
    with TimerStore(path) as again:
        assert [r.label for r in again.pending()] == ["tea"]


async def test_the_daemon_says_once_that_its_timer_list_was_replaced(tmp_path: Path) -> None:
    path = tmp_path / "timers.db"
    DAMAGED_FILES["magic then garbage"](path)
    with TimerStore(path) as cli:  # a one-shot `iris ask` finds the damage first, and has no run()
        await TimerService(cli, lambda e: None, FakeClock(T0), tz_name="UTC").set_timer(60, "tea")
    h = Harness(tmp_path)  # then the daemon starts on the new file
    await h.start(idle=False)
    event = await asyncio.wait_for(h.events.get(), 2)
    assert event == TimerStoreRecovered(
        str(path), str(corrupt_copies(path)[0]), event.reason, timer_service.RECOVERED_MESSAGE
    )
    assert "not a database" in event.reason
    assert timer_service.RECOVERED_MESSAGE.startswith("My timer list was damaged, so I started a new one.")
    await h.clock.sleeping_until(T0 + 60)
    h.clock.advance(60)
    assert (await h.next_event()).label == "tea"  # set after the recovery: it works
    h.assert_no_event()
    with TimerStore(path) as other:  # a second daemon by mistake: no second announcement
        second = TimerService(other, h.bus.publish, h.clock, tz_name="UTC", resync_seconds=60)
        task = asyncio.create_task(second.run())
        await h.clock.sleeping_until(T0 + 60 + 60)  # it has read the store and gone to sleep
        h.assert_no_event()
        task.cancel()
    h.task.cancel()  # type: ignore[union-attr]


async def test_a_running_daemon_follows_a_file_another_process_replaced(tmp_path: Path) -> None:
    h = Harness(tmp_path, resync_seconds=60)
    path = h.store.path
    await h.service.set_timer(30, "old")  # in the daemon's file, which is about to be replaced
    await h.start(idle=False)
    await h.clock.sleeping_until(T0 + 30)
    h.store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the main file,
    DAMAGED_FILES["text file"](path)  # which is then overwritten in place (a bad restore, say)
    with TimerStore(path) as cli:  # `iris ask` finds it damaged and starts a new one
        cli.add("reminder", "stretch", T0 + 45, created_at=T0)
    h.clock.advance(30)
    assert isinstance(await asyncio.wait_for(h.events.get(), 2), TimerChanged)  # "old" started
    event = await asyncio.wait_for(h.events.get(), 2)  # the next cycle reopens the new file
    assert isinstance(event, TimerStoreRecovered)
    await h.clock.sleeping_until(T0 + 45)
    h.clock.advance(15)
    assert (await h.next_event()).label == "stretch"  # what the CLI set in the new file fires
    h.assert_no_event()  # "old" was in the replaced file
    h.task.cancel()  # type: ignore[union-attr]


def test_iris_tools_works_with_a_damaged_timers_db(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    db = tmp_path / "timers.db"
    DAMAGED_FILES["magic then garbage"](db)
    config = tmp_path / "config.toml"
    config.write_text(f'[tools]\ntimers_db = "{db}"\n')
    code = main(["--config", str(config), "tools", "call", "calculator", '{"expression": "6 * 7"}'])
    out = capsys.readouterr()
    assert code == 0, out
    assert json.loads(out.out) == {"ok": True, "result": "6 * 7 = 42"}
    assert len(corrupt_copies(db)) == 1


# --- bad rows ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_ROWS.values(), ids=list(BAD_ROWS))
async def test_a_bad_row_is_set_aside_and_the_others_fire(h: Harness, bad, caplog) -> None:
    good = await h.service.set_timer(60, "good")
    bad_id = insert_raw_row(h.store.path, T0 - 10, **bad)  # due already: it would fire first
    with caplog.at_level(logging.WARNING):
        await h.start(idle=False)
        await h.clock.sleeping_until(T0 + 60)  # read, fired nothing, planned the good one: alive
        assert h.store.pending() == [good] and h.store.list() == [good]
        listing = await ToolRegistry(make_timer_tools(h.service, "UTC")).call("list_timers", {})
        assert listing.ok and "hostile" not in listing.result
        await h.clock.sleeping_until(T0 + 60)
        h.clock.advance(60)
        assert (await h.next_event()).timer_id == good.id
        h.assert_no_event()
    said = [r.getMessage() for r in caplog.records if f"timer row {bad_id} " in r.getMessage()]
    assert len(said) == 1 and "timers_rejected" in said[0], said  # logged once, though read often
    ((kept_id, reason),) = h.store._conn.execute("SELECT id, reason FROM timers_rejected").fetchall()
    assert kept_id == bad_id and f"({reason})" in said[0]


async def test_a_bad_row_in_a_read_only_file_is_skipped_and_logged_once(h: Harness, caplog) -> None:
    good = await h.service.set_timer(60, "good")
    bad_id = insert_raw_row(h.store.path, T0 - 10, due_at="abc")
    h.store._conn.execute("PRAGMA query_only = ON")  # nothing can be moved (root ignores chmod)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert h.store.pending() == [good]
    said = [r.getMessage() for r in caplog.records if f"timer row {bad_id} " in r.getMessage()]
    assert len(said) == 1 and "skipping it" in said[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("timer", "x" * 501, T0 + 60), "label is 501 characters long"),
        (("timer", "tea", float("inf")), "due_at inf"),
        (("timer", "tea", -1e300), r"due_at -1e\+300"),
        (("alarm", "tea", T0 + 60), "kind 'alarm'"),
    ],
)
def test_the_store_refuses_to_write_what_it_would_refuse_to_read(tmp_path: Path, args, says) -> None:
    with TimerStore(tmp_path / "t.db") as store, pytest.raises(ValueError, match=says):
        store.add(*args)


async def test_the_tools_refuse_a_label_too_long_to_keep(h: Harness) -> None:
    tools = ToolRegistry(make_timer_tools(h.service, "UTC"))
    result = await tools.call("set_reminder", {"when": "in 5 minutes", "message": "call " * 200})
    assert not result.ok and "too long to keep" in result.result
    assert h.store.pending() == []


# --- run() outlives a failed cycle ---------------------------------------------------------------


class BrokenStore(TimerStore):
    """A store whose reads fail ``failures`` times with ``error``, recording ``refresh`` calls."""

    failures = 0
    error: Exception = RuntimeError("an unforeseen bug")
    refreshed: list[bool]

    def pending(self) -> list[TimerRow]:
        if self.failures:
            self.failures -= 1
            raise self.error
        return super().pending()

    def refresh(self, suspect: bool = False) -> bool:
        self.refreshed.append(suspect)
        return super().refresh(suspect)


def broken_service(
    tmp_path: Path, failures: int, error: Exception
) -> tuple[BrokenStore, TimerService, FakeClock]:
    clock, store = FakeClock(T0), BrokenStore(tmp_path / "t.db")
    store.failures, store.error, store.refreshed = failures, error, []
    return store, TimerService(store, EventBus().publish, clock, resync_seconds=None), clock


async def test_run_survives_any_error_and_backs_off(tmp_path: Path, caplog) -> None:
    store, service, clock = broken_service(tmp_path, 6, RuntimeError("an unforeseen bug"))
    events = asyncio.Queue[object]()
    service.publish = events.put_nowait
    store.add("timer", "tea", T0 - 10, duration=60, created_at=T0 - 70)
    with caplog.at_level(logging.INFO):
        task = asyncio.create_task(service.run())
        for pause in (RETRY_SECONDS, 10, 20, 40, 60, 60):  # doubling, then capped
            await clock.sleeping_until(clock.now() + pause)
            assert not task.done()
            clock.advance(pause)
        event = await asyncio.wait_for(events.get(), 2)
    assert isinstance(event, TimerFinished) and (event.label, event.missed) == ("tea", True)
    assert len([r for r in caplog.records if r.exc_info]) == 1  # the first failure in full
    assert sum("failed again" in r.getMessage() for r in caplog.records) == 5  # then one line each
    assert any("work again after 6 failed" in r.getMessage() for r in caplog.records)
    assert timer_service.MAX_RETRY_SECONDS == 60
    task.cancel()


async def test_a_damage_error_makes_the_next_cycle_check_the_file(tmp_path: Path) -> None:
    damage = sqlite3.DatabaseError("database disk image is malformed")
    damage.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # type: ignore[attr-defined]
    store, service, clock = broken_service(tmp_path, 1, damage)
    task = asyncio.create_task(service.run())
    await clock.sleeping_until(T0 + RETRY_SECONDS)
    clock.advance(RETRY_SECONDS)
    async with asyncio.timeout(2):
        while len(store.refreshed) < 2:
            await asyncio.sleep(0.01)
    assert store.refreshed == [False, True]  # the cycle after the damage checks the file again
    task.cancel()
