"""Timers survive IRIS: a fresh process and a SIGKILL lose none, timers due while IRIS was
down fire as missed when it comes back, and the real clock fires a short timer on time."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from iris_voice.events import EventBus, TimerChanged, TimerFinished
from iris_voice.timers.service import SystemClock, TimerService
from iris_voice.timers.store import TimerStore
from tests.support.fakes_clock import FakeClock

REPO = Path(__file__).resolve().parents[2]


CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from iris_voice.tools.registry import ToolRegistry
    from iris_voice.timers.service import TimerService
    from iris_voice.timers.store import TimerStore
    from iris_voice.tools.builtin.timers import make_timer_tools

    async def main():
        service = TimerService(TimerStore(), lambda event: None)  # default path: $XDG_STATE_HOME
        tools = ToolRegistry(make_timer_tools(service, "UTC"))
        for args in ({"duration": "1 second", "label": "pasta"}, {"duration": "1 hour", "label": "roast"}):
            result = await tools.call("set_timer", args)
            print(result.result, flush=True)
        if sys.argv[1] == "kill":
            await service.set_timer(2, "killed")
            os.kill(os.getpid(), signal.SIGKILL)  # no clean shutdown, no close()

    asyncio.run(main())
    """
)


def run_child(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", CHILD, mode], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )


async def test_timers_survive_a_fresh_process_and_sigkill(tmp_path: Path) -> None:
    clean = run_child(tmp_path, "exit")
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout.splitlines() == ["Pasta timer set for 1 second.", "Roast timer set for 1 hour."]
    killed = run_child(tmp_path, "kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    store = TimerStore(tmp_path / "iris" / "timers.db")
    rows = store.pending()
    assert [r.label for r in rows] == ["pasta", "pasta", "killed", "roast", "roast"]
    roast = rows[-1]
    clock = FakeClock(float(int(time.time()) + 120))  # IRIS comes back two minutes later
    bus = EventBus()
    events = bus.queue()
    service = TimerService(store, bus.publish, clock, tz_name="UTC", resync_seconds=None)
    task = asyncio.create_task(service.run())
    try:
        missed = [await asyncio.wait_for(events.get(), 2) for _ in range(3)]
        assert [(e.label, e.missed) for e in missed] == [("pasta", True), ("pasta", True), ("killed", True)]
        assert all(e.message.startswith("While I was off, your ") for e in missed)  # type: ignore[attr-defined]
        await clock.sleeping_until(rows[-2].due_at)  # planned for the first roast's due time
        assert not events.qsize()
        clock.advance_to(roast.due_at + 0.01)
        on_time = [await asyncio.wait_for(events.get(), 2) for _ in range(2)]
        assert [(e.label, e.missed) for e in on_time] == [("roast", False), ("roast", False)]
        assert store.pending() == []
    finally:
        task.cancel()
        store.close()


async def test_real_clock_fires_a_short_timer_on_time(tmp_path: Path) -> None:
    bus = EventBus()
    events = bus.queue()
    service = TimerService(TimerStore(tmp_path / "t.db"), bus.publish, SystemClock())
    task = asyncio.create_task(service.run())
    try:
        start = time.monotonic()
        row = await service.set_timer(0.3, "quick")
        started = await asyncio.wait_for(events.get(), 2)  # satellites are told it started
        assert isinstance(started, TimerChanged) and started.change == "started" and started.label == "quick"
        event = await asyncio.wait_for(events.get(), 2)
        elapsed = time.monotonic() - start
        assert isinstance(event, TimerFinished) and event.timer_id == row.id
        assert time.time() >= row.due_at
        assert 0.3 <= elapsed <= 0.8, elapsed
    finally:
        task.cancel()
