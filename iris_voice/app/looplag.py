"""How late the event loop wakes up: the daemon's own measure of "something blocked the loop".

A task sleeps ``interval_s`` (50 ms) again and again and records how much later than
asked it woke. A coroutine that blocks (a model run on the loop, a slow ``open()``)
shows up as one late wake-up as long as the block. Kept with bounded memory:

- since start: the maximum, and a histogram of logarithmic buckets 10% wide (the p99
  is the upper edge of its bucket, so it errs high by less than 10%);
- the last minute: the last ``window_s / interval_s`` wake-ups (1,200 by default,
  with their times) in two fixed arrays, so its p99 and maximum are exact.

It costs 20 wake-ups a second and 20 KB. On the 2-core test machine, where one asyncio
timer wake-up costs ~170 µs of CPU, that is 0.4% of one core (recording one costs ~1 µs);
the idle daemon went from 5.3-5.7% to 6.2% of a core with it. ``iris status`` reports it
(``loop_lag_ms``).
"""

from __future__ import annotations

import asyncio
import math
import time
from array import array
from typing import Any

INTERVAL_S = 0.05
"""How often the monitor wakes up."""
WINDOW_S = 60.0
"""The recent window reported beside the figures since start."""
_SMALLEST_MS = 0.1  # the first bucket holds every lag up to this
_RATIO = 1.1  # each bucket is 10% wider than the one before
_BUCKETS = 150  # up to 0.1 ms * 1.1**149: about 20 minutes


def _bucket(lag_ms: float) -> int:
    if lag_ms <= _SMALLEST_MS:
        return 0
    return min(_BUCKETS - 1, 1 + int(math.log(lag_ms / _SMALLEST_MS, _RATIO)))


def _upper_edge_ms(bucket: int) -> float:
    return _SMALLEST_MS * _RATIO**bucket


class LoopLagMonitor:
    """Measures the event loop's lateness; ``run()`` is the task, ``snapshot()`` the figures."""

    def __init__(self, interval_s: float = INTERVAL_S, window_s: float = WINDOW_S) -> None:
        self.interval_s = interval_s
        self.window_s = window_s
        self.samples = 0
        """Wake-ups recorded since start."""
        self.max_ms = 0.0
        """The latest wake-up since start, ms."""
        self._histogram = [0] * _BUCKETS
        size = math.ceil(window_s / interval_s) + 1  # a full window even when never late
        self._times = array("d", [-math.inf]) * size  # when each recent wake-up came
        self._lags = array("d", [0.0]) * size
        self._next = 0  # where the next recent wake-up goes

    async def run(self) -> None:
        """Sleep and measure until cancelled."""
        while True:  # time.monotonic() is the event loop's own clock
            due = time.monotonic() + self.interval_s
            await asyncio.sleep(self.interval_s)
            now = time.monotonic()
            self.record((now - due) * 1000, now)

    def record(self, lag_ms: float, now: float) -> None:
        """Count one wake-up ``lag_ms`` late, at ``now`` (``time.monotonic()`` seconds)."""
        lag_ms = max(0.0, lag_ms)  # asyncio may run a timer up to its clock resolution early
        self.samples += 1
        self.max_ms = max(self.max_ms, lag_ms)
        self._histogram[_bucket(lag_ms)] += 1
        self._times[self._next] = now
        self._lags[self._next] = lag_ms
        self._next = (self._next + 1) % len(self._times)

    def p99_ms(self) -> float | None:
        """The 99th percentile since start (the upper edge of its bucket); None before any."""
        if not self.samples:
            return None
        rank = math.ceil(0.99 * self.samples)
        seen = 0
        for bucket, count in enumerate(self._histogram):
            seen += count
            if seen >= rank:
                return min(_upper_edge_ms(bucket), self.max_ms)
        return self.max_ms  # not reached: the counts add up to samples

    def recent(self, now: float, window_s: float | None = None) -> tuple[float | None, float | None, int]:
        """(p99, max, count) of the wake-ups in the last ``window_s`` (default: the whole
        window kept) before ``now``."""
        since = now - min(self.window_s, window_s if window_s is not None else self.window_s)
        lags = sorted(lag for t, lag in zip(self._times, self._lags, strict=True) if t >= since)
        if not lags:
            return None, None, 0
        return lags[math.ceil(0.99 * len(lags)) - 1], lags[-1], len(lags)

    def snapshot(self, now: float | None = None, window_s: float | None = None) -> dict[str, Any]:
        """The figures for ``iris status``: milliseconds, rounded to 0.1; with ``window_s``
        also those of the last ``window_s`` seconds (a benchmark's view of one input)."""
        now = time.monotonic() if now is None else now
        p99, worst, count = self.recent(now)
        snap = {
            "interval_ms": round(self.interval_s * 1000),
            "samples": self.samples,
            "p99": _round(self.p99_ms()),
            "max": round(self.max_ms, 1),
            "last_minute": {"p99": _round(p99), "max": _round(worst), "samples": count},
        }
        if window_s is not None:
            p99, worst, count = self.recent(now, window_s)
            seconds = min(window_s, self.window_s)
            snap["window"] = {"seconds": seconds, "p99": _round(p99), "max": _round(worst), "samples": count}
        return snap


def _round(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 1)
