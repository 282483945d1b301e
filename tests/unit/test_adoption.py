"""The protocol's roles as Home Assistant speaks them: a satellite that listens is adopted by a
hub that connects to it (``wyoming.adoption`` on the satellite, ``wyoming.dialer`` on the hub)."""

from __future__ import annotations

import asyncio

import pytest
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.info import Describe, Info
from wyoming.satellite import RunSatellite

from iris_voice.config import Config
from iris_voice.wyoming.adoption import HubLink, HubListener
from iris_voice.wyoming.dialer import SatelliteDialer, satellite_name
from iris_voice.wyoming.trust import AUTH_TYPE
from tests.support.hub_helpers import EchoBackend, make_part
from tests.support.waiting import until
from tools.testbed.servers import free_port

TOKEN = "0123456789abcdef0123"


class Satellite:
    """A listening satellite named kitchen that records each hub link it is given."""

    def __init__(self, token: str = "") -> None:
        self.port = free_port()
        self.cfg = Config.model_validate(
            {"satellite": {"listen": f"tcp://127.0.0.1:{self.port}", "token": token}}
        )
        self.links: list[HubLink] = []
        self.listener = HubListener(self.cfg, "kitchen", self._adopted)

    async def _adopted(self, link: HubLink) -> None:
        self.links.append(link)
        while await link.read_event() is not None:  # until the hub (or a newer one) goes
            pass

    async def __aenter__(self) -> Satellite:
        self.task = asyncio.get_running_loop().create_task(self.listener.run())
        await asyncio.wait_for(self.listener.ready.wait(), 10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task


async def _ask(port: int, *events: Event, until: str = "") -> list[Event]:
    """Send ``events`` on a new connection; what came back until the satellite closed it or
    sent an event of type ``until`` (a generous deadline: only "never" fails)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for event in events:
        await async_write_event(event, writer)
    got: list[Event] = []
    async with asyncio.timeout(60):
        while (event := await async_read_event(reader)) is not None:
            got.append(event)
            if event.type == until:
                break
    writer.close()
    return got


async def test_a_listening_satellite_describes_itself_as_a_satellite():
    async with Satellite() as sat:
        (info,) = await _ask(sat.port, Describe().event(), until="info")
    described = Info.from_event(info).satellite
    assert described is not None and described.name == "kitchen" and described.has_vad
    assert satellite_name(Info.from_event(info), "fallback") == "kitchen"


async def test_with_a_token_only_a_hub_that_sends_it_adopts_the_satellite():
    async with Satellite(token=TOKEN) as sat:
        refused = await _ask(sat.port, RunSatellite().event())
        wrong = await _ask(sat.port, Event(AUTH_TYPE, {"token": "x" * 20}), RunSatellite().event())
        assert [e.data["code"] for e in refused + wrong] == ["unauthorized", "unauthorized"]
        assert sat.links == []
        right = await _ask(
            sat.port, Event(AUTH_TYPE, {"token": TOKEN}), RunSatellite().event(), until="iris-auth-ok"
        )
        assert [e.type for e in right] == ["iris-auth-ok"]
        await until(lambda: len(sat.links) == 1, "adopted with the token")


async def test_the_hub_adopts_the_satellite_and_comes_back_after_a_lost_link(tmp_path):
    part, timers, _bus = make_part(tmp_path, EchoBackend())
    async with Satellite(token=TOKEN) as sat:
        dialer = SatelliteDialer(f"tcp://127.0.0.1:{sat.port}", part, token=TOKEN, reconnect_max_s=1.0)
        task = asyncio.get_running_loop().create_task(dialer.run())
        try:
            await until(lambda: "kitchen" in part.connected, "the hub adopted the kitchen")
            assert dialer.name == "kitchen" and len(sat.links) == 1
            await sat.links[0].disconnect()  # the link is lost ...
            await until(lambda: len(sat.links) == 2 and "kitchen" in part.connected, "adopted again")
            assert dialer.links == 2
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    await part.aclose()
    timers.store.close()
