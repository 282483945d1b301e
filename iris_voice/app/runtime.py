"""The daemon's place in the user's session: runtime paths, the single-instance lock, sd_notify.

Everything lives under ``$XDG_RUNTIME_DIR/iris`` (``/run/user/UID/iris``): the control
socket and the lock. The lock keeps two daemons from running for one user — the user
unit and the system template may both be enabled by mistake.

Without a session (``sudo -u``, cron, a shell that logind did not start) the fallback is
``/tmp/iris-UID/iris``. ``/tmp`` is shared with every user, and its names are easy to
guess, so no directory on the way is trusted until it is checked: ours, a real directory
(not a symlink), mode 0700. A wider mode on our own directory is tightened; anything
else is refused (``Code.RUNTIME_UNSAFE``, exit 78) rather than used.

A serving daemon (``iris serve``, ``iris run`` with ``serve.enabled``) readies its Wyoming
address here too, before its speech models load (``prepare_serve``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import socket
import stat
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from iris_voice.errors import Code, ConfigError, IrisError

if TYPE_CHECKING:
    from iris_voice.config import ServeConfig

log = logging.getLogger(__name__)

EXIT_ALREADY_RUNNING = 75
"""Exit code of a second daemon for the same user (EX_TEMPFAIL; units don't restart on it)."""

FALLBACK_TMP = Path("/tmp")
"""Where the runtime directory goes without ``$XDG_RUNTIME_DIR`` (a variable for the tests)."""


def unsafe(path: Path | str, why: str) -> IrisError:
    """The one-line refusal of a runtime path: which path, why, and what fixes it."""
    uid = os.geteuid()
    fix = (
        f"remove it (it may need root) or set XDG_RUNTIME_DIR to a directory of your own "
        f"with mode 0700 (a login session has /run/user/{uid})"
    )
    return IrisError(Code.RUNTIME_UNSAFE, f"refusing to use {path}: {why}; {fix}")


def _describe(path: Path, what: str = "a directory") -> str:
    """Why ``path`` could not be opened as ``what`` (it was a symlink, or something else)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(st.st_mode):
        return f"it is a symbolic link (to {os.readlink(path)}), not {what}"
    return f"it is not {what}"


def private_dir(path: Path, follow: bool = False) -> Path:
    """Create ``path`` (mode 0700) unless it exists, then make sure only we can use it.

    It must be a directory owned by our effective uid; with ``follow`` False it must not
    be a symlink either. A wider mode on our own directory is tightened to 0700 (with a
    warning). The checks run on an open descriptor, so the directory cannot be swapped
    between the check and the chmod. Raises ``IrisError(Code.RUNTIME_UNSAFE)``.
    """
    with contextlib.suppress(OSError):  # already there, or not possible: the open below says which
        os.mkdir(path, 0o700)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            raise unsafe(path, _describe(path)) from None
        raise unsafe(path, exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        me = os.geteuid()
        if st.st_uid != me:
            raise unsafe(path, f"it belongs to uid {st.st_uid}, not to you (uid {me})")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            log.warning("%s had mode %04o, which lets others in: tightened to 0700", path, mode)
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR/iris``, checked private (see ``private_dir``); /tmp/iris-UID/iris without one.

    ``$XDG_RUNTIME_DIR`` itself must be ours and 0700, as the XDG spec requires; it may be
    a symlink (the session chose it), the directories IRIS makes below it may not.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        base = Path(xdg)
        with contextlib.suppress(OSError):  # an absent one is made, as before; checked below
            base.mkdir(mode=0o700, parents=True, exist_ok=True)
        private_dir(base, follow=True)
    else:
        base = private_dir(FALLBACK_TMP / f"iris-{os.getuid()}")
    return private_dir(base / "iris")


def socket_path() -> Path:
    """Where the control socket listens."""
    return runtime_dir() / "control.sock"


class InstanceLock:
    """An exclusive ``flock`` on ``$XDG_RUNTIME_DIR/iris/lock``, held for the daemon's life.

    The kernel drops it when the process dies, even on SIGKILL, so a crash never leaves
    a stale lock behind. The file is opened without following a symlink and is only
    written when it is our own regular file: a planted link never gets another file
    truncated.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or runtime_dir() / "lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``IrisError('already-running')`` naming the holder's pid.

        Raises ``IrisError('runtime-unsafe')`` when the lock path is a symlink or a file
        that is not ours.
        """
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            why = _describe(self.path, "a lock file") if exc.errno == errno.ELOOP else exc.strerror
            raise unsafe(self.path, why or str(exc)) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
                raise unsafe(self.path, "it is not a lock file of yours (another owner, type or a hard link)")
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise IrisError(
                Code.ALREADY_RUNNING,
                f"IRIS is already running for this user (pid {holder}, lock {self.path})",
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Give the lock up (also happens at exit)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def prepare_serve(cfg: ServeConfig) -> None:
    """Ready ``serve.uri`` for the Wyoming server, or refuse it before the models load.

    Loading Whisper and Piper takes seconds to minutes; a port in use found only after
    that is a slow way to learn it. So, holding the instance lock (another IRIS of this
    user has been ruled out): a ``unix://`` socket's missing folder is made, mode 0700 like
    the runtime directory, one level only (``checks.socket_folder_problem``); then the
    address is tried (``checks.bind_problem``). Raises ``ConfigError`` naming
    ``serve.uri`` (exit 78, which the units do not restart on).
    """
    # checks imports the tool registry and the model lookups: not for every user of runtime
    from iris_voice.app import checks

    parsed = urlparse(cfg.uri)
    if parsed.scheme == "unix":
        folder = Path(parsed.path).parent
        if not os.path.lexists(folder) and folder.parent.is_dir():
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:  # made meanwhile: the bind below says whether it serves
                pass
            except OSError as exc:
                why = f"its folder {folder} cannot be made ({exc.strerror or exc})"
                raise ConfigError([f"serve.uri: cannot listen at {cfg.uri}: {why}"]) from None
            else:
                log.info("made %s (mode 0700) for the Wyoming socket", folder)
    if (problem := checks.bind_problem(cfg.uri)) is not None:
        raise ConfigError([problem])


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
