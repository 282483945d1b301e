"""Hostile timer rows, in one place: the timer tests use them, and an abuse benchmark can
replay them against a running IRIS.

``BAD_ROWS`` are rows a foreign writer (another version, a crash, a person with
``sqlite3``) could leave in a good file, inserted by ``insert_raw_row`` with CHECK
constraints off.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

BAD_ROWS: dict[str, dict[str, Any]] = {
    "due_at is text": {"due_at": "abc"},
    "due_at is -1e300": {"due_at": -1e300},
    "due_at is 1e300": {"due_at": 1e300},
    "due_at is infinite": {"due_at": float("inf")},
    "due_at is a blob": {"due_at": b"\x01\x02"},
    "running without due_at": {"due_at": None},
    "created_at is text": {"created_at": "yesterday"},
    "unknown kind": {"kind": "alarm"},
    "unknown state": {"state": "ringing"},
    "label is 10,000 characters": {"label": "x" * 10_000},
    "label is a blob": {"label": b"\x00\xff\xfe"},
    "duration is infinite": {"duration": float("inf")},
    "duration is negative": {"duration": -60.0},
    "paused with negative time left": {"state": "paused", "due_at": None, "remaining": -5.0},
    "paused with 1e300 seconds left": {"state": "paused", "due_at": None, "remaining": 1e300},
    "paused without time left": {"state": "paused", "due_at": None, "remaining": None},
    "fired_at is text": {"state": "fired", "fired_at": "then"},
}
"""Column overrides of a valid running timer that make it unusable, by name."""


def insert_raw_row(path: Path, due: float, **overrides: Any) -> int:
    """Insert one row into ``path`` as a foreign writer could (CHECK constraints off):
    a running 60-second "hostile" timer due at ``due``, changed by ``overrides``; its id."""
    values: dict[str, Any] = {
        "kind": "timer",
        "label": "hostile",
        "created_at": due - 60,
        "due_at": due,
        "duration": 60.0,
        "state": "pending",
        "fired_at": None,
        "remaining": None,
        **overrides,
    }
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        raw.execute("PRAGMA ignore_check_constraints = ON")
        cur = raw.execute(f"INSERT INTO timers ({columns}) VALUES ({marks})", tuple(values.values()))
        return int(cur.lastrowid or 0)
    finally:
        raw.close()
