"""One Wyoming request at a time, with a timeout on every step and errors naming the key.

The remote engines (``wyoming_stt``, ``wyoming_tts``) and ``iris doctor`` open a connection
per request: on loopback or a LAN that costs well under a millisecond
(``tools/bench/wyoming_engines.py`` measures the whole protocol overhead), and a server
that restarted between two turns is simply reached again by the next one — there is no
stale connection to detect. Every failure becomes one ``SpeechError`` whose message
starts with the configuration key (``stt.uri``/``tts.uri``), translated here only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from wyoming.client import AsyncClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info

from iris_voice.errors import Code, SpeechError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Endpoint:
    """A configured Wyoming server."""

    uri: str
    """``tcp://HOST:PORT`` or ``unix:///PATH``."""
    key: str
    """The configuration key that names it (``stt.uri``), for every message."""
    timeout_s: float
    """The longest wait to connect and for each event of a reply."""
    code: Code
    """The error code of an unreachable or failing server (``stt-unreachable``…)."""


class Session:
    """An open connection: events out, events in, each read bounded by the timeout."""

    def __init__(self, endpoint: Endpoint, client: AsyncClient) -> None:
        self.endpoint = endpoint
        self._client = client

    async def send(self, event: Event) -> None:
        """Write one event (a dropped connection becomes ``SpeechError``)."""
        ep = self.endpoint
        try:
            async with asyncio.timeout(ep.timeout_s):
                await self._client.write_event(event)
        except TimeoutError as exc:
            message = f"{ep.key}: {ep.uri} stopped reading (timeout {ep.timeout_s:g} s)"
            raise SpeechError(ep.code, message) from exc
        except OSError as exc:
            raise SpeechError(ep.code, f"{ep.key}: connection to {ep.uri} lost: {exc}") from exc

    async def receive(self) -> Event:
        """The next event; a timeout, a closed connection or an ``error`` event raise."""
        ep = self.endpoint
        try:
            async with asyncio.timeout(ep.timeout_s):
                event = await self._client.read_event()
        except TimeoutError as exc:
            key = ep.key.replace(".uri", ".timeout_s")
            raise SpeechError(
                ep.code, f"{ep.key}: {ep.uri} gave no reply within {key} = {ep.timeout_s:g} s"
            ) from exc
        except (OSError, EOFError) as exc:  # EOFError: cut off inside an event's payload
            raise SpeechError(ep.code, f"{ep.key}: bad or broken reply from {ep.uri}: {exc}") from exc
        if event is None:
            # The wyoming reader also returns None for a line that is not an event.
            raise SpeechError(ep.code, f"{ep.key}: {ep.uri} closed the connection (or sent no Wyoming event)")
        if Error.is_type(event.type):
            text, code = (event.data or {}).get("text", ""), (event.data or {}).get("code")
            raise SpeechError(ep.code, f"{ep.key}: {ep.uri} reported an error: {text} [{code}]")
        return event


@contextlib.asynccontextmanager
async def connect(endpoint: Endpoint) -> AsyncIterator[Session]:
    """A connection to ``endpoint`` for one request, closed on exit."""
    ep = endpoint
    try:
        client = AsyncClient.from_uri(ep.uri)
        async with asyncio.timeout(ep.timeout_s):
            await client.connect()
    except TimeoutError as exc:
        raise SpeechError(ep.code, f"{ep.key}: cannot connect to {ep.uri} within {ep.timeout_s:g} s") from exc
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise SpeechError(ep.code, f"{ep.key}: cannot connect to {ep.uri}: {reason}") from exc
    except ValueError as exc:  # the URI itself (config checks it first)
        raise SpeechError(Code.CONFIG_INVALID, f"{ep.key}: {exc}") from exc
    try:
        yield Session(ep, client)
    finally:
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(1.0):  # closing never holds a turn up
                await client.disconnect()


async def describe(endpoint: Endpoint) -> Info:
    """The server's ``info`` (``describe`` → ``info``), skipping any other event first."""
    async with connect(endpoint) as session:
        await session.send(Describe().event())
        while True:
            event = await session.receive()
            if Info.is_type(event.type):
                return Info.from_event(event)


class Reachability:
    """Says once that a server is gone, and once that it is back (not every turn)."""

    def __init__(self, endpoint: Endpoint, what: str) -> None:
        self.endpoint = endpoint
        self.what = what
        self.down: str | None = None
        """The last failure while the server is gone; None while it answers."""

    def failed(self, exc: SpeechError) -> None:
        """A request failed: warn the first time in a row, then only at DEBUG."""
        if self.down is None:
            log.warning("%s unavailable: %s (IRIS retries on each turn)", self.what, exc.message)
        else:
            log.debug("%s still unavailable: %s", self.what, exc.message)
        self.down = exc.message

    def answered(self) -> None:
        """A request succeeded: say so if the server had been gone."""
        if self.down is not None:
            log.info("%s at %s answers again", self.what, self.endpoint.uri)
        self.down = None
