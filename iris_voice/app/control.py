"""The control socket: ``iris status|listen|stop|mute|say|ask|timers`` talk to the daemon.

A Unix stream socket at ``$XDG_RUNTIME_DIR/iris/control.sock``, mode 0600, that also
checks the peer's uid (only the same user, or root). One JSON object per line each way:
``{"cmd": "status"}`` → ``{"ok": true, …}`` or ``{"ok": false, "error": "…"}``.

Both ends bound what the other may do: the server reads request lines up to 1 MiB,
nested at most ``wire.MAX_DEPTH`` deep, wants the first within ``FIRST_LINE_TIMEOUT_S``,
closes a client that stays silent for ``IDLE_TIMEOUT_S`` and serves at most
``MAX_CLIENTS`` at once, a full house giving way to newcomers from its idlest member;
the client reads one reply of at most ``MAX_REPLY`` within its timeout and checks that
the daemon is its own user's.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import socket
import stat
import struct
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iris_voice import safejson as wire
from iris_voice.app.runtime import socket_path, unsafe
from iris_voice.errors import Code, IrisError

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
MAX_LINE = 1 << 20
"""Longest request line (1 MiB); a longer one is answered with an error and the connection closed."""
MAX_REPLY = 4 << 20
"""Longest reply line the client reads (4 MiB; a status with its turns is a few KiB)."""
IDLE_TIMEOUT_S = 30.0
"""Seconds a client may take to send a request line (and to read a reply) before it is closed.
The CLI sends its request at once; a command that takes long (``ask``) runs after the line."""
FIRST_LINE_TIMEOUT_S = 5.0
"""Seconds a client may take over its first request line (the CLI sends it at once), and
the longest a new connection waits for a slot."""
MAX_CLIENTS = 32
"""Connections served at once; the CLI uses one at a time, and a few hundred idle ones
would otherwise use up the daemon's file descriptors."""
EVICT_AFTER_S = 1.0
"""Seconds a served connection may wait for a request line before, with every slot taken,
a new connection takes its place."""
MAX_WAITING = 128
"""New connections that may wait for a slot (a burst of ``iris`` commands); each costs a
file descriptor, not memory: its request waits unread in the kernel."""


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def bind_private(path: Path) -> socket.socket:
    """A listening Unix socket at ``path``, mode 0600 from birth, replacing a stale socket of ours.

    Synchronous on purpose: the umask is process-wide, so it is set and restored with no
    ``await`` (and so no other coroutine) in between. Something at ``path`` that is not a
    socket of ours is refused rather than deleted.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
            raise unsafe(path, "it is not a control socket of yours")
        path.unlink()  # left by a crashed daemon; holding the lock proves it is stale
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o177)  # born 0600: no window in which others could connect
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
    except BaseException:
        sock.close()
        raise
    return sock


@dataclass(eq=False)
class _Conn:
    """One served connection, as admission sees it."""

    writer: asyncio.StreamWriter
    waiting_since: float | None = None  # monotonic time it began to wait for a line; None: busy
    requests: int = 0  # complete request lines it has sent
    evicted: bool = False  # closed to give its slot to a newer connection


class ControlServer:
    """Serves the control socket; ``handlers`` maps a command name to a coroutine.

    ``idle_timeout`` bounds how long a client may stay silent between requests (or leave a
    reply unread), ``first_line_timeout`` how long it may take over its first request line,
    ``max_clients`` the connections served at once. With every slot taken, a newcomer takes
    the slot of one that has waited over ``evict_after`` for a request line (the oldest that
    never sent a complete one, else the one idle longest), which is told so and closed: idle
    connections never lock the user out. Else up to ``max_waiting`` newcomers wait for a
    slot until the first-line deadline; the excess is answered with an error line and closed.
    """

    def __init__(
        self,
        handlers: dict[str, Handler],
        path: Path | None = None,
        *,
        idle_timeout: float = IDLE_TIMEOUT_S,
        max_clients: int = MAX_CLIENTS,
        first_line_timeout: float = FIRST_LINE_TIMEOUT_S,
        evict_after: float = EVICT_AFTER_S,
        max_waiting: int = MAX_WAITING,
    ) -> None:
        self.handlers = handlers
        self.path = path or socket_path()
        self.idle_timeout = idle_timeout
        self.max_clients = max_clients
        self.first_line_timeout = first_line_timeout
        self.evict_after = evict_after
        self.max_waiting = max_waiting
        self._server: asyncio.Server | None = None
        self._served: set[_Conn] = set()
        self._queue: collections.deque[asyncio.Future[None]] = collections.deque()  # waiting for a slot
        self._refused = 0
        self._evicted = 0

    @property
    def connections(self) -> int:
        """Connections served now (those waiting for a slot not counted)."""
        return len(self._served)

    async def start(self) -> None:
        """Listen (replacing a stale socket left by a crashed daemon; the lock proves it is stale)."""
        sock = bind_private(self.path)
        try:
            self._server = await asyncio.start_unix_server(self._client, sock=sock, limit=MAX_LINE)
        except BaseException:
            sock.close()
            raise
        log.info("control socket at %s", self.path)

    async def serve_forever(self) -> None:
        """Start, then serve until cancelled; removes the socket file on the way out."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.close()

    async def close(self) -> None:
        """Stop listening and remove the socket file."""
        if self._server is not None:
            self._server.close()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        uid = peer_uid(writer.get_extra_info("socket"))
        if uid not in (os.getuid(), 0):  # before admission: a stranger never takes a slot
            log.warning("control socket: refused a client with uid %d", uid)
            _say_and_close(writer, encode({"ok": False, "error": "permission denied"}))
            return
        conn = _Conn(writer)
        if not await self._admit(conn):
            self._refuse(writer)
            return
        try:
            await self._serve(reader, writer, conn)
        except OSError:  # ConnectionError, TimeoutError: it went away or stopped reading its replies
            pass
        finally:
            self._release(conn)
            if (self._refused or self._evicted) and len(self._served) <= self.max_clients // 2:
                log.info("control socket: the burst is over; %d connections were refused, %d idle closed",
                         self._refused, self._evicted)  # fmt: skip
                self._refused = self._evicted = 0
            with contextlib.suppress(Exception):
                writer.close()
                await asyncio.wait_for(writer.wait_closed(), self.idle_timeout)

    async def _admit(self, conn: _Conn) -> bool:
        """Give ``conn`` a slot: a free one, an idle connection's, or the next one freed before
        the first-line deadline; False when none comes or ``max_waiting`` others wait already."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + min(self.first_line_timeout, self.idle_timeout)
        transport, paused = conn.writer.transport, False
        try:
            while True:
                now = time.monotonic()
                if len(self._served) >= self.max_clients and (idle := self._idlest(now)) is not None:
                    self._evict(idle, now)
                if len(self._served) < self.max_clients:
                    self._served.add(conn)
                    return True
                if now >= deadline or len(self._queue) >= self.max_waiting:
                    return False
                if not paused and transport.is_reading():  # its request waits in the kernel, not here
                    transport.pause_reading()
                    paused = True
                # woken by a freed slot, or when a served connection may have become evictable
                idle_at = [c.waiting_since + self.evict_after for c in self._served if c.waiting_since]
                wake = min(deadline, min(idle_at, default=now + max(self.evict_after, 0.05)))
                turn = loop.create_future()
                self._queue.append(turn)
                try:
                    await asyncio.wait_for(turn, max(wake - now, 0.001))
                except TimeoutError:
                    pass
                finally:
                    self._queue.remove(turn)
        finally:
            if paused:
                transport.resume_reading()

    def _idlest(self, now: float) -> _Conn | None:
        """The served connection to close for a newcomer, or None when none has waited long enough."""
        cutoff = now - self.evict_after
        idle = [c for c in self._served if c.waiting_since is not None and c.waiting_since <= cutoff]
        return min(idle, key=lambda c: (c.requests > 0, c.waiting_since or now), default=None)

    def _evict(self, conn: _Conn, now: float) -> None:
        """Close an idle connection to free its slot; its pending read ends and its task returns."""
        if not self._evicted:
            log.info("control socket: %d connections at once; closing idle ones", self.max_clients)
        self._evicted += 1
        conn.evicted = True
        self._served.discard(conn)
        idle = now - (conn.waiting_since or now)
        what = "a complete request" if conn.requests == 0 else "another request"
        error = f"closed to serve a newer control connection: this one sent no {what} for {idle:.1f} s"
        _say_and_close(conn.writer, encode({"ok": False, "error": error, "code": Code.DAEMON_ERROR}))

    def _release(self, conn: _Conn) -> None:
        """Give up ``conn``'s slot and wake the first connection waiting for one."""
        self._served.discard(conn)
        if (turn := next((t for t in self._queue if not t.done()), None)) is not None:
            turn.set_result(None)

    def _refuse(self, writer: asyncio.StreamWriter) -> None:
        """Answer a connection over the cap and close it; logged once per burst, not per connection."""
        if not self._refused:
            log.warning("control socket: over %d connections at once; refusing the excess", self.max_clients)
        self._refused += 1
        _say_and_close(writer, b'{"ok": false, "error": "too many control connections; try again"}\n')

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Conn) -> None:
        timeout = min(self.first_line_timeout, self.idle_timeout)  # the CLI sends its line at once
        while True:
            conn.waiting_since = time.monotonic()  # evictable from now until a line arrives
            try:
                line: bytes | None = await asyncio.wait_for(reader.readline(), timeout)
            except TimeoutError:
                log.debug("control socket: closing a client silent for %.1f s", timeout)
                return
            except ValueError:  # longer than MAX_LINE: the stream cannot be resynchronised
                line = None
            finally:
                conn.waiting_since = None
            if conn.evicted:  # its connection is closed: what readline returned is a fragment
                return
            if line is None:
                too_long = f"bad request: longer than {MAX_LINE} bytes"
                await self._reply(writer, encode({"ok": False, "error": too_long}))
                return
            if not line:
                return
            conn.requests += 1
            timeout = self.idle_timeout
            await self._reply(writer, await self._dispatch(line))

    async def _reply(self, writer: asyncio.StreamWriter, line: bytes) -> None:
        writer.write(line)
        await asyncio.wait_for(writer.drain(), self.idle_timeout)

    async def _dispatch(self, line: bytes) -> bytes:
        """The encoded answer to one request line."""
        try:
            if len(line) > wire.LARGE:  # a hostile megabyte takes a while to check: not on the loop
                request = await asyncio.to_thread(wire.loads_object, line)
            else:
                request = wire.loads_object(line)
        except ValueError as exc:
            return encode({"ok": False, "error": f"bad request: {exc}"})
        cmd = request.get("cmd")
        handler = self.handlers.get(cmd) if isinstance(cmd, str) else None
        if handler is None:
            known = ", ".join(sorted(self.handlers))
            unknown = f"unknown command {wire.one_line(repr(cmd), 60)}; known: {known}"
            return encode({"ok": False, "error": unknown})
        try:
            reply = await handler(request)
        except IrisError as exc:
            return encode({"ok": False, "error": exc.message, "code": exc.code})
        except Exception as exc:  # a failing command must not take the daemon down
            log.exception("control command %s failed", cmd)
            return encode({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        try:
            return encode({"ok": True, **reply})
        except (TypeError, ValueError, RecursionError) as exc:  # NaN, bytes, a set, an object, not a dict
            why = wire.one_line(f"{type(exc).__name__}: {exc}", 200)
            log.error("control command %s answered with what is not JSON (%s); sent an error", cmd, why)
            error = f"IRIS could not encode its answer to {cmd!r} as JSON ({why})"
            return encode({"ok": False, "error": error, "code": Code.DAEMON_ERROR})


def encode(answer: dict[str, Any]) -> bytes:
    """One reply line of strict JSON: ``TypeError``, ``ValueError`` or ``RecursionError`` for what
    JSON cannot hold, NaN and infinity included (other JSON readers refuse them)."""
    # a lone surrogate can only sit in a JSON string, where "\udc80" is its valid escape
    return json.dumps(answer, ensure_ascii=False, allow_nan=False).encode("utf-8", "backslashreplace") + b"\n"


def _say_and_close(writer: asyncio.StreamWriter, line: bytes) -> None:
    """Write one short line and close, with no await; a line the socket buffer cannot take at
    once (the peer reads nothing) is dropped with the connection rather than left pending."""
    writer.write(line)
    if writer.transport.get_write_buffer_size():
        writer.transport.abort()
    else:
        writer.close()


def request(cmd: str, timeout: float = 10.0, path: Path | None = None, **fields: Any) -> dict[str, Any]:
    """Send one command to the running daemon and return its answer (blocking; for the CLI).

    The whole exchange takes at most ``timeout`` seconds and reads at most ``MAX_REPLY``
    bytes. Raises ``IrisError``: ``daemon-not-running`` when no daemon listens,
    ``daemon-timeout``, ``daemon-error`` when the connection fails or closes without an
    answer, ``daemon-bad-reply`` when the answer is not one JSON object with ``ok``, and
    ``runtime-unsafe`` when the socket is served by another user.
    """
    path = path or socket_path()
    deadline = time.monotonic() + timeout
    late = IrisError(Code.DAEMON_TIMEOUT, f"IRIS did not answer {cmd!r} within {timeout:.0f} s")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            raise IrisError(Code.DAEMON_NOT_RUNNING, f"IRIS is not running (no daemon at {path})") from None
        except TimeoutError:
            raise late from None
        except OSError as exc:
            why = exc.strerror or exc
            raise IrisError(Code.DAEMON_ERROR, f"cannot reach IRIS at {path}: {why}") from None
        uid = peer_uid(s)
        if uid not in (os.getuid(), 0):  # a socket someone else planted: tell it nothing
            raise unsafe(path, f"it is served by uid {uid}, not by you")
        try:
            s.sendall(json.dumps({"cmd": cmd, **fields}).encode() + b"\n")
            line = _read_line(s, deadline)
            if not line:
                raise IrisError(Code.DAEMON_ERROR, "IRIS closed the control connection without an answer")
            answer = wire.loads_object(line)
            if not isinstance(answer.get("ok"), bool):
                raise ValueError('it has no "ok"')
        except TimeoutError:
            raise late from None
        except OSError as exc:
            why = exc.strerror or exc
            raise IrisError(Code.DAEMON_ERROR, f"the control connection failed: {why}") from None
        except ValueError as exc:
            raise IrisError(
                Code.DAEMON_BAD_REPLY,
                f"the answer to {cmd!r} from {path} is not a control reply ({wire.one_line(exc, 120)}); "
                "is something other than IRIS listening there?",
            ) from None
    return answer


@contextlib.contextmanager
def reply_fields(cmd: str) -> Iterator[None]:
    """Around code that reads a reply's fields: a missing key or a wrong type becomes one
    ``IrisError('daemon-bad-reply')`` instead of a traceback."""
    try:
        yield
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        what = f"{type(exc).__name__}: {wire.one_line(exc, 80)}"
        message = f"IRIS's answer to {cmd!r} lacks what it should hold ({what})"
        raise IrisError(Code.DAEMON_BAD_REPLY, message) from None


def _read_line(s: socket.socket, deadline: float) -> bytes:
    """The first line the daemon sends (without its newline), read before ``deadline``.

    Raises ``TimeoutError`` at the deadline, ``ValueError`` past ``MAX_REPLY`` bytes.
    """
    buf = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        s.settimeout(left)
        part = s.recv(65536)
        if not part:
            return bytes(buf)  # closed: what came is the answer (or nothing)
        end = part.find(b"\n")
        buf += part if end < 0 else part[:end]
        if len(buf) > MAX_REPLY:
            raise ValueError(f"longer than {MAX_REPLY >> 20} MiB")
        if end >= 0:
            return bytes(buf)


def daemon_running(path: Path | None = None) -> bool:
    """True when a daemon answers on the control socket."""
    try:
        return bool(request("ping", timeout=2.0, path=path).get("ok"))
    except (IrisError, OSError, ValueError):
        return False
