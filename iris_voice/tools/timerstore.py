"""Timers and reminders on disk: SQLite, so a restart or a SIGKILL loses nothing.

Every write is its own committed transaction (autocommit) in WAL mode, so once a call
returns the row is on disk; the daemon, a one-shot ``iris ask`` and tests may all open
the same file. The API is synchronous; async callers go through ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

KINDS = ("timer", "reminder")
STATES = ("pending", "fired", "cancelled")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS timers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('timer', 'reminder')),
    label TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    due_at REAL NOT NULL,
    duration REAL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'fired', 'cancelled')),
    fired_at REAL
);
CREATE INDEX IF NOT EXISTS timers_pending ON timers (state, due_at);
"""
_COLUMNS = "id, kind, label, created_at, due_at, duration, state, fired_at"


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
    due_at: float
    """When it falls due, as a Unix timestamp."""
    duration: float | None
    """Length in seconds for timers; None for reminders."""
    state: str
    """``pending``, ``fired`` or ``cancelled``."""
    fired_at: float | None
    """When it was announced, or None."""


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
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # isolation_level=None: autocommit, each statement is committed as it runs;
        # check_same_thread=False: calls arrive from asyncio.to_thread workers
        self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")  # durable even on power loss
            self._conn.execute("PRAGMA busy_timeout=5000")  # another process may be writing
            self._conn.executescript(_SCHEMA)

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
        """Pending rows, soonest first."""
        return self._rows(f"SELECT {_COLUMNS} FROM timers WHERE state = 'pending' ORDER BY due_at, id")

    def list(self, state: str | None = None, limit: int = 1000) -> list[TimerRow]:
        """Rows in ``state`` (every state when None), soonest first."""
        if state is not None and state not in STATES:
            raise ValueError(f"state must be one of {STATES}, not {state!r}")
        where, params = ("WHERE state = ?", (state,)) if state else ("", ())
        sql = f"SELECT {_COLUMNS} FROM timers {where} ORDER BY due_at, id LIMIT ?"
        return self._rows(sql, (*params, limit))

    def cancel(self, timer_id: int) -> bool:
        """Cancel a pending row; False when it is unknown, fired or already cancelled."""
        sql = "UPDATE timers SET state = 'cancelled' WHERE id = ? AND state = 'pending'"
        return self._update(sql, (timer_id,))

    def mark_fired(self, timer_id: int, fired_at: float | None = None) -> bool:
        """Claim a pending row as fired; False when it was cancelled or fired meanwhile.

        The conditional UPDATE is the claim: whoever changes the row announces it, so a
        racing cancel or a second daemon on the same file never leads to a double alarm.
        """
        at = time.time() if fired_at is None else fired_at
        sql = "UPDATE timers SET state = 'fired', fired_at = ? WHERE id = ? AND state = 'pending'"
        return self._update(sql, (at, timer_id))
