"""Reminder texts stay private: the folder IRIS makes is 0700 and the database with its
-wal and -shm 0600, whatever the umask; older files of IRIS's with wider modes are
tightened (and that is logged once)."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from iris_voice.timers.store import TimerStore
from tests.support.hostile.timer_db import DAMAGED_FILES


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o022, 0o002, 0o000], ids=["umask 022", "umask 002", "umask 000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$XDG_STATE_HOME, not made yet: IRIS makes it (and its iris folder) on first use."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_new_folders_and_files_are_private_whatever_the_umask(state: Path, umask: int) -> None:
    with TimerStore() as store:
        store.add("reminder", "call the doctor about the results", 2_000_000_000.0)
        files = [store.path, *(store.path.with_name(f"timers.db{s}") for s in ("-wal", "-shm"))]
        assert all(f.exists() for f in files)  # the side files exist while it is open
        assert {f.name: mode(f) for f in files} == dict.fromkeys((f.name for f in files), 0o600)
    assert mode(state) == mode(state / "iris") == 0o700


def test_a_custom_path_gets_a_private_file_in_the_folder_as_it_is(tmp_path: Path, umask: int) -> None:
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    with TimerStore(folder / "timers.db") as store:
        store.add("timer", "tea", 2_000_000_000.0, duration=60)
        assert mode(store.path) == 0o600
    assert mode(folder) == 0o755  # not IRIS's folder: left alone


def test_files_of_an_older_iris_are_tightened_and_that_is_said_once(state: Path, caplog) -> None:
    folder, old = state / "iris", os.umask(0o022)
    try:  # as IRIS left them before: its folder 0755, the files 0644, another process using them
        folder.mkdir(parents=True)
        path = folder / "timers.db"
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("PRAGMA journal_mode=WAL")
        holder.execute("CREATE TABLE older (x)")
    finally:
        os.umask(old)
    files = [path, path.with_name("timers.db-wal"), path.with_name("timers.db-shm")]
    assert [mode(f) for f in [folder, *files]] == [0o755, 0o644, 0o644, 0o644]
    with caplog.at_level(logging.WARNING):
        TimerStore().close()
        TimerStore().close()
    assert [mode(f) for f in [folder, *files]] == [0o700, 0o600, 0o600, 0o600]
    said = [r.getMessage() for r in caplog.records if "made it private" in r.getMessage()]
    assert [s.split(" ", 1)[0] for s in said] == [str(f) for f in [folder, *files]]  # once each
    holder.close()


def test_a_damaged_file_kept_aside_is_private_too(state: Path) -> None:
    path = state / "iris" / "timers.db"
    path.parent.mkdir(parents=True)
    DAMAGED_FILES["text file"](path)
    path.chmod(0o644)
    with TimerStore() as store:
        (recovery,) = store.take_recoveries()
    assert mode(Path(recovery.moved_to)) == 0o600
