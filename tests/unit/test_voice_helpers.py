"""The judge of the voice tests reads clock times the way Whisper writes them."""

from __future__ import annotations

import pytest

from tests.support.voice_helpers import clock_hours, hours_near, share_heard


@pytest.mark.parametrize(
    ("said", "hours"),
    [
        ("it is 2:41 a.m. on monday, november 23, 2026 in tokyo.", {2}),
        ("it is 241 a.m. on monday, november 23, 2026 in tokyo.", {2}),
        ("it's 1241 p.m. in tokyo", {12}),
        ("it is 7 pm in tokyo", {7}),
        ("it is 10 o'clock", {10}),
        ("it is 11:05 in tokyo", {11}),
        ("it is 2 41 am", {2}),
        ("it is 6-0-2 p.m. on wednesday, november 25, 2026 in tokyo.", {6}),
        ("it is 6-02 pm", {6}),
        ("november 23, 2026 in tokyo", set()),
        ("23 times 47 is 1081", set()),
    ],
)
def test_clock_hours_reads_times_as_whisper_writes_them(said, hours):
    assert clock_hours(said) == hours


def test_share_heard_counts_the_reply_words_a_listener_heard():
    assert share_heard("It is 2:41 AM in Tokyo.", "it is 241 a.m. in tokyo") == pytest.approx(4 / 7)
    assert share_heard("23 times 47 is 1,081.", "23x47 is 1081") == 1.0


def test_hours_near_take_the_hour_before_and_after_on_both_clocks_and_no_other():
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    hours, now = hours_near("Asia/Tokyo")
    assert now.tzinfo is not None and now.utcoffset() == timedelta(hours=9)
    before = (now - timedelta(hours=1)).hour  # a reply written at 5:59 and checked at 6:00
    assert {now.hour, now.hour % 12 or 12, before, before % 12 or 12} <= hours
    far = (now + timedelta(hours=4)).hour  # a wrong zone (or a wrong clock) is not near
    assert far not in hours and (far % 12 or 12) not in hours
    utc = datetime.now(ZoneInfo("UTC")).hour  # nine hours off
    assert utc not in hours and (utc % 12 or 12) not in hours
