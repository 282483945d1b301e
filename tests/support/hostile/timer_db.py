"""Hostile timer databases and rows, in one place: the timer tests use them, and an abuse
benchmark can replay them against a running IRIS.

``DAMAGED_FILES`` writes files SQLite refuses or finds malformed; ``BAD_ROWS`` are rows a
foreign writer (another version, a crash, a person with ``sqlite3``) could leave in a
good file, inserted by ``insert_raw_row`` with CHECK constraints off. Everything is
deterministic (seeded random bytes), so a failure can be replayed.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iris_voice.timers.store import TimerStore

SQLITE_MAGIC = b"SQLite format 3\x00"


def garbage_bytes(size: int = 8192, seed: int = 7) -> bytes:
    """``size`` random bytes (the same ones for the same ``seed``)."""
    return random.Random(seed).randbytes(size)


def write_text_file(path: Path) -> None:
    """A short text file where the database should be (a config or a note saved over it)."""
    path.write_bytes(b"this is not SQLite\n")


def write_random_bytes(path: Path) -> None:
    """Two pages of random bytes: no SQLite header at all."""
    path.write_bytes(garbage_bytes())


def write_magic_then_garbage(path: Path) -> None:
    """The SQLite magic string followed by random bytes: passes a header sniff, still
    "file is not a database" once SQLite reads the rest of the header."""
    path.write_bytes(SQLITE_MAGIC + garbage_bytes(8176))


def _real_database(path: Path, rows: int = 300) -> None:
    """A real timers database with ``rows`` pending timers, checkpointed into the main file."""
    with TimerStore(path) as store:
        for i in range(rows):
            store.add("timer", f"timer number {i} " + "x" * 40, 2_000_000_000.0 + i, duration=60.0)
    # the last connection closed: SQLite checkpointed the WAL into the file and removed it


def write_damaged_pages(path: Path) -> None:
    """A real timers database whose table pages were then overwritten in the middle:
    it opens, and ``PRAGMA quick_check`` reports the damage."""
    _real_database(path)
    data = bytearray(path.read_bytes())
    page = 4096
    for start in range(2 * page + 64, len(data) - page, 3 * page):  # page 3 on, page 1 intact
        data[start : start + 512] = garbage_bytes(512, seed=start)
    path.write_bytes(bytes(data))


def write_truncated(path: Path) -> None:
    """A real timers database cut to its first pages, as a full disk or a bad copy leaves it."""
    _real_database(path)
    data = path.read_bytes()
    path.write_bytes(data[: 3 * 4096 + 100])


DAMAGED_FILES: dict[str, Callable[[Path], None]] = {
    "text file": write_text_file,
    "random bytes": write_random_bytes,
    "magic then garbage": write_magic_then_garbage,
    "damaged pages": write_damaged_pages,
    "truncated": write_truncated,
}
"""Each way a timers.db can be unusable as a database, by name."""


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
