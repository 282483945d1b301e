"""What every step of the .deb install test's in-container checks shares: the test
directory, the test users, ``Fail``, ``sh``, waiting, logging and the ``Runner`` that
records each step's result. Standard library only (the container's /usr/bin/python3.11);
it imports no other module of the checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import traceback
from collections.abc import Callable
from pathlib import Path

WORK = Path(__file__).resolve().parents[3]
"""The test directory the host fills (``/srv/iris-test``: params.json, debs/, upgrade/,
question.wav) and reads (log.txt, results.json, llm-request): the directory holding
``tools/deb/checks/``."""
LOG = WORK / "log.txt"
RESULTS = WORK / "results.json"
USERS = {"tester2": 1000, "tester": 1001, "tester3": 1002}
"""tester installs with sudo and is iris.service's debconf user (not the first regular
user, so the default provably comes from SUDO_USER); tester2: iris@tester2; tester3: the
user unit, with linger."""
CONFIG = Path("/etc/iris/config.toml")
DROPIN = Path("/etc/systemd/system/iris.service.d/user.conf")
# Paths that change on any running system, or belong to the test rather than the package:
# the purge check compares everything else before install and after purge.
VOLATILE = (
    "/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/home", "/root", "/srv/iris-test",
    "/var/log", "/var/cache", "/var/lib/apt", "/var/lib/dpkg", "/var/lib/sudo",
    "/var/lib/systemd/timers", "/var/lib/systemd/coredump",
)  # fmt: skip


class Fail(Exception):
    """The step found something wrong; the message says what."""


def log(line: str) -> None:
    """One line to the live log (the host prints it) and to the journal."""
    with LOG.open("a") as f:
        f.write(line + "\n")
    print(line, flush=True)


def sh(
    cmd: list[str] | str,
    *,
    user: str | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float = 300,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command (a string goes through sh -c), as ``user`` if given; raise Fail on
    a non-zero exit when ``check``."""
    argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    if env:
        argv = ["env", *(f"{k}={v}" for k, v in env.items()), *argv]
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Fail(f"timed out after {timeout:.0f} s: {' '.join(argv)}") from None
    if check and out.returncode != 0:
        tail = (out.stdout + out.stderr).strip()[-1500:]
        raise Fail(f"exit {out.returncode}: {' '.join(argv)}\n{tail}")
    return out


def session_env(user: str) -> dict[str, str]:
    """What a command needs to act in ``user``'s session (runtime dir, session bus)."""
    runtime = f"/run/user/{USERS[user]}"
    return {"XDG_RUNTIME_DIR": runtime, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={runtime}/bus"}


def show(unit: str, user: str | None = None) -> dict[str, str]:
    """``systemctl show`` of a unit (in ``user``'s manager if given) as a dict."""
    scope = ["--user", "-M", f"{user}@"] if user else []
    out = sh(["systemctl", *scope, "show", "--no-pager", unit]).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def wait_for(what: str, predicate: Callable[[], bool], timeout: float, interval: float = 0.5) -> None:
    """Poll ``predicate`` until true; Fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise Fail(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


def snapshot() -> set[str]:
    """Every path on the root file system outside VOLATILE."""
    paths: set[str] = set()
    for top, dirs, files in os.walk("/", topdown=True):
        dirs[:] = [d for d in dirs if not os.path.join(top, d).startswith(VOLATILE)]
        for name in dirs + files:
            paths.add(os.path.join(top, name))
    return paths


class Runner:
    """Runs steps in order, records and prints each result."""

    def __init__(self, params: dict) -> None:
        self.params = params
        self.results: list[dict] = []
        self.aborted = False

    def step(self, name: str, fn: Callable[[], str | None], *, critical: bool = False) -> bool:
        """Run one step; a critical failure skips the remaining steps."""
        if self.aborted:
            self._record(name, "SKIP", 0.0, "an earlier critical step failed")
            return False
        start = time.monotonic()
        try:
            detail = fn() or ""
            status = "PASS"
        except Fail as exc:
            status, detail = "FAIL", str(exc)
        except Exception:  # a bug in the check itself still fails loudly, with its traceback
            status, detail = "FAIL", traceback.format_exc()
        self._record(name, status, time.monotonic() - start, detail)
        if status == "FAIL" and critical:
            self.aborted = True
        return status == "PASS"

    def _record(self, name: str, status: str, seconds: float, detail: str) -> None:
        self.results.append({"step": name, "status": status, "seconds": round(seconds, 2), "detail": detail})
        first, *rest = (detail or "").splitlines() or [""]
        log(f"{status:4} {name} ({seconds:.1f} s){': ' + first if first else ''}")
        for line in rest:
            log(f"       {line}")
        RESULTS.write_text(json.dumps({"params": self.params, "results": self.results}, indent=1))
