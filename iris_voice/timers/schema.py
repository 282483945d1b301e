"""The timers database's tables, and bringing an older file up to the current layout."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA_VERSION = 2
"""``PRAGMA user_version`` of the current layout; 0 is the first one (no pausing), 1 added
pausing, 2 the origin (the satellite a timer was set from)."""

# Version 1: a paused timer keeps its seconds left in ``remaining`` and has no due time,
# so due_at may be NULL and the state may be 'paused'.
# Version 2: ``origin`` names the satellite the timer was set from ('' = this machine), so
# it fires there (wyoming.hub); a plain ADD COLUMN, no rebuild.
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
    remaining REAL CHECK (remaining IS NOT NULL OR state != 'paused'),
    origin TEXT NOT NULL DEFAULT ''
)"""
_INDEX = "CREATE INDEX IF NOT EXISTS timers_pending ON timers (state, due_at)"
V0_COLUMNS = "id, kind, label, created_at, due_at, duration, state, fired_at"
V1_COLUMNS = V0_COLUMNS + ", remaining"
COLUMNS = V1_COLUMNS + ", origin"
"""The columns of ``timers`` in ``TimerRow`` order."""

# Rows that failed rows.row_problem, kept as they were (no types: nothing is converted)
# with the reason. The tables below are extras an older IRIS ignores, so they need no
# new schema version (which would make that IRIS refuse the file).
REJECTED_TABLE = f"""
CREATE TABLE IF NOT EXISTS timers_rejected (
    {COLUMNS}, reason TEXT NOT NULL, rejected_at REAL NOT NULL
)"""
# Damaged files moved aside; ``announced`` is claimed once, by the service that says so.
RECOVERIES_TABLE = """
CREATE TABLE IF NOT EXISTS recoveries (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    moved_to TEXT NOT NULL,
    reason TEXT NOT NULL,
    announced INTEGER NOT NULL DEFAULT 0
)"""


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    """True when the database has a table called ``name``."""
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return conn.execute(sql, (name,)).fetchone() is not None


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Create the table, or bring an older file up to ``SCHEMA_VERSION`` in one transaction.

    SQLite cannot relax a NOT NULL column in place, so version 0 files are rebuilt:
    copy the rows into a new table, swap the names, keep the AUTOINCREMENT counter
    (ids are never reused). BEGIN IMMEDIATE makes a second process wait, and the
    version is read again inside the transaction, so only one of them migrates. A
    current file whose table is gone gets a new one rather than failing every query.
    """
    if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION and has_table(conn, "timers"):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        exists = has_table(conn, "timers")
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"{path} was written by a newer IRIS (schema {version}, this one knows {SCHEMA_VERSION})"
            )
        if not exists:
            conn.execute(_TABLE.format(name="timers"))
        elif version == 0:  # rebuilt straight into the current table (origin '' for all)
            seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'timers'").fetchone()
            conn.execute(_TABLE.format(name="timers_v1"))
            conn.execute(f"INSERT INTO timers_v1 ({V0_COLUMNS}) SELECT {V0_COLUMNS} FROM timers")
            conn.execute("DROP TABLE timers")
            conn.execute("ALTER TABLE timers_v1 RENAME TO timers")
            if seq is not None:
                conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'timers'", seq)
        elif version == 1:
            conn.execute("ALTER TABLE timers ADD COLUMN origin TEXT NOT NULL DEFAULT ''")
        if exists and has_table(conn, "timers_rejected"):
            names = [str(r[1]) for r in conn.execute("PRAGMA table_info(timers_rejected)")]
            if "origin" not in names:  # rows set aside by version 1 keep their place; origin ''
                conn.execute("ALTER TABLE timers_rejected ADD COLUMN origin")
        conn.execute(_INDEX)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
