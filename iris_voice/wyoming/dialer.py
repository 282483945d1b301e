"""The hub connects to its satellites, as Home Assistant does (``satellite.connect``).

In Wyoming as Home Assistant speaks it the satellite is the server: it listens (and
advertises ``_wyoming._tcp`` with a ``satellite`` in its ``info``), and its hub connects,
asks ``describe``, then sends ``run-satellite``. From then on the satellite starts its
pipelines (``run-pipeline``) and sends its microphone; the hub answers on the same link.
``SatelliteDialer`` is that hub side for one address: the link's events go to the
``SatellitePart`` exactly as those of a satellite that connected to the hub, so a stock
``wyoming-satellite`` and IRIS's own are served by the same code. A lost link is tried
again with a growing pause (1 s doubling to ``satellite.reconnect_max_s``), with one log
line when it goes and one when it is back; the hub pings the satellite every
``PING_EVERY_S`` and drops a link silent for ``SILENT_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from urllib.parse import urlparse

from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.satellite import RunSatellite

from iris_voice.config import SatelliteConfig
from iris_voice.wyoming.hub import SatellitePart
from iris_voice.wyoming.part import Connection
from iris_voice.wyoming.trust import AUTH_TYPE
from iris_voice.wyoming.wire import MAX_LINE, EventLink, ProtocolViolation, printable

log = logging.getLogger(__name__)

PING_EVERY_S = 10.0
SILENT_S = 35.0
"""A satellite that sent nothing (no pong either) for this long is gone."""


class SatelliteGone(ConnectionError):
    """The link to a satellite ended (or never began)."""


class SatelliteDialer:
    """Keeps the hub connected to the satellite at ``uri``; ``await run()`` until cancelled."""

    def __init__(
        self,
        uri: str,
        part: SatellitePart,
        *,
        connect_timeout_s: float = 5.0,
        reconnect_max_s: float = 30.0,
        token: str = "",
    ) -> None:
        parsed = urlparse(uri)
        if parsed.scheme != "tcp" or not parsed.hostname or not parsed.port:
            raise ValueError(f"a satellite's address must look like tcp://HOST:PORT, not {uri!r}")
        self.uri = uri
        self.host, self.port = parsed.hostname, parsed.port
        self.part = part
        self.connect_timeout_s = connect_timeout_s
        self.reconnect_max_s = reconnect_max_s
        self.token = token
        """Sent as ``iris-auth`` first, to an IRIS satellite that asks for one (``satellite.token``)."""
        self.name: str | None = None
        """The satellite's name (from its ``info``), once known."""
        self.links = 0
        """Links made since start."""
        self.connected = asyncio.Event()

    async def run(self) -> None:
        """Connect, serve the satellite, and connect again whenever the link is lost."""
        pause, down_since = 1.0, None
        while True:
            try:
                await self._link()
                pause = 1.0
            except (OSError, TimeoutError, ProtocolViolation) as exc:
                if down_since is None:
                    down_since = time.monotonic()
                    log.warning("satellite %s (%s): %s; trying again", self.name or self.uri, self.uri,
                                printable(exc, 200) or type(exc).__name__)  # fmt: skip
            else:
                down_since = time.monotonic()
                log.warning("satellite %s (%s) lost; trying again", self.name or self.uri, self.uri)
            await asyncio.sleep(pause)
            pause = min(pause * 2, self.reconnect_max_s)

    async def _link(self) -> None:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=MAX_LINE), self.connect_timeout_s
        )
        link = EventLink(reader, writer)
        write = link.write_event
        conn = Connection(f"{self.host}:{self.port}", write, {})
        attached = False
        try:
            if self.token:
                await write(Event(AUTH_TYPE, {"token": self.token}))
            await write(Describe().event())
            async with asyncio.timeout(self.connect_timeout_s):
                while (event := await link.read_event()) is not None and not Info.is_type(event.type):
                    if event.type == "error":
                        raise SatelliteGone(
                            f"it refused the hub: {printable((event.data or {}).get('text'))}"
                        )
            if event is None:
                raise SatelliteGone("it closed the link before describing itself")
            self.name = satellite_name(Info.from_event(event), self.host)
            refused = await self.part.attach(self.name, conn)
            if refused is not None:
                raise SatelliteGone(f"the hub refused it: {refused.text}")
            attached = True
            await write(RunSatellite().event())
            self.links += 1
            self.connected.set()
            log.debug("satellite %s linked (%s)", self.name, self.uri)
            await self._serve(link, conn)
        finally:
            self.connected.clear()
            if attached:
                await self.part.closed(conn)
            await link.disconnect()

    async def _serve(self, link: EventLink, conn: Connection) -> None:
        async def ping() -> None:
            with contextlib.suppress(OSError, TimeoutError):  # a dead link: the read ends it
                while True:
                    await asyncio.sleep(PING_EVERY_S)
                    await conn.write_event(Ping(text="hub").event())

        pinger = asyncio.get_running_loop().create_task(ping(), name=f"ping-{self.name}")
        try:
            while True:
                try:
                    async with asyncio.timeout(SILENT_S):
                        event = await link.read_event()
                except TimeoutError:
                    raise SatelliteGone(f"silent for {SILENT_S:.0f} s") from None
                if event is None:
                    return
                if Ping.is_type(event.type):
                    await conn.write_event(Pong(text=Ping.from_event(event).text).event())
                elif not await self.part.handle(event, conn):
                    log.debug("satellite %s: %s ignored", self.name, printable(event.type))
        finally:
            pinger.cancel()


def satellite_name(info: Info, fallback: str) -> str:
    """The name a satellite gives itself in ``info`` (its ``satellite`` program), else ``fallback``."""
    sat = info.satellite
    name = (sat.name if sat is not None else "") or fallback
    return "".join(c if c.isalnum() or c in " .-_" else "-" for c in name).strip()[:64] or fallback


def dialers(cfg: SatelliteConfig, parts: Sequence[object]) -> list[SatelliteDialer]:
    """One dialer per satellite in ``satellite.connect`` (none when the parts have no
    satellites' part: a service without speech engines)."""
    part = next((p for p in parts if isinstance(p, SatellitePart)), None)
    if part is None:
        return []
    return [
        SatelliteDialer(
            uri, part, connect_timeout_s=cfg.connect_timeout_s, reconnect_max_s=cfg.reconnect_max_s
        )
        for uri in cfg.connect
    ]
