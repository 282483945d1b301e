"""The control socket: ``iris status|listen|stop|mute|say|ask|timers`` talk to the daemon.

A Unix stream socket at ``$XDG_RUNTIME_DIR/iris/control.sock``, mode 0600, that also
checks the peer's uid (only the same user, or root). One JSON object per line each way:
``{"cmd": "status"}`` → ``{"ok": true, …}`` or ``{"ok": false, "error": "…"}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from iris_voice.app.runtime import socket_path
from iris_voice.errors import Code, IrisError

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
MAX_LINE = 1 << 20


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class ControlServer:
    """Serves the control socket; ``handlers`` maps a command name to a coroutine."""

    def __init__(self, handlers: dict[str, Handler], path: Path | None = None) -> None:
        self.handlers = handlers
        self.path = path or socket_path()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Listen (replacing a stale socket left by a crashed daemon; the lock proves it is stale)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        old = os.umask(0o177)  # the socket is born 0600: no window where others could connect
        try:
            self._server = await asyncio.start_unix_server(self._client, path=str(self.path), limit=MAX_LINE)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
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
        sock = writer.get_extra_info("socket")
        try:
            uid = peer_uid(sock)
            if uid not in (os.getuid(), 0):
                log.warning("control socket: refused a client with uid %d", uid)
                writer.write(b'{"ok": false, "error": "permission denied"}\n')
                return
            while line := await reader.readline():
                writer.write(json.dumps(await self._dispatch(line), ensure_ascii=False).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the client went away or sent an over-long line; nothing to answer
        finally:
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()

    async def _dispatch(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object")
        except ValueError as exc:
            return {"ok": False, "error": f"bad request: {exc}"}
        cmd = request.get("cmd")
        handler = self.handlers.get(cmd) if isinstance(cmd, str) else None
        if handler is None:
            return {
                "ok": False,
                "error": f"unknown command {cmd!r}; known: {', '.join(sorted(self.handlers))}",
            }
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

    Raises ``IrisError('daemon-not-running')`` when no daemon listens.
    """
    path = path or socket_path()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            raise IrisError(Code.DAEMON_NOT_RUNNING, f"IRIS is not running (no daemon at {path})") from None
        s.sendall(json.dumps({"cmd": cmd, **fields}).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            try:
                part = s.recv(65536)
            except TimeoutError:
                raise IrisError(
                    Code.DAEMON_TIMEOUT, f"IRIS did not answer {cmd!r} within {timeout:.0f} s"
                ) from None
            if not part:
                break
            buf += part
    if not buf:
        raise IrisError(Code.DAEMON_ERROR, "IRIS closed the control connection without an answer")
    return json.loads(buf)


def daemon_running(path: Path | None = None) -> bool:
    """True when a daemon answers on the control socket."""
    try:
        return bool(request("ping", timeout=2.0, path=path).get("ok"))
    except (IrisError, OSError, ValueError):
        return False
