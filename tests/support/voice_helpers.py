"""Helpers of the end-to-end voice tests: play a question, listen to the answer."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np

from tests.support.spoken import clock_times
from tests.support.waiting import PATIENCE_S, wait_quiet


def heard(judge, samples: np.ndarray) -> str:
    """What a listener hears in a recording (16 kHz int16)."""
    return asyncio.run(judge.transcribe(samples)).lower()


def heard_end(judge, samples: np.ndarray, seconds: float = 2.5, rate: int = 16000) -> str:
    """What a listener hears in the last ``seconds`` of sound of a recording: Whisper may
    stop before the end of a long sentence (it heard "…November 30, 2020." where IRIS said
    "…November 30, 2026 in Tokyo."); a listener would not."""
    spans = loud_spans(samples, rate)
    if not spans:
        return ""
    end = spans[-1][1]
    return heard(judge, samples[int(max(0.0, end - seconds) * rate) : int((end + 0.2) * rate)])


def heard_apart(judge, samples: np.ndarray, gap_s: float = 0.6, rate: int = 16000) -> list[str]:
    """What a listener hears in each stretch of sound between silences of ``gap_s`` or more
    (Whisper may stop after the first of two sentences a long pause apart)."""
    w = int(0.02 * rate)
    n = len(samples) // w
    loud = np.abs(samples[: n * w].astype(np.int32)).reshape(n, w).max(axis=1) > 0.05 * 32767
    parts, start, quiet = [], None, 0
    for i, is_loud in enumerate([*loud, *[False] * (int(gap_s / 0.02) + 1)]):
        if is_loud:
            start, quiet = (i if start is None else start), 0
        elif start is not None:
            quiet += 1
            if quiet * 0.02 >= gap_s:
                parts.append(samples[max(0, (start - 10) * w) : (i - quiet + 10) * w])
                start, quiet = None, 0
    return [heard(judge, part) for part in parts]


def words(text: str) -> list[str]:
    """Lower-case words and numbers ("1,081" → "1081"; Whisper's "23x47" → "23 times 47")."""
    text = re.sub(r"(\d)\s*[x×*]\s*(\d)", r"\1 times \2", text.lower().replace(",", ""))
    return re.findall(r"[a-z0-9']+", text)


def share_heard(reply: str, said: str) -> float:
    """Share of the reply's words a listener heard."""
    wanted = words(reply)
    got = set(words(said))
    return sum(w in got for w in wanted) / max(1, len(wanted))


def clock_hours(said: str) -> set[int]:
    """Hours of the clock times a listener wrote down, however Whisper spelled them:
    "2:41 a.m.", "2 41 am", "241 a.m." (the colon dropped), "2-4-1 a.m." (read digit by
    digit) and "two forty-one a.m." all give 2; "12 p.m." gives 12. A bare number is no time
    (tests/support/spoken.py reads them)."""
    return {hour for hour, _ in clock_times(said)}


def hours_near(tz: str) -> tuple[set[int], datetime]:
    """The hours a clock in ``tz`` may rightly say of a turn that ended just now, on the
    24-hour and the 12-hour clock, and the time now: this hour, the one before (the reply
    was written at 5:59 and checked at 6:00) and the one after (a model rounding 5:58 up
    to "about six"). Three hours of twelve: a wrong zone still fails."""
    now = datetime.now(ZoneInfo(tz))
    near = [(now + timedelta(hours=d)).hour for d in (-1, 0, 1)]
    return {h for hour in near for h in (hour, hour % 12 or 12)}, now


def loud_spans(samples: np.ndarray, rate: int = 16000, block: float = 0.02) -> list[tuple[float, float]]:
    """(start, end) seconds of the stretches that are not silent."""
    n = int(rate * block)
    blocks = samples[: len(samples) // n * n].reshape(-1, n).astype(np.float32)
    loud = np.sqrt((blocks**2).mean(axis=1)) > 300
    spans, start = [], None
    for i, on in enumerate(loud):
        if on and start is None:
            start = i
        if not on and start is not None:
            spans.append((start * block, i * block))
            start = None
    if start is not None:
        spans.append((start * block, len(loud) * block))
    return spans


def ask(bed, iris, name: str, quiet: float = 1.0, timeout: float = PATIENCE_S) -> tuple[dict, np.ndarray]:
    """Play a spoken fixture into the microphone; the turn's trace (within ``timeout`` s) and
    what the speaker played (recorded until ``quiet`` seconds of silence followed the turn)."""
    from tools.testbed.fixtures import fixture

    count = iris.status()["turn_count"]
    rec = bed.record_speaker()
    bed.play_into_mic(fixture(name))
    turn = iris.wait_turn(after=count, timeout=timeout)
    return turn, wait_quiet(rec, quiet)
