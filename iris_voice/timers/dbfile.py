"""The timers database as files: private to its user, and moved aside when damaged.

Reminder texts are personal, so the folder IRIS makes is 0700 and the database with its
``-wal`` and ``-shm`` 0600, whatever the umask: the file is created here before SQLite
opens it (SQLite gives the side files the main file's mode). A file that SQLite calls
"not a database" or "malformed" is renamed, never deleted, so nothing is lost for good
and the user can look at it; the caller then starts a fresh one.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

FOLDER_MODE = 0o700
FILE_MODE = 0o600
SIDE_FILES = ("-wal", "-shm", "-journal")
"""What SQLite keeps beside a database; they belong to it and move with it."""
_DAMAGE = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_LOCKED = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}


def is_damage(exc: BaseException) -> bool:
    """True when SQLite says the file's content is unusable ("file is not a database",
    "database disk image is malformed"); False for locks, permissions and I/O errors,
    which a retry or the user can fix without losing the file."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in _DAMAGE


def is_locked(exc: BaseException) -> bool:
    """True when SQLite gave up waiting for a lock another connection holds ("database is
    locked"): nothing is wrong with the file, and the same call can succeed later."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.OperationalError) and code is not None and code & 0xFF in _LOCKED


def with_suffix(path: Path, suffix: str) -> Path:
    """``timers.db`` + ``-wal`` → ``timers.db-wal`` (SQLite's naming, not a file extension)."""
    return path.with_name(path.name + suffix)


def make_private_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents as 0700; the folders made, outermost first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    made = []
    for path in reversed(missing):
        try:
            path.mkdir(mode=FOLDER_MODE)
        except FileExistsError:  # another process made it meanwhile
            continue
        os.chmod(path, FOLDER_MODE)  # mkdir's mode passes through the umask; this does not
        made.append(path)
    return made


def create_private_file(path: Path) -> bool:
    """Create an empty ``path`` as 0600 unless it exists; True if this call made it.

    An empty file is an empty SQLite database. It must never be opened here when it
    already exists: closing any descriptor of a database file drops the POSIX locks
    another connection in this process holds on it.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)  # an odd umask (0o277) must not leave it unwritable
    finally:
        os.close(fd)
    return True


def tighten(path: Path, mode: int) -> bool:
    """Take away every permission beyond ``mode`` (group and others); True if it changed.

    Logs a warning when it changes something or cannot (a file of another user), so
    this is said once: afterwards there is nothing to change.
    """
    try:
        current = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return False
    if not current & ~mode:
        return False
    try:
        os.chmod(path, current & mode)
    except OSError as exc:
        log.warning("%s is readable by other users (mode %o) and could not be made private: %s",
                    path, current, exc.strerror)  # fmt: skip
        return False
    log.warning("%s was readable by other users (mode %o); made it private (mode %o)",
                path, current, current & mode)  # fmt: skip
    return True


def move_aside(path: Path, when: float | None = None) -> Path:
    """Rename a damaged ``path`` and its side files to ``<name>.corrupt-<local time>``; the new name.

    Side files go first: a stale ``-wal`` left next to the fresh database would be
    replayed into it. A number is appended when that name is taken.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while any(with_suffix(target, s).exists() for s in ("", *SIDE_FILES)):
        target, n = path.with_name(f"{path.name}.corrupt-{stamp}.{n}"), n + 1
    for suffix in (*SIDE_FILES, ""):
        source = with_suffix(path, suffix)
        if source.exists():
            os.rename(source, with_suffix(target, suffix))
            with contextlib.suppress(OSError):
                os.chmod(with_suffix(target, suffix), FILE_MODE)  # still the user's reminders
    return target


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` (not on the database: see ``create_private_file``),
    so two processes that find the same damaged file move it aside once."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
