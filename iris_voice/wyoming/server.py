"""``iris serve``: IRIS as a Wyoming server on one port, its jobs done by ``ServicePart``s.

Per connection a ``ServeHandler`` (the ``wyoming`` package's ``AsyncEventHandler``) reads
events within bounds (``wire``), lets the trust gates (``trust``) judge each
one, answers ``describe`` with an ``info`` merged from every part's ``describe()`` and
``ping`` with ``pong``, and offers every other event to the parts in order until one takes
it. An event no part takes is logged at debug and ignored, as Wyoming servers do. Writes
are serialized per connection; handler tasks are tracked and cancelled on shutdown.

No connection can hold a slot for nothing. A new connection is *pending* until it is
admitted — past the gates, with its first event other than ``describe``/``ping`` — and
must get there within ``serve.auth_timeout_s``; pending connections have their own small
pool (``serve.max_pending``) in which a newcomer closes the oldest, so strangers that
connect and wait can never lock out a client that talks at once (``slots``). Admitted
connections (``serve.max_clients``) may stay silent ``serve.idle_timeout_s`` between events
(``serve.read_timeout_s`` inside an audio or text stream), and give their slot to a
newcomer once silent a few seconds with nothing open. Any exception a connection
raises becomes an ``error`` event and one log line.

The part list comes from ``parts.service_parts`` — the same for ``iris serve`` (the
headless hub) and for the desktop daemon with ``serve.enabled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import sys
import termios
import time
from collections.abc import Sequence
from typing import Any

from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler, AsyncServer

from iris_voice.config import ServeConfig
from iris_voice.wyoming.pace import GuessClock, Pace
from iris_voice.wyoming.part import Connection, ServicePart
from iris_voice.wyoming.slots import Slots
from iris_voice.wyoming.trust import (
    AUTH_FAIL_DELAY_S,
    RefusalLog,
    TokenGate,
    is_local_peer,
    not_allowed,
    other_user,
    peer_allowed,
    peer_uid,
    same_user,
)
from iris_voice.wyoming.wire import ProtocolViolation, printable, read_event

log = logging.getLogger(__name__)

STREAM_OPEN = {"audio-start": True, "audio-stop": False, "synthesize-start": True, "synthesize-stop": False}
"""Events that open and close a stream: while one is open, every read has a timeout."""
STOP_TIMEOUT_S = 3.0
WRITE_TIMEOUT_S = 10.0
"""The longest a client may leave an event unread before it counts as gone (a stuck client
must not hold a turn, or the connection's write lock, for ever)."""


class ClientStalled(ConnectionResetError):
    """The client left an event unread for ``WRITE_TIMEOUT_S``: it counts as gone."""


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
        self.conn = Connection(label, self._write, {}, gone=self._gone)
        self.gate = TokenGate(service.token)
        self.connected_at = time.time()
        self.pending_since = time.monotonic()
        """When it joined the pending pool (monotonic)."""
        self.last_event_at = time.monotonic()
        """When it last sent an event (monotonic)."""
        self.answering = False
        """A part is answering one of its events (a turn may take a while)."""
        self.admitted = False
        """Past the gates with a first real event: counted in ``max_clients``, not pending."""
        self._stream_open = False
        self.pace = Pace()
        """Its cheap events (``describe``, ``ping``), at most a burst and then a steady rate."""

    async def _write(self, event: Event) -> None:
        async with self._write_lock:  # parts may write from their own tasks
            try:
                async with asyncio.timeout(WRITE_TIMEOUT_S):
                    await async_write_event(event, self.writer)
            except TimeoutError:
                raise ClientStalled(f"read nothing for {WRITE_TIMEOUT_S:g} s") from None

    async def run(self) -> None:
        """Serve this client until it leaves, breaks the protocol, stalls, idles or is refused."""
        svc = self.service
        task = asyncio.current_task()
        if task is not None:
            svc._tasks.add(task)
        try:
            if await self._admit():
                await self._serve()
        except ProtocolViolation as exc:
            log.warning("wyoming client %s: %s; disconnecting", self.conn.peer, exc)
            await self._error(str(exc), "bad-event")
        except ClientStalled as exc:
            log.warning("wyoming client %s %s; disconnecting", self.conn.peer, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            log.debug("wyoming client %s went away", self.conn.peer)
        except Exception as exc:  # never "Task exception was never retrieved": one line and an error
            log.error("wyoming client %s: %s: %s; disconnecting", self.conn.peer, type(exc).__name__,
                      printable(exc, 200))  # fmt: skip
            await self._error("the service failed on this connection", "internal")
        finally:
            svc.pending.pop(self.conn.peer, None)
            if svc.clients.pop(self.conn.peer, None) is not None:
                log.debug("wyoming client %s disconnected", self.conn.peer)
            await self.disconnect()
            self._close()
            if task is not None:
                svc._tasks.discard(task)

    async def _serve(self) -> None:
        svc, cfg = self.service, self.service.cfg
        loop = asyncio.get_running_loop()
        svc.hold_pending(self)
        admit_by = loop.time() + cfg.auth_timeout_s
        while True:
            if not self.admitted:
                timeout, what = max(admit_by - loop.time(), 0.0), "before being admitted"
            elif self._stream_open:
                timeout, what = cfg.read_timeout_s, "in the middle of a stream"
            else:
                timeout, what = cfg.idle_timeout_s, "between events"
            try:
                async with asyncio.timeout(timeout):
                    event = await read_event(self.reader)
            except TimeoutError:
                if self.admitted:
                    log.info("wyoming client %s sent nothing for %.0f s %s; disconnecting",
                             self.conn.peer, timeout, what)  # fmt: skip
                await self._error(f"nothing received for {timeout:.0f} s {what}", "timeout")
                return
            if event is None or not await self.handle_event(event):
                return
            await asyncio.sleep(0)  # pipelined events: the other clients' turn between two

    def _gone(self) -> bool:
        """The client closed its side and nothing it sent is left to read."""
        return self.reader.at_eof() or self.writer.is_closing()

    def _close(self) -> None:
        """Close the socket now: a client that stopped reading leaves replies unsent, and a
        plain close would wait to flush them (its socket stayed open for minutes)."""
        transport = self.writer.transport
        if transport.get_write_buffer_size() > 0:
            transport.abort()
        else:
            self.writer.close()

    async def _admit(self) -> bool:
        """The allow-list, judged on connecting (costs nothing)."""
        svc = self.service
        if not peer_allowed(self.host, svc.networks):
            svc.refuse(self.host or "local", f"{self.conn.peer} not in serve.allow")
            await self._send_quietly(not_allowed(self.host))
            return False
        return True

    async def _enter(self) -> bool:
        """Admission, at the first request past the gates (or the right token): without a
        token, a client on this machine must run as the serving user. Asked only here — the
        lookup reads the kernel's socket table, and connections that never ask for anything
        must not make IRIS read it."""
        svc = self.service
        svc.pending.pop(self.conn.peer, None)  # it asked for something: no longer a slot holder
        if not svc.token and is_local_peer(self.host):
            sock = self.writer.get_extra_info("socket")
            peer, here = self.writer.get_extra_info("peername"), self.writer.get_extra_info("sockname")
            uid = await asyncio.to_thread(peer_uid, sock, peer, here)
            if not same_user(uid):
                svc.refuse(
                    f"uid {uid}", f"{self.conn.peer} runs as another user (uid {uid}) and there is no token"
                )
                await self._send_quietly(other_user(uid))
                return False
        if not svc.admit(self):
            await self._send_quietly(Error(text="too many clients", code="busy").event())
            return False
        return True

    async def handle_event(self, event: Event) -> bool:
        """Gate, admission, ``describe`` and ``ping``, then the parts; False closes the connection."""
        svc = self.service
        self.last_event_at = time.monotonic()
        passed, answer = self.gate.check(event)
        if answer is not None:
            if answer.type == "error":
                svc.pending.pop(self.conn.peer, None)  # waiting out its refusal holds no slot
                svc.refuse(
                    self.host or "local", f"{self.conn.peer}: {printable(answer.data.get('text'), 120)}"
                )
                # a guess costs time, per address: connections in parallel wait their turn
                await asyncio.sleep(svc.guesses.wait_s(self.host or "local"))
                await self._send_quietly(answer)
                return False
            await self._write(answer)
            if self.gate.passed and not self.admitted and not await self._enter():
                return False  # the right token admits at once: no stranger can evict it now
        if not passed:
            return True
        if Describe.is_type(event.type):
            await self.pace.take()
            await self._write(build_info(svc.parts).event())
            return True
        if Ping.is_type(event.type):
            await self.pace.take()
            await self._write(Pong(text=Ping.from_event(event).text).event())
            return True
        if not self.admitted and not await self._enter():
            return False
        if event.type in STREAM_OPEN:
            self._stream_open = STREAM_OPEN[event.type]
        self.answering = True
        try:
            return await self._offer(event)
        finally:
            self.answering = False
            self.last_event_at = time.monotonic()  # silence is counted from the answer

    async def _offer(self, event: Event) -> bool:
        """Offer ``event`` to the parts in order until one takes it."""
        svc = self.service
        for part in svc.parts:
            try:
                if await part.handle(event, self.conn):
                    return True
            except (ConnectionError, asyncio.CancelledError):
                raise
            except Exception as exc:
                name, kind = type(part).__name__, printable(event.type)
                log.error("wyoming %s from %s failed in %s: %s: %s", kind, self.conn.peer, name,
                          type(exc).__name__, printable(exc, 200))  # fmt: skip
                log.debug("the failure's traceback", exc_info=True)
                await self._error(
                    f"{kind} failed: {printable(exc, 200)}", getattr(exc, "code", "") or "failed"
                )
                return True
        log.debug("wyoming %s from %s: no part takes it; ignored", printable(event.type), self.conn.peer)
        return True

    async def disconnect(self) -> None:
        """Tell every part the client is gone."""
        for part in self.service.parts:
            try:
                await part.closed(self.conn)
            except Exception:
                log.exception("%s.closed failed for %s", type(part).__name__, self.conn.peer)
        self.conn.state.clear()

    def has_input(self) -> bool:
        """Bytes from the client wait to be read (in the stream's buffer or the socket's)."""
        if len(getattr(self.reader, "_buffer", b"")):
            return True
        sock = self.writer.get_extra_info("socket")
        try:
            waiting = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
        except (OSError, AttributeError, ValueError):
            return False
        return int.from_bytes(waiting, sys.byteorder) > 0

    def evict(self) -> None:
        """Close the connection to make room for a newer one (its reads see the end): a
        pending one, or an admitted one long idle."""
        log.debug("wyoming client %s closed before being admitted: a newer connection needs its slot",
                  self.conn.peer)  # fmt: skip
        self.writer.close()

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
        self.slots = Slots(cfg)
        self.clients = self.slots.clients
        """Admitted clients by ``host:port``."""
        self.pending = self.slots.pending
        """Connections not yet admitted, oldest first."""
        self.refusals = RefusalLog()
        self.guesses = GuessClock(AUTH_FAIL_DELAY_S)
        """When each address hears the answer to its next wrong token."""
        self.refused = 0
        """Connections and events refused by the gates since start."""
        self.accepted = 0
        """Connections accepted since start (before the gates)."""
        self.zeroconf_state = "off"
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: AsyncServer | None = None
        self._advert: Any = None

    def hold_pending(self, handler: ServeHandler) -> None:
        """Count ``handler`` as pending (``Slots.hold_pending``)."""
        self.slots.hold_pending(handler)

    def admit(self, handler: ServeHandler) -> bool:
        """Move ``handler`` from pending to the clients (``Slots.admit``); False when full."""
        if self.slots.admit(handler):
            return True
        self.refuse(
            handler.host or "local",
            f"{handler.conn.peer}: serve.max_clients ({self.cfg.max_clients}) connected",
        )
        return False

    def refuse(self, peer: str, why: str) -> None:
        """Count a refusal and log it (once per peer per minute)."""
        self.refused += 1
        self.refusals.warn(peer, why)

    async def start(self) -> None:
        """Bind and accept clients in the background (raises OSError when the address is taken)."""
        server = AsyncServer.from_uri(self.cfg.uri)
        await server.start(lambda r, w: ServeHandler(self, r, w))
        self._server = server
        log.info("wyoming service at %s (%s)", self.cfg.uri, self.describe_parts())
        if self.cfg.zeroconf:
            from iris_voice.wyoming.advert import advertise

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
                {
                    "peer": peer,
                    "connected_s": round(now - h.connected_at, 1),
                    "authenticated": h.gate.passed,
                    "admitted": h.admitted,
                }
                for peer, h in [*self.clients.items(), *self.pending.items()]
            ],  # fmt: skip
        }
