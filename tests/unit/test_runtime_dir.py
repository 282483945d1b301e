"""The runtime directory, the lock and the socket path when someone else got there first.

Without ``XDG_RUNTIME_DIR`` IRIS falls back to ``/tmp/iris-UID/iris``, a name any local
user can plant in advance. These tests plant what an attacker would (a symlink, a
directory of their own, a lock that points at a victim's file) and check that IRIS
refuses with one clear line and exit 78 instead of using it. ``runtime.FALLBACK_TMP``
stands in for /tmp so nothing outside the test's own directory is touched. The
other-owner cases need root (chown); the others run as anyone.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from iris_voice.app import control, runtime
from iris_voice.app.runtime import InstanceLock, runtime_dir
from iris_voice.cli.main import main
from iris_voice.errors import Code, IrisError, exit_code
from tests.support.hostile.local_user import NOBODY, plant_foreign_dir, plant_symlink

UID = os.getuid()


@pytest.fixture
def no_session(monkeypatch, tmp_path) -> Path:
    """No ``XDG_RUNTIME_DIR``; a sticky, world-writable stand-in for /tmp. Returns it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o1777)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(runtime, "FALLBACK_TMP", tmp)
    return tmp


@pytest.fixture
def session(monkeypatch, tmp_path) -> Path:
    """``XDG_RUNTIME_DIR`` set to a fresh directory of ours (not yet 0700: see the tests)."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    return run


@pytest.fixture
def attacker(tmp_path) -> Path:
    """A directory an attacker controls (world-writable, so anyone could fill it)."""
    where = tmp_path / "attacker"
    where.mkdir()
    os.chmod(where, 0o777)
    return where


def refused(call) -> IrisError:
    """Run ``call``; it must raise the runtime refusal, one line, that maps to exit 78."""
    with pytest.raises(IrisError) as err:
        call()
    assert err.value.code == Code.RUNTIME_UNSAFE, err.value
    assert exit_code(err.value.code) == 78
    assert "\n" not in err.value.message and "XDG_RUNTIME_DIR" in err.value.message
    return err.value


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_fallback_is_made_private(no_session):
    path = runtime_dir()
    assert path == no_session / f"iris-{UID}" / "iris"
    for p in (path, path.parent):
        assert mode(p) == 0o700 and os.lstat(p).st_uid == os.geteuid()


@pytest.mark.parametrize("planted", ["base", "inner"])
def test_a_planted_symlink_directory_is_refused(planted, no_session, attacker):
    """The attacker's symlink would have put our lock and socket in their directory."""
    base = no_session / f"iris-{UID}"
    if planted == "base":
        link = plant_symlink(base, attacker)
    else:
        base.mkdir(mode=0o700)
        link = plant_symlink(base / "iris", attacker)
    err = refused(runtime_dir)
    assert str(link) in err.message and "symbolic link" in err.message
    assert list(attacker.iterdir()) == []  # nothing of ours was created over there


def test_a_symlink_below_xdg_runtime_dir_is_refused(session, attacker):
    link = plant_symlink(session / "iris", attacker)
    err = refused(runtime_dir)
    assert str(link) in err.message and "symbolic link" in err.message
    assert list(attacker.iterdir()) == []


@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_a_planted_lock_never_truncates_the_victim(how, session):
    """The old lock followed a symlink and wrote its pid over the file it pointed at."""
    victim = session.parent / "victim.txt"
    victim.write_text("the user's precious notes\n")
    (session / "iris").mkdir(mode=0o700)
    lock_path = session / "iris" / "lock"
    if how == "symlink":
        plant_symlink(lock_path, victim)
    else:
        os.link(victim, lock_path)
    err = refused(InstanceLock().acquire)
    assert str(lock_path) in err.message
    assert victim.read_text() == "the user's precious notes\n"


def test_wider_modes_of_our_own_directories_are_tightened(session, caplog):
    """A 0755 runtime directory lets others see the socket and the lock; ours, so fixed."""
    os.chmod(session, 0o755)
    (session / "iris").mkdir()
    os.chmod(session / "iris", 0o777)
    path = runtime_dir()
    assert mode(session) == 0o700 and mode(path) == 0o700
    assert "tightened to 0700" in caplog.text


def test_something_else_at_the_socket_path_is_not_deleted(session):
    """Binding the control socket replaces a stale socket of ours, never another file."""
    path = runtime_dir() / "control.sock"
    path.write_text("not a socket\n")
    refused(lambda: control.bind_private(path))
    assert path.read_text() == "not a socket\n"


@pytest.fixture
def empty_config(monkeypatch, tmp_path):
    """The defaults, whatever config files this machine has."""
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("IRIS_CONFIG", str(config))


def test_a_control_command_refuses_in_one_line_with_exit_78(session, attacker, empty_config, capsys):
    """``iris status`` must not talk to whatever listens in the attacker's directory."""
    link = plant_symlink(session / "iris", attacker)
    assert main(["status"]) == 78
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"iris: refusing to use {link}: it is a symbolic link"), err
    assert list(attacker.iterdir()) == []


def test_the_daemon_refuses_before_loading_anything(no_session, attacker, empty_config, capsys):
    """``iris run`` (what the units start) says why and how to fix it, exit 78: no restart loop."""
    plant_symlink(no_session / f"iris-{UID}", attacker)
    assert main(["run"]) == 78
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"iris: refusing to use {no_session}/iris-{UID}"), err
    assert "XDG_RUNTIME_DIR" in err[0] and list(attacker.iterdir()) == []


def _need_root() -> None:
    if os.geteuid() != 0:
        reason = "planting a directory owned by another user needs root (chown)"
        print(f"\nskipping: {reason}", file=sys.stderr)
        pytest.skip(reason)


@pytest.mark.parametrize("planted", ["base", "inner"])
def test_a_fallback_directory_of_another_user_is_refused(planted, no_session):
    _need_root()
    base = no_session / f"iris-{UID}"
    if planted == "inner":
        base.mkdir(mode=0o700)
    foreign = plant_foreign_dir(base if planted == "base" else base / "iris")
    err = refused(runtime_dir)
    assert str(foreign) in err.message and f"belongs to uid {NOBODY}" in err.message
    assert list(foreign.iterdir()) == [] and os.lstat(foreign).st_uid == NOBODY


@pytest.mark.parametrize("planted", ["XDG_RUNTIME_DIR", "iris below it"])
def test_an_xdg_directory_of_another_user_is_refused(planted, tmp_path, monkeypatch):
    """E.g. ``sudo -u alice iris …`` that kept root's XDG_RUNTIME_DIR."""
    _need_root()
    run = tmp_path / "run"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    if planted == "XDG_RUNTIME_DIR":
        foreign = plant_foreign_dir(run)
    else:
        run.mkdir(mode=0o700)
        foreign = plant_foreign_dir(run / "iris")
    err = refused(runtime_dir)
    assert str(foreign) in err.message and f"belongs to uid {NOBODY}" in err.message
    assert list(foreign.iterdir()) == [] and os.lstat(foreign).st_uid == NOBODY


def test_a_lock_file_of_another_user_is_left_alone(session):
    _need_root()
    (session / "iris").mkdir(mode=0o700)
    lock_path = session / "iris" / "lock"
    lock_path.write_text("theirs\n")
    os.chown(lock_path, NOBODY, NOBODY)
    refused(InstanceLock().acquire)
    assert lock_path.read_text() == "theirs\n"
