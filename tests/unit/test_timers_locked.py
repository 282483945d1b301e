"""A timers database another program holds locked (``BEGIN EXCLUSIVE``): ``iris timers``
and the timer service say so in one log line, tell the caller, and lose nothing.

Real SQLite files: the daemon's store and a second connection that holds the lock.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time

import pytest

from iris_voice.app.commands import timers_command
from iris_voice.app.control import ControlServer, request
from iris_voice.events import TimerFinished
from iris_voice.timers import store as store_module
from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerStore


@pytest.fixture
def db(monkeypatch, tmp_path):
    """The timers database's path; a locked statement gives up after 0.1 s, not 5."""
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 100)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return tmp_path / "state" / "timers.db"


def _lock(path) -> sqlite3.Connection:
    """A second connection holding the database's write lock until it rolls back."""
    other = sqlite3.connect(str(path), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    return other


def _problems(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("iris_voice") and r.levelno >= logging.WARNING]


async def test_iris_timers_cancel_on_a_locked_database_is_a_clear_error_and_one_log_line(db, caplog):
    caplog.set_level(logging.INFO, "iris_voice")
    store = TimerStore(db)
    service = TimerService(store, lambda event: None)
    row = await service.set_timer(600, "pasta")
    server = ControlServer({"timers": lambda req: timers_command(service, req)})
    await server.start()
    ask = lambda **fields: asyncio.to_thread(request, "timers", 60.0, None, **fields)  # noqa: E731
    try:
        other = _lock(db)
        try:
            answer = await ask(action="cancel", which="pasta")
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert answer["ok"] is False and answer["code"] == "daemon-error", answer
        assert f"the timers database {db} is locked by another program" in answer["error"], answer
        assert "nothing was changed" in answer["error"]
        problems = _problems(caplog)
        assert len(problems) == 1 and problems[0].exc_info is None, [r.getMessage() for r in problems]
        assert str(db) in problems[0].getMessage() and "database is locked" in problems[0].getMessage()
        # nothing lost: the timer still runs, and the same command works once the lock is gone
        listed = await ask()
        assert [t["id"] for t in listed["timers"]] == [row.id], listed
        assert await ask(action="cancel", which="pasta") == {"ok": True, "cancelled": [row.id]}
    finally:
        await server.close()
        store.close()


async def test_a_due_timer_waits_out_a_locked_database_then_fires_once(db, caplog):
    caplog.set_level(logging.INFO, "iris_voice")
    store = TimerStore(db)
    fired: list[TimerFinished] = []
    rang = asyncio.Event()

    def publish(event):
        if isinstance(event, TimerFinished):
            fired.append(event)
            rang.set()

    service = TimerService(store, publish)
    row = await service.set_timer(0.2, "tea")
    other = _lock(db)
    runner = asyncio.create_task(service.run())
    try:
        deadline = time.monotonic() + 30
        while not any("is locked by another program" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline and not runner.done(), "no lock reported"
            await asyncio.sleep(0.01)
        assert store.get(row.id).state == "pending"  # not claimed, so not lost
        other.execute("ROLLBACK")
        service.poke()  # retry now rather than after the back-off
        await asyncio.wait_for(rang.wait(), 30)
        assert [e.timer_id for e in fired] == [row.id]
        assert store.get(row.id).state == "fired"
    finally:
        runner.cancel()
        other.close()
        store.close()
    problems = _problems(caplog)
    assert problems and all(r.exc_info is None for r in problems), [r.getMessage() for r in problems]
    assert f"the timers database {db} is locked by another program (database is locked)" in (
        problems[0].getMessage()
    )
