"""The daemon's place in the user's session: runtime paths, the single-instance lock, sd_notify.

Everything lives under ``$XDG_RUNTIME_DIR/iris`` (``/run/user/UID/iris``): the control
socket and the lock. The lock keeps two daemons from running for one user — the user
unit and the system template may both be enabled by mistake.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
from pathlib import Path

from iris_voice.errors import Code, IrisError

log = logging.getLogger(__name__)

EXIT_ALREADY_RUNNING = 75
"""Exit code of a second daemon for the same user (EX_TEMPFAIL; units don't restart on it)."""


def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR/iris``, created 0700; falls back to /tmp/iris-UID without a session."""
    base = os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/iris-{os.getuid()}"
    path = Path(base) / "iris"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def socket_path() -> Path:
    """Where the control socket listens."""
    return runtime_dir() / "control.sock"


class InstanceLock:
    """An exclusive ``flock`` on ``$XDG_RUNTIME_DIR/iris/lock``, held for the daemon's life.

    The kernel drops it when the process dies, even on SIGKILL, so a crash never leaves
    a stale lock behind.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or runtime_dir() / "lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``IrisError('already-running')`` naming the holder's pid."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise IrisError(
                Code.ALREADY_RUNNING,
                f"IRIS is already running for this user (pid {holder}, lock {self.path})",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Give the lock up (also happens at exit)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def sd_notify(state: str) -> bool:
    """Send ``state`` (e.g. ``READY=1``) to systemd's ``$NOTIFY_SOCKET``; False when not under systemd.

    The protocol is one datagram on a Unix socket (an abstract one when the path starts
    with ``@``), so no library is needed.
    """
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return False
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
            s.connect(addr)
            s.sendall(state.encode())
        return True
    except OSError as exc:
        log.warning("sd_notify(%s) failed: %s", state, exc)
        return False
