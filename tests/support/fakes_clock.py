"""A fake ``Clock`` (see ``iris_voice.timers.service.Clock``) whose time moves only when told."""

from __future__ import annotations

import asyncio


class FakeClock:
    """Wall time that stands still until ``advance``; ``sleep`` waits for that time to come.

    Tests see what the code under test waits for through ``deadlines`` and
    ``sleeping_until``, so "fires at 480 s and not before" is checked without real waiting.
    Use whole-second times: float sums then stay exact and a deadline equals the due time.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = float(start)
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []
        self._registered = asyncio.Event()

    def now(self) -> float:
        """The fake current Unix timestamp."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Return once the clock has been advanced ``seconds`` past now."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        entry = (self._now + seconds, asyncio.get_running_loop().create_future())
        self._sleepers.append(entry)
        self._registered.set()
        try:
            await entry[1]
        finally:
            self._sleepers.remove(entry)

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has come."""
        self.advance_to(self._now + seconds)

    def advance_to(self, timestamp: float) -> None:
        """Set the time (never backwards) and wake every sleeper whose deadline has come."""
        if timestamp < self._now:
            raise ValueError("a FakeClock does not go backwards")
        self._now = timestamp
        for deadline, fut in self._sleepers:
            if deadline <= self._now and not fut.done():
                fut.set_result(None)

    def deadlines(self) -> list[float]:
        """Deadlines of sleeps still waiting (not woken, not cancelled), soonest first."""
        return sorted(d for d, fut in self._sleepers if not fut.done())

    async def sleeping_until(self, deadline: float, count: int = 1, timeout: float = 2.0) -> None:
        """Wait until ``count`` sleeps wait for ``deadline``; AssertionError after ``timeout`` s."""

        try:
            async with asyncio.timeout(timeout):  # in this task: no hop before the caller resumes
                while sum(abs(d - deadline) < 1e-3 for d in self.deadlines()) < count:
                    self._registered.clear()
                    await self._registered.wait()
        except TimeoutError:
            found = self.deadlines()
            raise AssertionError(f"not {count} asleep until {deadline}; sleeping until {found}") from None
