"""One IRIS unit as the .deb install test's checks see it: ``systemctl`` start in the
system's or a user's manager, its journal and the daemon's own log, its main process, and
``iris status`` over its control socket. Shared by the service steps, the spoken turn and
the upgrade and purge steps.
"""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

from tools.deb.checks.common import USERS, Fail, session_env, sh, show, wait_for

started: dict[tuple[str, str | None], tuple[int, float]] = {}
"""MainPID of each instance when ``check_instance`` saw it come up (and when), keyed by
(unit, user manager or None): the service steps prove it stayed up."""


def scope(user: str | None) -> list[str]:
    """``systemctl``'s arguments for ``user``'s manager (none for the system's)."""
    return ["--user", "-M", f"{user}@"] if user else []


def journal(unit: str, user: str | None = None, lines: int = 30) -> str:
    """The last ``lines`` journal lines of ``unit`` (in ``user``'s manager if given)."""
    select = [f"_UID={USERS[user]}", "--user-unit", unit] if user else ["-u", unit]
    cmd = ["journalctl", *select, "-o", "cat", "-n", str(lines), "--no-pager"]
    return sh(cmd, check=False).stdout.strip()


def daemon_log(owner: str, lines: int = 30) -> str:
    """The last ``lines`` lines IRIS logged as ``owner``. ``journalctl -u`` misses most of
    them for the system units: pam_systemd moves the daemon into its logind session's
    scope, so the journal files them under ``session-N.scope``; their identifier
    (``SyslogIdentifier=iris``) and uid find them."""
    cmd = ["journalctl", "-t", "iris", f"_UID={USERS[owner]}", "-o", "cat", "-n", str(lines), "--no-pager"]
    return sh(cmd, check=False).stdout.strip()


def logs(unit: str, owner: str, user: str | None = None) -> str:
    """What systemd said about ``unit`` and what the daemon said, for a failure report."""
    return f"-- systemd:\n{journal(unit, user, 15)}\n-- iris ({owner}):\n{daemon_log(owner, 20)}"


def owner_of(unit: str, user: str | None = None) -> str:
    """The user an IRIS unit runs as (iris.service: the debconf drop-in's user)."""
    if user:
        return user
    if unit.startswith("iris@"):
        return unit[len("iris@") : -len(".service")]
    return show(unit).get("User") or "tester"


def start(unit: str, user: str | None = None, enable: bool = False, verb: str = "start") -> float:
    """``systemctl [--user -M user@] [enable --now|VERB] unit``; returns the seconds it
    took (Type=notify: systemctl returns once the daemon said READY=1)."""
    argv = ["enable", "--now"] if enable else [verb]
    t0 = time.monotonic()
    out = sh(["systemctl", *scope(user), *argv, unit], check=False, timeout=240)
    if out.returncode != 0:
        why = logs(unit, owner_of(unit, user), user)
        raise Fail(f"systemctl {' '.join(argv)} {unit} failed: {out.stderr.strip()}\n{why}")
    return time.monotonic() - t0


def _main_process(unit: str, user: str | None) -> tuple[int, int, dict[str, str]]:
    props = show(unit, user)
    if (props.get("ActiveState"), props.get("SubState")) != ("active", "running"):
        state = f"{props.get('ActiveState')}/{props.get('SubState')}"
        raise Fail(f"{unit}: {state}\n{logs(unit, owner_of(unit, user), user)}")
    pid = int(props["MainPID"])
    status = Path(f"/proc/{pid}/status").read_text()
    uid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:")))
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    return pid, uid, env


def iris_status(owner: str) -> dict:
    """``iris status --json`` run by ``owner`` in its session: the daemon's answer."""
    out = sh(["iris", "status", "--json"], user=owner, env=session_env(owner), timeout=60)
    try:
        data = json.loads(out.stdout)
    except json.JSONDecodeError:
        raise Fail(f"iris status --json as {owner}: not JSON: {out.stdout[:300]!r}") from None
    if not isinstance(data, dict) or not data.get("ok"):
        raise Fail(f"iris status --json as {owner}: {data!r}"[:500])
    return data


def check_instance(unit: str, owner: str, user: str | None = None) -> str:
    """The running IRIS is ``owner``'s, in ``owner``'s session, and answers on its socket."""
    pid, uid, env = _main_process(unit, user)
    want_uid = USERS[owner]
    runtime = f"/run/user/{want_uid}"
    if uid != want_uid:
        raise Fail(f"{unit} runs as uid {uid}, not {owner} ({want_uid})")
    if env.get("XDG_RUNTIME_DIR") != runtime:
        raise Fail(f"{unit}: XDG_RUNTIME_DIR={env.get('XDG_RUNTIME_DIR')!r}, expected {runtime}")
    sock = Path(runtime, "iris", "control.sock")
    wait_for(f"{sock}", sock.exists, 10)
    st = sock.stat()
    if not stat.S_ISSOCK(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o600 or st.st_uid != want_uid:
        raise Fail(f"{sock}: mode {oct(st.st_mode)}, owner {st.st_uid}; expected a 0600 socket of {owner}")
    answer = iris_status(owner)
    if answer.get("pid") != pid:
        raise Fail(f"iris status as {owner} answered from pid {answer.get('pid')}, the unit's is {pid}")
    started[(unit, user)] = (pid, time.monotonic())
    models = answer["models"]
    return (
        f"pid {pid} uid {uid}, XDG_RUNTIME_DIR={runtime}, control.sock 0600; "
        f"iris status: {answer['state']}, stt {models['stt']}, tts {models['tts']}, wake {models['wake']}"
    )
