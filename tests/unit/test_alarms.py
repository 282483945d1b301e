"""Finished timers: chime, announcement, repeats until dismissed, missed ones said once."""

from __future__ import annotations

import asyncio

import numpy as np

from iris_voice.config import AudioConfig
from iris_voice.events import TimerFinished, TimerStoreRecovered
from iris_voice.voice.alarms import AlarmAnnouncer


def _event(missed: bool = False) -> TimerFinished:
    return TimerFinished(1, "timer", "pasta", 0.0, missed, "Your pasta timer is done.")


class Recorder:
    def __init__(self) -> None:
        self.said: list[tuple[str, bool]] = []
        self.notes: list[tuple[str, str]] = []

    async def announce(self, text, clip):
        self.said.append((text, clip is not None))
        await asyncio.sleep(0.01)

    async def notify(self, title, body):
        self.notes.append((title, body))
        return True


def _announcer(rec: Recorder, **cfg) -> AlarmAnnouncer:
    audio = AudioConfig.model_construct(**{**AudioConfig().model_dump(), "alarm_timeout_s": 10.0, **cfg})
    return AlarmAnnouncer(
        audio, rec.announce, chime=lambda: (np.zeros(10, np.int16), 16000), notify=rec.notify
    )


async def test_repeats_until_dismissed():
    rec = Recorder()
    alarms = _announcer(rec, alarm_repeat_s=0.05)
    task = asyncio.create_task(alarms.run())
    alarms.on_event(_event())
    while len(rec.said) < 3:
        await asyncio.sleep(0.01)
    assert alarms.ringing is not None
    assert alarms.dismiss()
    await asyncio.sleep(0.1)
    count = len(rec.said)
    await asyncio.sleep(0.2)
    assert len(rec.said) == count, "a dismissed alarm must not ring again"
    assert alarms.ringing is None
    assert rec.said[0] == ("Your pasta timer is done.", True)
    assert rec.notes == [("IRIS timer", "Your pasta timer is done.")]
    task.cancel()


async def test_gives_up_after_the_timeout():
    rec = Recorder()
    alarms = _announcer(rec, alarm_timeout_s=0.0)
    task = asyncio.create_task(alarms.run())
    alarms.on_event(_event())
    await asyncio.sleep(0.2)
    assert len(rec.said) == 1 and alarms.ringing is None
    task.cancel()


async def test_missed_timers_are_said_once_without_chime_when_disabled():
    rec = Recorder()
    alarms = _announcer(rec, chime=False, notifications=False)
    task = asyncio.create_task(alarms.run())
    alarms.on_event(_event(missed=True))
    alarms.on_event(TimerFinished(2, "timer", "tea", 0.0, True, "While I was off, your tea timer went off."))
    await asyncio.sleep(0.2)
    assert rec.said == [
        ("Your pasta timer is done.", False),
        ("While I was off, your tea timer went off.", False),
    ]
    assert rec.notes == []
    task.cancel()


async def test_a_replaced_timer_list_is_said_once_and_the_notification_names_the_old_file():
    rec = Recorder()
    alarms = _announcer(rec, alarm_repeat_s=0.05)
    task = asyncio.create_task(alarms.run())
    said = "My timer list was damaged, so I started a new one."
    alarms.on_event(
        TimerStoreRecovered("/s/timers.db", "/s/timers.db.corrupt-1", "file is not a database", said)
    )
    await asyncio.sleep(0.2)  # four repeat intervals: an alarm would have rung again by now
    assert rec.said == [(said, False)]  # once, without the alarm chime
    assert rec.notes == [("IRIS timers", f"{said} Old list: /s/timers.db.corrupt-1")]
    task.cancel()


async def test_the_listener_is_told_while_an_alarm_rings():
    """``on_ringing`` (the listener's ``alarm_ringing``) is True from the first ring until
    the alarm is dismissed: "stop" needs no wake word meanwhile."""
    rec, told = Recorder(), []
    audio = AudioConfig.model_construct(**{**AudioConfig().model_dump(), "alarm_repeat_s": 0.05})
    alarms = AlarmAnnouncer(audio, rec.announce, notify=rec.notify, on_ringing=told.append)
    task = asyncio.create_task(alarms.run())
    alarms.on_event(_event())
    while len(rec.said) < 2:
        await asyncio.sleep(0.01)
    assert told == [True]
    alarms.dismiss()
    await asyncio.sleep(0.1)
    assert told == [True, False] and alarms.ringing is None
    task.cancel()
