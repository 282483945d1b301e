"""Timers and reminders on disk: SQLite, so a restart or a SIGKILL loses nothing.

Every write is its own committed transaction (autocommit) in WAL mode, so once a call
returns the row is on disk; the daemon, a one-shot ``iris ask`` and tests may all open
the same file. The API is synchronous; async callers go through ``asyncio.to_thread``.

The file is not trusted. Opening it runs ``PRAGMA quick_check``: a file that is not a
database or fails the check is moved aside (``dbfile.move_aside``) and a fresh one takes
its place, with the recovery recorded in it until a ``TimerService`` announces it
(``take_recoveries``), whichever process found the damage. Every row read passes
``rows.row_problem``; one that fails moves to the ``timers_rejected`` table, so it neither
fires nor breaks a caller, and is logged once.
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
    folder_lock,
    is_damage,
    make_private_folders,
    move_aside,
    tighten,
    with_suffix,
)
from iris_voice.timers.rows import KINDS, STATES, TimerRow, make_row, row_problem
from iris_voice.timers.schema import (
    COLUMNS,
    RECOVERIES_TABLE,
    REJECTED_TABLE,
    SCHEMA_VERSION,
    has_table,
    migrate,
)

__all__ = ["KINDS", "SCHEMA_VERSION", "STATES", "Recovery", "TimerRow", "TimerStore", "default_db_path"]

log = logging.getLogger(__name__)

_ACTIVE = "state IN ('pending', 'paused')"
BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for a lock another process holds before "database is locked"."""


def default_db_path() -> Path:
    """``$XDG_STATE_HOME/iris/timers.db``, or ``~/.local/state/iris/timers.db``."""
    state = os.environ.get("XDG_STATE_HOME", "")
    # the XDG spec says a relative value is invalid and must be ignored
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "iris" / "timers.db"


class Damaged(Exception):
    """The database file's content is unusable; the message says what SQLite found."""


@dataclass(frozen=True)
class Recovery:
    """A damaged database that was moved aside for a fresh one."""

    at: float
    """When, as a Unix timestamp."""
    moved_to: str
    """Where the damaged file is kept."""
    reason: str
    """What SQLite found wrong with it."""


class TimerStore:
    """Timers in one SQLite file; thread-safe through one connection and a lock."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self._memory = str(self.path) == ":memory:"
        self._own_folder = path is None  # the default folder is IRIS's alone: it may tighten it
        self._lock = threading.Lock()
        self._skipped: set[int] = set()  # rejected rows that could not be moved: logged once
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file opened
        self._check_recoveries = True  # set by each (re)open: only then can a recovery appear
        self._conn = self._open()

    # -- opening, checking, recovering ---------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """Connect to the file, moving a damaged one aside for a fresh one."""
        if self._memory:
            return self._connect()
        self._prepare_files()
        try:
            return self._connect()
        except Damaged:
            pass
        # another process may have found the same damage: the first moves the file aside,
        # the others then find its fresh file, which passes
        with folder_lock(self.path.parent):
            try:
                return self._connect()
            except Damaged as exc:
                return self._recover(str(exc))

    def _prepare_files(self) -> None:
        """Private folder and files before SQLite opens them (see ``dbfile``)."""
        for folder in make_private_folders(self.path.parent):
            log.info("created %s (mode %o)", folder, FOLDER_MODE)
        if self._own_folder:
            tighten(self.path.parent, FOLDER_MODE)
        create_private_file(self.path)
        for suffix in ("", "-wal", "-shm"):
            tighten(with_suffix(self.path, suffix), FILE_MODE)

    def _connect(self) -> sqlite3.Connection:
        """A checked, migrated connection; ``Damaged`` when the file's content is unusable."""
        # isolation_level=None: autocommit, each statement is committed as it runs;
        # check_same_thread=False: calls arrive from asyncio.to_thread workers
        conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_MS)}")  # another process may be writing
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")  # durable even on power loss
            found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
            if found != ["ok"]:
                raise Damaged("quick_check: " + "; ".join(found)[:300])
            migrate(conn, self.path)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if is_damage(exc):
                raise Damaged(str(exc)) from exc
            raise
        except BaseException:
            conn.close()
            raise
        if not self._memory:
            st = os.stat(self.path)
            self._identity = (st.st_dev, st.st_ino)
        self._check_recoveries = True
        return conn

    def _recover(self, reason: str) -> sqlite3.Connection:
        """Move the damaged file aside, start a fresh one and record why in it."""
        moved = move_aside(self.path, time.time())
        log.warning("the timers database %s was damaged (%s): moved it to %s and started a new, "
                    "empty one; timers and reminders set before will not go off",
                    self.path, reason, moved)  # fmt: skip
        self._prepare_files()
        conn = self._connect()
        conn.execute(RECOVERIES_TABLE)
        sql = "INSERT INTO recoveries (at, moved_to, reason) VALUES (?, ?, ?)"
        conn.execute(sql, (time.time(), str(moved), reason))
        return conn

    def refresh(self, suspect: bool = False) -> bool:
        """Reopen the file when another process replaced it (a recovery) or, with ``suspect``,
        when a query said it is damaged (the check then moves it aside); True if reopened."""
        if self._memory:
            return False
        with self._lock:
            try:
                st = os.stat(self.path)
                same = (st.st_dev, st.st_ino) == self._identity
            except FileNotFoundError:
                same = False
            if same and not suspect:
                return False
            old, self._conn = self._conn, self._open()  # if opening fails, the old one stays
            old.close()
            return True

    def take_recoveries(self) -> list[Recovery]:
        """Recoveries of this file not yet announced, each claimed once across processes."""
        with self._lock:
            if not self._check_recoveries:
                return []
            taken = []
            if has_table(self._conn, "recoveries"):
                sql = "SELECT id, at, moved_to, reason FROM recoveries WHERE announced = 0"
                for rec_id, at, moved_to, reason in self._conn.execute(sql).fetchall():
                    claim = "UPDATE recoveries SET announced = 1 WHERE id = ? AND announced = 0"
                    if self._conn.execute(claim, (rec_id,)).rowcount:
                        taken.append(Recovery(float(at), str(moved_to), str(reason)))
            self._check_recoveries = False  # only after it worked: a locked file is tried again
            return taken

    def close(self) -> None:
        """Close the connection (rows are already committed)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> TimerStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- rows ----------------------------------------------------------------------------------

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[TimerRow]:
        with self._lock:
            rows = []
            for values in self._conn.execute(sql, params).fetchall():
                problem = row_problem(values)
                if problem is None:
                    rows.append(make_row(values))
                else:
                    self._set_aside(values[0], problem)
            return rows

    def _set_aside(self, row_id: int, problem: str) -> None:
        """Move an unusable row to ``timers_rejected`` (caller holds the lock)."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(REJECTED_TABLE)
                keep = (
                    f"INSERT INTO timers_rejected ({COLUMNS}, reason, rejected_at) "
                    f"SELECT {COLUMNS}, ?, ? FROM timers WHERE id = ?"
                )
                self._conn.execute(keep, (problem, time.time(), row_id))
                self._conn.execute("DELETE FROM timers WHERE id = ?", (row_id,))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:  # read-only or locked: skip it in this process instead
            if row_id not in self._skipped:
                self._skipped.add(row_id)
                log.warning("timer row %s is unusable (%s) and could not be set aside (%s); skipping it",
                            row_id, problem, exc)  # fmt: skip
            return
        log.warning("timer row %s in %s is unusable (%s); moved it to the timers_rejected table",
                    row_id, self.path, problem)  # fmt: skip

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
        origin: str = "",
    ) -> TimerRow:
        """Store a new pending timer or reminder and return it; ``ValueError`` for values
        no row may hold (a kind, a time or a label that reading it back would reject).
        ``origin`` names the satellite it was set from ("" = this machine)."""
        created = time.time() if created_at is None else created_at
        values = (0, kind, label, created, due_at, duration, "pending", None, None, origin)
        if problem := row_problem(values):
            raise ValueError(f"cannot store this {kind}: {problem}")
        with self._lock:
            cur = self._conn.execute(
                "INSERT INTO timers (kind, label, created_at, due_at, duration, origin) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (kind, label, created, due_at, duration, origin),
            )
            row_id = cur.lastrowid
        row = self.get(int(row_id or 0))
        if row is None:  # only if another process deleted it in between
            raise RuntimeError(f"timer {row_id} vanished right after it was stored")
        return row

    def get(self, timer_id: int) -> TimerRow | None:
        """The row with this id, in any state, or None."""
        rows = self._rows(f"SELECT {COLUMNS} FROM timers WHERE id = ?", (timer_id,))
        return rows[0] if rows else None

    def pending(self) -> list[TimerRow]:
        """Running rows (not paused), soonest first: what the timer service fires."""
        return self._rows(f"SELECT {COLUMNS} FROM timers WHERE state = 'pending' ORDER BY due_at, id")

    def active(self) -> list[TimerRow]:
        """Running and paused rows, soonest first (paused ones by the time they have left)."""
        sql = f"SELECT {COLUMNS} FROM timers WHERE {_ACTIVE} ORDER BY due_at IS NULL, due_at, remaining, id"
        return self._rows(sql)

    def list(self, state: str | None = None, limit: int = 1000) -> list[TimerRow]:
        """Rows in ``state`` (every state when None), soonest first."""
        if state is not None and state not in STATES:
            raise ValueError(f"state must be one of {STATES}, not {state!r}")
        where, params = ("WHERE state = ?", (state,)) if state else ("", ())
        sql = f"SELECT {COLUMNS} FROM timers {where} ORDER BY due_at, id LIMIT ?"
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
