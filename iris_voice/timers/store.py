"""Timers and reminders on disk: SQLite, so a restart or a SIGKILL loses nothing.

Every write is its own committed transaction (autocommit) in WAL mode, so once a call
returns the row is on disk; the daemon, a one-shot ``iris ask`` and tests may all open
the same file. The API is synchronous; async callers go through ``asyncio.to_thread``.
The folder and files are private to the user (``dbfile``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from iris_voice.timers.dbfile import (
    FILE_MODE,
    FOLDER_MODE,
    create_private_file,
    make_private_folders,
    tighten,
    with_suffix,
)

log = logging.getLogger(__name__)

KINDS = ("timer", "reminder")
STATES = ("pending", "paused", "fired", "cancelled")
SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the current layout; 0 is the first one (no pausing)."""

# Version 1: a paused timer keeps its seconds left in ``remaining`` and has no due time,
# so due_at may be NULL and the state may be 'paused'.
_TABLE = """
CREATE TABLE {name} (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('timer', 'reminder')),
    label TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    due_at REAL CHECK (due_at IS NOT NULL OR state != 'pending'),
    duration REAL,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'paused', 'fired', 'cancelled')),
    fired_at REAL,
    remaining REAL CHECK (remaining IS NOT NULL OR state != 'paused')
)"""
_INDEX = "CREATE INDEX IF NOT EXISTS timers_pending ON timers (state, due_at)"
_V0_COLUMNS = "id, kind, label, created_at, due_at, duration, state, fired_at"
_COLUMNS = _V0_COLUMNS + ", remaining"
_ACTIVE = "state IN ('pending', 'paused')"


@dataclass(frozen=True)
class TimerRow:
    """One timer or reminder as stored."""

    id: int
    """Database id; never reused (AUTOINCREMENT), so "cancel 3" can't hit a newer timer."""
    kind: str
    """``timer`` or ``reminder``."""
    label: str
    """Timer label or reminder message; "" when none was given."""
    created_at: float
    """When it was set, as a Unix timestamp."""
    due_at: float | None
    """When it falls due, as a Unix timestamp; None while paused."""
    duration: float | None
    """Length in seconds for timers; None for reminders."""
    state: str
    """``pending``, ``fired`` or ``cancelled``."""
    fired_at: float | None
    """When it was announced, or None."""
    remaining: float | None = None
    """Seconds left while paused; None otherwise."""

    @property
    def paused(self) -> bool:
        """True for a paused timer (it has seconds left but no due time)."""
        return self.state == "paused"

    def left(self, now: float) -> float:
        """Seconds until it falls due (frozen while paused), never below zero."""
        if self.due_at is None:
            return max(0.0, self.remaining or 0.0)
        return max(0.0, self.due_at - now)


def default_db_path() -> Path:
    """``$XDG_STATE_HOME/iris/timers.db``, or ``~/.local/state/iris/timers.db``."""
    state = os.environ.get("XDG_STATE_HOME", "")
    # the XDG spec says a relative value is invalid and must be ignored
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "iris" / "timers.db"


class TimerStore:
    """Timers in one SQLite file; thread-safe through one connection and a lock."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self._own_folder = path is None  # the default folder is IRIS's alone: it may tighten it
        if str(self.path) != ":memory:":
            self._prepare_files()
        self._lock = threading.Lock()
        # isolation_level=None: autocommit, each statement is committed as it runs;
        # check_same_thread=False: calls arrive from asyncio.to_thread workers
        self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")  # durable even on power loss
            self._conn.execute("PRAGMA busy_timeout=5000")  # another process may be writing
            self._migrate()

    def _prepare_files(self) -> None:
        """Private folder and files before SQLite opens them (see ``dbfile``)."""
        for folder in make_private_folders(self.path.parent):
            log.info("created %s (mode %o)", folder, FOLDER_MODE)
        if self._own_folder:
            tighten(self.path.parent, FOLDER_MODE)
        create_private_file(self.path)
        for suffix in ("", "-wal", "-shm"):
            tighten(with_suffix(self.path, suffix), FILE_MODE)

    def _migrate(self) -> None:
        """Create the table, or bring an older file up to ``SCHEMA_VERSION`` in one transaction.

        SQLite cannot relax a NOT NULL column in place, so version 0 files are rebuilt:
        copy the rows into a new table, swap the names, keep the AUTOINCREMENT counter
        (ids are never reused). BEGIN IMMEDIATE makes a second process wait, and the
        version is read again inside the transaction, so only one of them migrates.
        """
        if self._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            exists = self._conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'timers'"
            ).fetchone()
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path} was written by a newer IRIS (schema {version}, this one knows "
                    f"{SCHEMA_VERSION})"
                )
            if not exists:
                self._conn.execute(_TABLE.format(name="timers"))
            elif version == 0:
                seq = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'timers'").fetchone()
                self._conn.execute(_TABLE.format(name="timers_v1"))
                self._conn.execute(f"INSERT INTO timers_v1 ({_V0_COLUMNS}) SELECT {_V0_COLUMNS} FROM timers")
                self._conn.execute("DROP TABLE timers")
                self._conn.execute("ALTER TABLE timers_v1 RENAME TO timers")
                if seq is not None:
                    self._conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'timers'", seq)
            self._conn.execute(_INDEX)
            self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close the connection (rows are already committed)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> TimerStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[TimerRow]:
        with self._lock:
            return [TimerRow(*r) for r in self._conn.execute(sql, params).fetchall()]

    def _update(self, sql: str, params: tuple[object, ...]) -> bool:
        with self._lock:
            return self._conn.execute(sql, params).rowcount > 0

    def add(
        self,
        kind: str,
        label: str,
        due_at: float,
        *,
        duration: float | None = None,
        created_at: float | None = None,
    ) -> TimerRow:
        """Store a new pending timer or reminder and return it."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
        created = time.time() if created_at is None else created_at
        with self._lock:
            cur = self._conn.execute(
                "INSERT INTO timers (kind, label, created_at, due_at, duration) VALUES (?, ?, ?, ?, ?)",
                (kind, label, created, due_at, duration),
            )
            row_id = cur.lastrowid
        row = self.get(int(row_id or 0))
        if row is None:  # only if another process deleted it in between
            raise RuntimeError(f"timer {row_id} vanished right after it was stored")
        return row

    def get(self, timer_id: int) -> TimerRow | None:
        """The row with this id, in any state, or None."""
        rows = self._rows(f"SELECT {_COLUMNS} FROM timers WHERE id = ?", (timer_id,))
        return rows[0] if rows else None

    def pending(self) -> list[TimerRow]:
        """Running rows (not paused), soonest first: what the timer service fires."""
        return self._rows(f"SELECT {_COLUMNS} FROM timers WHERE state = 'pending' ORDER BY due_at, id")

    def active(self) -> list[TimerRow]:
        """Running and paused rows, soonest first (paused ones by the time they have left)."""
        sql = f"SELECT {_COLUMNS} FROM timers WHERE {_ACTIVE} ORDER BY due_at IS NULL, due_at, remaining, id"
        return self._rows(sql)

    def list(self, state: str | None = None, limit: int = 1000) -> list[TimerRow]:
        """Rows in ``state`` (every state when None), soonest first."""
        if state is not None and state not in STATES:
            raise ValueError(f"state must be one of {STATES}, not {state!r}")
        where, params = ("WHERE state = ?", (state,)) if state else ("", ())
        sql = f"SELECT {_COLUMNS} FROM timers {where} ORDER BY due_at, id LIMIT ?"
        return self._rows(sql, (*params, limit))

    def cancel(self, timer_id: int) -> bool:
        """Cancel a running or paused row; False when it is unknown, fired or already cancelled."""
        sql = f"UPDATE timers SET state = 'cancelled' WHERE id = ? AND {_ACTIVE}"
        return self._update(sql, (timer_id,))

    def pause(self, timer_id: int, remaining: float) -> bool:
        """Pause a running row with ``remaining`` seconds left; False if it is not running."""
        sql = (
            "UPDATE timers SET state = 'paused', remaining = ?, due_at = NULL "
            "WHERE id = ? AND state = 'pending'"
        )
        return self._update(sql, (remaining, timer_id))

    def resume(self, timer_id: int, due_at: float) -> bool:
        """Run a paused row again, due at ``due_at``; False if it is not paused."""
        sql = (
            "UPDATE timers SET state = 'pending', due_at = ?, remaining = NULL "
            "WHERE id = ? AND state = 'paused'"
        )
        return self._update(sql, (due_at, timer_id))

    def shift(self, timer_id: int, seconds: float) -> bool:
        """Move a running row's due time (or a paused row's time left) by ``seconds``.

        False when the row is no longer running or paused (it fired or was cancelled).
        """
        sql = (
            f"UPDATE timers SET due_at = due_at + ?1, remaining = remaining + ?1 WHERE id = ?2 AND {_ACTIVE}"
        )
        return self._update(sql, (seconds, timer_id))

    def mark_fired(self, timer_id: int, fired_at: float | None = None) -> bool:
        """Claim a pending row as fired; False when it was cancelled or fired meanwhile.

        The conditional UPDATE is the claim: whoever changes the row announces it, so a
        racing cancel or a second daemon on the same file never leads to a double alarm.
        """
        at = time.time() if fired_at is None else fired_at
        sql = "UPDATE timers SET state = 'fired', fired_at = ? WHERE id = ? AND state = 'pending'"
        return self._update(sql, (at, timer_id))
