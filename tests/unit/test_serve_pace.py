"""A fair share of the loop: a client that pipelines cheap events is paced, and the others
are answered meanwhile (``wyoming.pace``)."""

from __future__ import annotations

import asyncio

from wyoming.event import async_read_event

from iris_voice.wyoming.pace import CHEAP_BURST, GuessClock, Pace
from tests.unit.test_serve import serving
from tests.unit.test_serve_slots import answered, raw

FLOOD = 2000


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_is_free_and_then_the_rate_holds():
    clock = Clock()
    pace = Pace(burst=3, per_s=10.0, clock=clock)
    assert [pace.wait_s() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert pace.wait_s() == 0.1  # the fourth waits for a token
    assert round(pace.wait_s(), 6) == 0.2  # and the fifth behind it
    clock.now = 10.0  # a quiet while refills the bucket, up to the burst
    assert [pace.wait_s() for _ in range(3)] == [0.0, 0.0, 0.0] and pace.wait_s() > 0


def test_wrong_tokens_wait_their_turn_per_address():
    clock = Clock()
    guesses = GuessClock(1.0, clock=clock)
    assert [guesses.wait_s("10.0.0.5") for _ in range(3)] == [1.0, 2.0, 3.0]
    assert guesses.wait_s("10.0.0.9") == 1.0  # another address: its own turn
    clock.now = 10.0
    assert guesses.wait_s("10.0.0.5") == 1.0  # long after: one delay again


async def test_a_pipelined_flood_is_paced_and_the_others_are_served(tmp_path):
    async with serving(tmp_path) as (_svc, port, _app):
        reader, writer = await raw(port)
        writer.write(b'{"type": "describe"}\n' * FLOOD)  # one write, nothing awaited
        await writer.drain()
        served = 0

        async def count() -> None:
            nonlocal served
            while (event := await async_read_event(reader)) is not None and event.type == "info":
                served += 1

        counting = asyncio.create_task(count())
        try:
            assert await answered(port) == "handled"  # a good client meanwhile
            # the flood is answered at its pace: the burst and a few a second, not all at once
            assert served < FLOOD // 4, served
            while served < CHEAP_BURST:  # (it is answered, though)
                await asyncio.sleep(0.05)
        finally:
            counting.cancel()
            writer.close()
