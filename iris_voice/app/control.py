"""The control socket: ``iris status|listen|stop|mute|say|ask|timers`` talk to the daemon.

A Unix stream socket at ``$XDG_RUNTIME_DIR/iris/control.sock``, mode 0600, that also
checks the peer's uid (only the same user, or root). One JSON object per line each way:
``{"cmd": "status"}`` → ``{"ok": true, …}`` or ``{"ok": false, "error": "…"}``.

Both ends bound what the other may do: the server reads request lines up to 1 MiB,
nested at most ``wire.MAX_DEPTH`` deep, closes a client that stays silent for
``IDLE_TIMEOUT_S`` and serves at most ``MAX_CLIENTS`` at once; the client reads one
reply of at most ``MAX_REPLY`` within its timeout and checks that the daemon is its own
user's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import struct
import time
from collections.abc import Awaitable, Callable, Iterator
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
MAX_CLIENTS = 32
"""Connections served at once; the CLI uses one at a time, and a few hundred idle ones
would otherwise use up the daemon's file descriptors."""


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


class ControlServer:
    """Serves the control socket; ``handlers`` maps a command name to a coroutine.

    ``idle_timeout`` bounds how long a client may stay silent (or leave a reply unread);
    ``max_clients`` bounds the connections served at once, the excess is answered with an
    error line and closed.
    """

    def __init__(
        self,
        handlers: dict[str, Handler],
        path: Path | None = None,
        *,
        idle_timeout: float = IDLE_TIMEOUT_S,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.handlers = handlers
        self.path = path or socket_path()
        self.idle_timeout = idle_timeout
        self.max_clients = max_clients
        self._server: asyncio.Server | None = None
        self._clients = 0
        self._refused = 0

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
        if self._clients >= self.max_clients:
            self._refuse(writer)
            return
        self._clients += 1
        try:
            await self._serve(reader, writer)
        except OSError:  # ConnectionError, TimeoutError: it went away or stopped reading its replies
            pass
        finally:
            self._clients -= 1
            if self._refused and self._clients <= self.max_clients // 2:
                log.info("control socket: the burst is over; %d connections were refused", self._refused)
                self._refused = 0
            with contextlib.suppress(Exception):
                writer.close()
                await asyncio.wait_for(writer.wait_closed(), self.idle_timeout)

    def _refuse(self, writer: asyncio.StreamWriter) -> None:
        """Answer a connection over the cap and close it; logged once per burst, not per connection."""
        if not self._refused:
            log.warning("control socket: over %d connections at once; refusing the excess", self.max_clients)
        self._refused += 1
        # a short line fits the socket buffer: no drain, so no await for the excess
        writer.write(b'{"ok": false, "error": "too many control connections; try again"}\n')
        writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        uid = peer_uid(writer.get_extra_info("socket"))
        if uid not in (os.getuid(), 0):
            log.warning("control socket: refused a client with uid %d", uid)
            await self._reply(writer, {"ok": False, "error": "permission denied"})
            return
        while True:
            try:
                line = await asyncio.wait_for(reader.readline(), self.idle_timeout)
            except TimeoutError:
                log.debug("control socket: closing a client silent for %.1f s", self.idle_timeout)
                return
            except ValueError:  # longer than MAX_LINE: the stream cannot be resynchronised
                too_long = f"bad request: longer than {MAX_LINE} bytes"
                await self._reply(writer, {"ok": False, "error": too_long})
                return
            if not line:
                return
            await self._reply(writer, await self._dispatch(line))

    async def _reply(self, writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
        writer.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
        await asyncio.wait_for(writer.drain(), self.idle_timeout)

    async def _dispatch(self, line: bytes) -> dict[str, Any]:
        try:
            if len(line) > wire.LARGE:  # a hostile megabyte takes a while to check: not on the loop
                request = await asyncio.to_thread(wire.loads_object, line)
            else:
                request = wire.loads_object(line)
        except ValueError as exc:
            return {"ok": False, "error": f"bad request: {exc}"}
        cmd = request.get("cmd")
        handler = self.handlers.get(cmd) if isinstance(cmd, str) else None
        if handler is None:
            known = ", ".join(sorted(self.handlers))
            return {"ok": False, "error": f"unknown command {wire.one_line(repr(cmd), 60)}; known: {known}"}
        try:
            reply = await handler(request)
        except IrisError as exc:
            return {"ok": False, "error": exc.message, "code": exc.code}
        except Exception as exc:  # a failing command must not take the daemon down
            log.exception("control command %s failed", cmd)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return {"ok": True, **reply}


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
