"""``iris serve``: IRIS as a Wyoming server on one port, its jobs done by ``ServicePart``s.

Per connection a ``ServeHandler`` (the ``wyoming`` package's ``AsyncEventHandler``) reads
events within bounds (header line, data and payload sizes; a read timeout while an audio
or text stream is half received), lets the trust gates (``serve_trust``) judge each one,
answers ``describe`` with an ``info`` merged from every part's ``describe()``, and offers
every other event to the parts in order until one takes it. An event no part takes is
logged at debug and ignored, as Wyoming servers do. Writes are serialized per
connection; handler tasks are tracked and cancelled on shutdown.

The part list comes from ``serve_parts.service_parts`` — the same for ``iris serve`` (the
headless hub) and for the desktop daemon with ``serve.enabled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe, Info
from wyoming.server import AsyncEventHandler, AsyncServer

from iris_voice.app.serve_trust import TokenGate, not_allowed, peer_allowed
from iris_voice.app.service_parts import Connection, ServicePart
from iris_voice.config import ServeConfig
from iris_voice.safejson import loads_object

log = logging.getLogger(__name__)

MAX_LINE = 64 * 1024
"""Longest JSON header line (asyncio's stream limit, which ``wyoming`` relies on too)."""
MAX_DATA = 256 * 1024
"""Largest ``data`` block an event may carry (an ``info`` is a few kB)."""
MAX_PAYLOAD = 1024 * 1024
"""Largest payload (an audio chunk is usually 2–8 kB)."""
STREAM_OPEN = {"audio-start": True, "audio-stop": False, "synthesize-start": True, "synthesize-stop": False}
"""Events that open and close a stream: while one is open, every read has a timeout."""
STOP_TIMEOUT_S = 3.0
WRITE_TIMEOUT_S = 10.0
"""The longest a client may leave an event unread before it counts as gone (a stuck client
must not hold a turn, or the connection's write lock, for ever)."""


class ClientStalled(ConnectionResetError):
    """The client left an event unread for ``WRITE_TIMEOUT_S``: it counts as gone."""


class ProtocolViolation(Exception):
    """The client sent something that is not a Wyoming event within IRIS's bounds."""


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """One event, like ``wyoming.event.async_read_event`` but bounded; None at end of stream.
    Raises ``ProtocolViolation`` for an oversized or malformed event."""
    try:
        line = await reader.readline()
    except ValueError as exc:  # asyncio's limit: a header line longer than MAX_LINE
        raise ProtocolViolation(f"header line too long ({exc})") from None
    if not line:
        return None
    try:
        header = loads_object(line)
        kind = header["type"]
        data = header.get("data") or {}
        data_length = int(header.get("data_length") or 0)
        payload_length = int(header.get("payload_length") or 0)
    except (ValueError, KeyError, TypeError) as exc:
        raise ProtocolViolation(f"not a Wyoming event: {exc}") from None
    if not isinstance(kind, str) or not isinstance(data, dict):
        raise ProtocolViolation("an event needs a string type and an object of data")
    if not 0 <= data_length <= MAX_DATA or not 0 <= payload_length <= MAX_PAYLOAD:
        sizes = f"data {data_length} / payload {payload_length} bytes"
        raise ProtocolViolation(f"{kind}: {sizes} is over the limit")
    if data_length:
        try:
            more = loads_object(await reader.readexactly(data_length))
        except ValueError as exc:
            raise ProtocolViolation(f"{kind}: data is not a JSON object: {exc}") from None
        data = {**data, **more}
    payload = await reader.readexactly(payload_length) if payload_length else None
    return Event(type=kind, data=data, payload=payload)


def build_info(parts: Sequence[ServicePart]) -> Info:
    """``describe``'s answer: every part's programs under their ``Info`` field."""
    info = Info()
    for part in parts:
        for field_name, programs in part.describe().items():
            if field_name == "satellite":
                info.satellite = programs[0] if programs else None
            else:
                getattr(info, field_name).extend(programs)
    return info


class ServeHandler(AsyncEventHandler):
    """One client connection of ``WyomingService``."""

    def __init__(
        self, service: WyomingService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        super().__init__(reader, writer)
        self.service = service
        peer = writer.get_extra_info("peername")
        self.host: str | None = peer[0] if isinstance(peer, tuple) else None
        service.accepted += 1
        label = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else f"unix-socket#{service.accepted}"
        self._write_lock = asyncio.Lock()
        self.conn = Connection(label, self._write, {})
        self.gate = TokenGate(service.token)
        self.connected_at = time.time()
        self._stream_open = False

    async def _write(self, event: Event) -> None:
        async with self._write_lock:  # parts may write from their own tasks
            try:
                async with asyncio.timeout(WRITE_TIMEOUT_S):
                    await async_write_event(event, self.writer)
            except TimeoutError:
                raise ClientStalled(f"read nothing for {WRITE_TIMEOUT_S:g} s") from None

    async def run(self) -> None:
        """Serve this client until it leaves, breaks the protocol, stalls mid-stream or is refused."""
        svc = self.service
        task = asyncio.current_task()
        if task is not None:
            svc._tasks.add(task)
        try:
            if not await self._admit():
                return
            svc.clients[self.conn.peer] = self
            log.debug("wyoming client %s connected", self.conn.peer)  # Home Assistant: one per request
            while True:
                timeout = svc.cfg.read_timeout_s if self._stream_open else None
                try:
                    async with asyncio.timeout(timeout):
                        event = await read_event(self.reader)
                except TimeoutError:
                    log.warning("wyoming client %s sent nothing for %.0f s in the middle of a stream",
                                self.conn.peer, timeout)  # fmt: skip
                    await self._error(f"nothing received for {timeout:.0f} s mid-stream", "timeout")
                    break
                if event is None or not await self.handle_event(event):
                    break
        except ProtocolViolation as exc:
            log.warning("wyoming client %s: %s; disconnecting", self.conn.peer, exc)
            await self._error(str(exc), "bad-event")
        except ClientStalled as exc:
            log.warning("wyoming client %s %s; disconnecting", self.conn.peer, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            log.debug("wyoming client %s went away", self.conn.peer)
        finally:
            if svc.clients.pop(self.conn.peer, None) is not None:
                log.debug("wyoming client %s disconnected", self.conn.peer)
            await self.disconnect()
            self.writer.close()
            if task is not None:
                svc._tasks.discard(task)

    async def _admit(self) -> bool:
        svc = self.service
        if not peer_allowed(self.host, svc.networks):
            svc.refused += 1
            log.warning("wyoming client %s refused: not in serve.allow", self.conn.peer)
            await self._send_quietly(not_allowed(self.host))
            return False
        if len(svc.clients) >= svc.cfg.max_clients:
            svc.refused += 1
            log.warning("wyoming client %s refused: serve.max_clients (%d) connected", self.conn.peer,
                        svc.cfg.max_clients)  # fmt: skip
            await self._send_quietly(Error(text="too many clients", code="busy").event())
            return False
        return True

    async def handle_event(self, event: Event) -> bool:
        """Gate, ``describe``, then the parts; False closes the connection."""
        svc = self.service
        passed, answer = self.gate.check(event)
        if answer is not None:
            await self._write(answer)
            if answer.type == "error":
                svc.refused += 1
                log.warning("wyoming client %s refused: %s", self.conn.peer, answer.data.get("text"))
                return False
        if not passed:
            return True
        if event.type in STREAM_OPEN:
            self._stream_open = STREAM_OPEN[event.type]
        if Describe.is_type(event.type):
            await self._write(build_info(svc.parts).event())
            return True
        for part in svc.parts:
            try:
                if await part.handle(event, self.conn):
                    return True
            except (ConnectionError, asyncio.CancelledError):
                raise
            except Exception as exc:
                name = type(part).__name__
                log.exception("wyoming %s from %s failed in %s", event.type, self.conn.peer, name)
                await self._error(f"{event.type} failed: {exc}", getattr(exc, "code", "") or "failed")
                return True
        log.debug("wyoming %s from %s: no part takes it; ignored", event.type, self.conn.peer)
        return True

    async def disconnect(self) -> None:
        """Tell every part the client is gone."""
        for part in self.service.parts:
            try:
                await part.closed(self.conn)
            except Exception:
                log.exception("%s.closed failed for %s", type(part).__name__, self.conn.peer)
        self.conn.state.clear()

    async def _error(self, text: str, code: str) -> None:
        await self._send_quietly(Error(text=text, code=str(code)).event())

    async def _send_quietly(self, event: Event) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._write(event)


class WyomingService:
    """The server: ``await start()`` (or ``run()``), ``await stop()``; ``snapshot()`` for status."""

    def __init__(self, cfg: ServeConfig, parts: Sequence[ServicePart], token: str = "") -> None:
        if cfg.problems():  # the same refusal as at config load: a CLI override skips that
            from iris_voice.errors import ConfigError

            raise ConfigError(cfg.problems())
        self.cfg = cfg
        self.parts = list(parts)
        self.token = token
        self.networks = cfg.networks()
        self.clients: dict[str, ServeHandler] = {}
        """Connected clients by ``host:port``."""
        self.refused = 0
        """Connections and events refused by the gates since start."""
        self.accepted = 0
        """Connections accepted since start (before the gates)."""
        self.zeroconf_state = "off"
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: AsyncServer | None = None
        self._advert: Any = None

    async def start(self) -> None:
        """Bind and accept clients in the background (raises OSError when the address is taken)."""
        server = AsyncServer.from_uri(self.cfg.uri)
        await server.start(lambda r, w: ServeHandler(self, r, w))
        self._server = server
        log.info("wyoming service at %s (%s)", self.cfg.uri, self.describe_parts())
        if self.cfg.zeroconf:
            from iris_voice.app.serve_zeroconf import advertise

            self._advert, self.zeroconf_state = await advertise(self.cfg)

    def describe_parts(self) -> str:
        """``asr, tts, handle`` — the programs on offer, for logs and status."""
        info = build_info(self.parts).event().data
        return ", ".join(k for k, v in info.items() if v)

    async def run(self) -> None:
        """Start, then serve until cancelled (a task in the daemon's TaskGroup)."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.shield(self.stop())

    async def stop(self) -> None:
        """Stop accepting, withdraw the zeroconf record, close every client (idempotent)."""
        if self._advert is not None:
            advert, self._advert = self._advert, None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(advert.close(), STOP_TIMEOUT_S)
        if self._server is not None:
            server, self._server = self._server, None
            await server.stop()  # closes each handler's writer and feeds its reader EOF
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
        for part in self.parts:  # turns and timer announcements a part runs on its own
            try:
                await asyncio.wait_for(part.aclose(), STOP_TIMEOUT_S)
            except Exception:
                log.exception("%s.aclose failed", type(part).__name__)

    def snapshot(self) -> dict[str, Any]:
        """What ``iris status`` shows about the service."""
        now = time.time()
        return {
            "uri": self.cfg.uri,
            "programs": self.describe_parts(),
            "auth": "token" if self.token else ("allow-list" if self.networks else "none"),
            "zeroconf": self.zeroconf_state,
            "refused": self.refused,
            "clients": [
                {"peer": peer, "connected_s": round(now - h.connected_at, 1), "authenticated": h.gate.passed}
                for peer, h in self.clients.items()
            ],
        }
