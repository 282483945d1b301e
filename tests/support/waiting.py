"""Waiting for what a test needs to happen, not for a guess at how long it takes.

A busy machine makes everything slower, never different: a test waits for the event
itself (a state, a line, audio in a recording) with a deadline far beyond any normal run,
and fails only when the event never comes. How soon things happen is measured by the
benchmarks in tools/bench, where load shows up as a figure instead of a failure.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from tests.support.audiosignals import loud_seconds

T = TypeVar("T")

PATIENCE_S = 120.0
"""The default deadline: minutes beyond a normal run, so only "never" fails."""


def wait_line(path: Path, wanted: str, proc: subprocess.Popen, timeout: float = PATIENCE_S) -> str:
    """The first line of the log ``path`` holding ``wanted``; AssertionError with the log's
    tail when ``proc`` exits first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        for line in text.splitlines():
            if wanted in line:
                return line
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args} exited {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.1)
    raise AssertionError(f"no {wanted!r} in {path.name} within {timeout:.0f} s:\n{text[-3000:]}")


def wait_until(condition: Callable[[], T], what: str, timeout: float = PATIENCE_S, every: float = 0.1) -> T:
    """Poll ``condition()`` until it returns something true, and return that; AssertionError
    naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        time.sleep(every)
    return value


async def until(condition: Callable[[], T], what: str, timeout: float = PATIENCE_S, every: float = 0.02) -> T:
    """``wait_until`` for a coroutine: polls without blocking the event loop."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        await asyncio.sleep(every)
    return value


def quiet_tail(samples: np.ndarray, seconds: float, rate: int = 16000) -> bool:
    """The last ``seconds`` of a recording are there and silent."""
    n = int(seconds * rate)
    return len(samples) >= n and loud_seconds(samples[-n:], rate) == 0.0


def wait_heard(rec, seconds: float, what: str, rate: int = 16000, timeout: float = PATIENCE_S) -> None:
    """Until a speaker recording holds ``seconds`` of loud audio."""
    wait_until(lambda: loud_seconds(rec.samples(), rate) >= seconds, what, timeout)


def recorded_quiet(rec, since: int, seconds: float, rate: int = 16000) -> bool:
    """A recording holds ``seconds`` more than its first ``since`` samples, and its last
    ``seconds`` are silent: what was played before it reached sample ``since`` is in it."""
    samples = rec.samples()
    return len(samples) >= since + int(seconds * rate) and quiet_tail(samples, seconds, rate)


def wait_quiet(rec, seconds: float = 1.0, rate: int = 16000, timeout: float = PATIENCE_S) -> np.ndarray:
    """Until a speaker recording has recorded ``seconds`` more and ends in that much silence:
    everything played before the call has reached it. Stops it; the samples."""
    since = len(rec.samples())
    wait_until(
        lambda: recorded_quiet(rec, since, seconds, rate), f"{seconds} s of silence from the speaker", timeout
    )
    return rec.stop()
