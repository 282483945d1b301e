"""A fair share of the hub's one event loop: each client at its own pace.

A client can pipeline events without waiting for answers: thousands of ``describe`` or
``ping`` in one write. Read from a full buffer, each is answered without the loop ever
switching to another client (one unauthenticated client held the token holder's request
for 6.8 s). So every connection yields the loop after each event, cheap events come from a
token bucket per connection (``Pace``: a burst, then a steady rate; beyond it the reader
waits, and TCP pushes back on the client), and wrong tokens cost their delay per peer
address (``GuessClock``), not per connection: 64 connections guessing at once from one
host get one answer a second between them, not 64.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable

CHEAP_BURST = 20
"""Cheap events (``describe``, ``ping``) a connection may send at once."""
CHEAP_PER_S = 10.0
"""…and then per second."""
GUESS_HOSTS = 1024
"""Peer addresses whose guessing pace is remembered (the oldest is forgotten first)."""


class Pace:
    """A token bucket: ``take()`` returns at once while tokens last, else waits for one."""

    def __init__(
        self,
        burst: int = CHEAP_BURST,
        per_s: float = CHEAP_PER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst, self.per_s, self._clock = burst, per_s, clock
        self._tokens = float(burst)
        self._at = clock()
        self.waited_s = 0.0
        """Seconds this connection was held back in all."""

    def wait_s(self) -> float:
        """Take a token; how long to wait before acting on it (0: at once)."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.per_s)
        self._at = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.per_s

    async def take(self) -> None:
        """Wait for a token (the connection's reader waits; other clients go on)."""
        if (wait := self.wait_s()) > 0:
            self.waited_s += wait
            await asyncio.sleep(wait)


class GuessClock:
    """When each peer address may hear the answer to its next wrong token."""

    def __init__(self, delay_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.delay_s, self._clock = delay_s, clock
        self._next: OrderedDict[str, float] = OrderedDict()

    def wait_s(self, host: str) -> float:
        """A wrong token from ``host``: seconds until it is answered (at least ``delay_s``,
        after every guess from that address before it)."""
        now = self._clock()
        at = max(now, self._next.pop(host, now)) + self.delay_s
        self._next[host] = at
        while len(self._next) > GUESS_HOSTS:
            self._next.popitem(last=False)
        return at - now
