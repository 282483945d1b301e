"""One bad row never takes IRIS down: it is set aside and the others fire, and
``TimerService.run`` outlives any failed cycle. The hostile inputs are in
tests/support/hostile_timers.py."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from iris_voice.events import EventBus, TimerFinished
from iris_voice.timers import service as timer_service
from iris_voice.timers.service import RETRY_SECONDS, TimerService
from iris_voice.timers.store import TimerRow, TimerStore
from iris_voice.tools.builtin.timers import make_timer_tools
from iris_voice.tools.registry import ToolRegistry
from tests.support.fakes_clock import FakeClock
from tests.support.hostile_timers import BAD_ROWS, insert_raw_row
from tests.support.timer_harness import T0, Harness

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
    """A store whose reads fail ``failures`` times with ``error``."""

    failures = 0
    error: Exception = RuntimeError("an unforeseen bug")

    def pending(self) -> list[TimerRow]:
        if self.failures:
            self.failures -= 1
            raise self.error
        return super().pending()


def broken_service(
    tmp_path: Path, failures: int, error: Exception
) -> tuple[BrokenStore, TimerService, FakeClock]:
    clock, store = FakeClock(T0), BrokenStore(tmp_path / "t.db")
    store.failures, store.error = failures, error
    return store, TimerService(store, EventBus().publish, clock, resync_seconds=None), clock


async def test_run_survives_any_error_and_backs_off(tmp_path: Path, caplog) -> None:
    store, service, clock = broken_service(tmp_path, 6, RuntimeError("an unforeseen bug"))
    events = asyncio.Queue[object]()
    service.publish = events.put_nowait
    store.add("timer", "tea", T0 - 10, duration=60, created_at=T0 - 70)
    with caplog.at_level(logging.INFO):
        task = asyncio.create_task(service.run())
        for pause in (
            RETRY_SECONDS,
            10,
            20,
            40,
            timer_service.MAX_RETRY_SECONDS,
            timer_service.MAX_RETRY_SECONDS,
        ):  # doubling, capped
            await clock.sleeping_until(clock.now() + pause)
            assert not task.done()
            clock.advance(pause)
        event = await asyncio.wait_for(events.get(), 2)
    assert isinstance(event, TimerFinished) and (event.label, event.missed) == ("tea", True)
    assert len([r for r in caplog.records if r.exc_info]) == 1  # the first failure in full
    assert sum("failed again" in r.getMessage() for r in caplog.records) == 5  # then one line each
    assert any("work again after 6 failed" in r.getMessage() for r in caplog.records)
    task.cancel()
