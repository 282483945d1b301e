"""An IRIS satellite waiting for its hub, in the protocol's own roles (``satellite.listen``).

As a Home Assistant satellite does, the satellite listens on ``satellite.listen`` and
describes itself (``info`` with a ``satellite``); a hub connects (an IRIS hub with
``satellite.connect``, or Home Assistant) and adopts it with ``run-satellite``. From then on
the link is the satellite's hub link, exactly as if the satellite had connected to the hub.
A newer adoption replaces the older one (a hub that restarted comes back on a new link).

Its microphone goes to whoever adopts it, so trust is the service's rule: a client outside
loopback must be in ``satellite.allow``, and with ``satellite.token`` it must send that token
(``iris-auth``) before ``run-satellite``; ``check-config`` refuses a listen address other
machines can reach with neither.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlparse

from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info, Satellite
from wyoming.ping import Ping, Pong
from wyoming.satellite import RunSatellite

from iris_voice import __version__
from iris_voice.config import Config
from iris_voice.wyoming.info import IRIS
from iris_voice.wyoming.trust import AUTH_OK_TYPE, AUTH_TYPE, peer_allowed
from iris_voice.wyoming.wire import MAX_LINE, EventLink, printable

log = logging.getLogger(__name__)

ADOPT_TIMEOUT_S = 30.0
"""How long a connection may take to send ``run-satellite`` (after ``describe``, a token)."""


HubLink = EventLink
"""A hub's connection to this satellite."""


def satellite_info(cfg: Config, name: str) -> Info:
    """What this satellite says it is: a ``satellite`` with its own VAD and wake word."""
    return Info(
        satellite=Satellite(
            name=name, attribution=IRIS, installed=True, description="IRIS satellite", version=__version__,
            has_vad=True, active_wake_words=[cfg.wake.model], max_active_wake_words=1, supports_trigger=False,
        )
    )  # fmt: skip


class HubListener:
    """Listens on ``satellite.listen``; each hub that adopts the satellite goes to ``adopted``
    (which returns when that link ends)."""

    def __init__(self, cfg: Config, name: str, adopted: Callable[[HubLink], Awaitable[None]]) -> None:
        uri = urlparse(cfg.satellite.listen)
        if uri.scheme != "tcp" or not uri.hostname or uri.port is None:
            raise ValueError(f"satellite.listen must look like tcp://HOST:PORT, not {cfg.satellite.listen!r}")
        self.host, self.port = uri.hostname, uri.port
        self.cfg = cfg
        self.info = satellite_info(cfg, name)
        self.networks = cfg.satellite.networks()
        self._adopted = adopted
        self.link: HubLink | None = None
        """The hub that adopted the satellite, while it is there."""
        self.ready = asyncio.Event()

    async def run(self) -> None:
        """Listen until cancelled."""
        server = await asyncio.start_server(self._handle, self.host, self.port, limit=MAX_LINE)
        async with server:
            self.ready.set()
            log.info("satellite waiting for its hub on %s", self.cfg.satellite.listen)
            await server.serve_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = HubLink(reader, writer)
        try:
            if not peer_allowed(link.host, self.networks):
                log.warning("a hub at %s is not in satellite.allow; refused", link.peer)
                await link.write_event(
                    Error(text="not in this satellite's allow-list", code="not-allowed").event()
                )
                return
            if not await self._handshake(link):
                return
            old, self.link = self.link, link
            if old is not None:
                log.info("adopted again by %s (replacing %s)", link.peer, old.peer)
                await old.disconnect()
            await self._adopted(link)
        except (OSError, ConnectionError, TimeoutError) as exc:
            log.info("hub %s: %s", link.peer, printable(exc, 200) or type(exc).__name__)
        finally:
            if self.link is link:
                self.link = None
            await link.disconnect()

    async def _handshake(self, link: HubLink) -> bool:
        """``describe``, ``ping``, the token, until ``run-satellite``; False: not adopted."""
        token = self.cfg.satellite.token
        trusted = not token
        async with asyncio.timeout(ADOPT_TIMEOUT_S):
            while (event := await link.read_event()) is not None:
                if Describe.is_type(event.type):
                    await link.write_event(self.info.event())
                elif Ping.is_type(event.type):
                    await link.write_event(Pong(text=Ping.from_event(event).text).event())
                elif event.type == AUTH_TYPE:
                    given = str((event.data or {}).get("token", ""))
                    trusted = bool(token) and hmac.compare_digest(
                        given.encode(errors="replace"), token.encode()
                    )
                    if not trusted:
                        await link.write_event(Error(text="wrong token", code="unauthorized").event())
                        log.warning("hub %s sent a wrong satellite.token", link.peer)
                        return False
                    await link.write_event(Event(AUTH_OK_TYPE))
                elif RunSatellite.is_type(event.type):
                    if not trusted:
                        await link.write_event(
                            Error(text="send the token first", code="unauthorized").event()
                        )
                        return False
                    return True
        return False
