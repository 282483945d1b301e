"""Reminders across the 2026 daylight-saving changes in Berlin and New York, from what the
user hears to when the service fires, on a fake clock: "at 2:30" on the night the clocks
go back is the next 2:30 (20 minutes away, not 80), and a 2:30 the clocks skip is moved
to 3:30 and the confirmation says so."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from iris_voice.tools.builtin.timers import make_timer_tools
from iris_voice.tools.registry import ToolRegistry
from tests.support.timer_harness import Harness

BACK = "I'll remind you to take the pills at {} AM, before the clocks go back."
FORWARD = (
    "2:30 AM doesn't exist tonight because the clocks go forward, "
    "so I'll remind you to take the pills at 3:30 AM."
)
CASES = [
    # Berlin, October 25, 02:10 CEST: the first 2:30 is 20 minutes away
    ("Europe/Berlin", (2026, 10, 25, 0, 10), "at 2:30", 20, BACK.format("2:30")),
    # Berlin, March 29, 01:50 CET: 2:30 does not exist; 3:30 CEST is 40 minutes away
    ("Europe/Berlin", (2026, 3, 29, 0, 50), "at 2:30", 40, FORWARD),
    # New York, November 1, 01:10 EDT
    ("America/New_York", (2026, 11, 1, 5, 10), "at 1:30", 20, BACK.format("1:30")),
    # New York, March 8, 01:50 EST
    ("America/New_York", (2026, 3, 8, 6, 50), "at 2:30", 40, FORWARD),
]


@pytest.mark.parametrize(("zone", "now_utc", "when", "minutes", "said"), CASES)
async def test_a_reminder_across_a_clock_change_is_said_and_fires_right(
    tmp_path: Path, zone: str, now_utc: tuple[int, ...], when: str, minutes: int, said: str
) -> None:
    start = datetime(*now_utc, tzinfo=UTC).timestamp()
    h = Harness(tmp_path, start=start, tz_name=zone)
    tools = ToolRegistry(make_timer_tools(h.service, zone))
    result = await tools.call("set_reminder", {"when": when, "message": "take the pills"})
    assert (result.ok, result.result) == (True, said)
    (row,) = h.store.pending()
    assert row.due_at == start + minutes * 60
    listing = (await tools.call("list_timers", {})).result
    assert listing == f"No timers are running. You have 1 reminder: {said.split('remind you to ')[1]}"
    await h.start(idle=False)
    try:
        await h.clock.sleeping_until(row.due_at)
        h.clock.advance(minutes * 60 - 1)
        await asyncio.sleep(0.05)
        h.assert_no_event()
        h.clock.advance(1)
        event = await h.next_event()
        assert (event.timer_id, event.message) == (row.id, "Reminder: take the pills.")
    finally:
        h.task.cancel()  # type: ignore[union-attr]
        h.store.close()
