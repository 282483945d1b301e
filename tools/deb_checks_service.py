"""Service steps of the .deb install test (run by deb_checks.py inside the container):
the three ways to run IRIS come up READY in their user's session, a second IRIS for
the same user is refused without a restart loop, ``iris status`` answers, a spoken
question gets a spoken answer, and ``systemctl stop`` ends each one cleanly.

Without ``iris run`` in the build, the units run ``deb_probe.py`` instead (runtime
drop-ins in /run), which follows the daemon's service contract; the daemon-only steps
are skipped with "SKIP: daemon not in this build".
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import deb_checks_voice
from deb_checks import HERE, USERS, Fail, Skip, session_env, sh, show, wait_for

PROBE = HERE / "deb_probe.py"
PROBE_DROPINS = [
    Path("/run/systemd/system/iris.service.d/zz-install-test-probe.conf"),
    Path("/run/systemd/system/iris@.service.d/zz-install-test-probe.conf"),
    Path("/run/systemd/user/iris.service.d/zz-install-test-probe.conf"),
]
STOP_LIMIT_S = 3.0  # the daemon exits within 2 s of SIGTERM; plus closing the PAM session
_daemon = {"present": False}


def _scope(user: str | None) -> list[str]:
    return ["--user", "-M", f"{user}@"] if user else []


def _reload() -> None:
    sh(["systemctl", "daemon-reload"])
    sh(["systemctl", "--user", "-M", "tester3@", "daemon-reload"], check=False)


def detect() -> str:
    """Does the installed build have the daemon (``iris run``)? If not, use the probe."""
    if sh(["iris", "run", "--help"], user="tester", check=False).returncode == 0:
        _daemon["present"] = True
        return "yes: the units run `iris run`"
    os.chmod(HERE, 0o755)
    for dropin in PROBE_DROPINS:
        dropin.parent.mkdir(parents=True, exist_ok=True)
        dropin.write_text(
            "# The .deb install test: the daemon is not in this build, run its stand-in.\n"
            f"[Service]\nExecStart=\nExecStart=/usr/lib/iris/venv/bin/python {PROBE}\n"
        )
    _reload()
    return "no: the units run tools/deb_probe.py (the daemon's service contract) in its place"


def remove_probe() -> None:
    """Remove the probe's runtime drop-ins (before the purge's file comparison)."""
    for dropin in PROBE_DROPINS:
        dropin.unlink(missing_ok=True)
    _reload()


def need_daemon() -> None:
    """Skip a step that only the real daemon can pass."""
    if not _daemon["present"]:
        raise Skip("daemon not in this build")


def _journal(unit: str, user: str | None = None) -> str:
    if user:
        select = [f"_UID={USERS[user]}", "--user-unit", unit]
    else:
        select = ["-u", unit]
    return sh(["journalctl", *select, "-o", "cat", "-n", "30", "--no-pager"], check=False).stdout.strip()


def start(unit: str, user: str | None = None, enable: bool = False) -> float:
    """``systemctl [--user -M user@] [enable --now|start] unit``; returns the seconds it
    took (Type=notify: systemctl returns once the service said READY=1)."""
    verb = ["enable", "--now"] if enable else ["start"]
    t0 = time.monotonic()
    out = sh(["systemctl", *_scope(user), *verb, unit], check=False, timeout=240)
    if out.returncode != 0:
        raise Fail(f"systemctl {' '.join(verb)} {unit} failed: {out.stderr.strip()}\n{_journal(unit, user)}")
    return time.monotonic() - t0


def _main_process(unit: str, user: str | None) -> tuple[int, int, dict[str, str]]:
    props = show(unit, user)
    if (props.get("ActiveState"), props.get("SubState")) != ("active", "running"):
        raise Fail(f"{unit}: {props.get('ActiveState')}/{props.get('SubState')}\n{_journal(unit, user)}")
    pid = int(props["MainPID"])
    status = Path(f"/proc/{pid}/status").read_text()
    uid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:")))
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    return pid, uid, env


def check_instance(unit: str, owner: str, user: str | None = None) -> str:
    """The running IRIS is ``owner``'s, in ``owner``'s session, with its control socket."""
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
    detail = f"pid {pid} uid {uid}, XDG_RUNTIME_DIR={runtime}, control.sock 0600"
    if not _daemon["present"]:
        facts = json.loads(Path(runtime, "iris", "probe.json").read_text())
        bad = {
            k: facts[k]
            for k, ok in (
                ("pipewire", facts["pipewire"] == "ok"),
                ("pulse_server", "PipeWire" in facts["pulse_server"]),
                ("no_new_privs", facts["no_new_privs"] == "1"),
                ("seccomp", facts["seccomp"] == "2"),
                ("capture", not facts["capture"].startswith("error")),
                ("models", not facts["models"].startswith("error")),
            )
            if not ok
        }
        if bad:
            raise Fail(f"{unit} in its sandbox: {bad}")
        detail += f"; PipeWire socket ok, pactl: {facts['pulse_server']}; seccomp, no_new_privs"
        detail += f"; capture {facts['capture'][:60]}; models {facts['models'][:60]}"
    return detail


def start_system() -> str:
    """``sudo systemctl start iris``: READY as tester, in tester's logind session."""
    took = start("iris.service")
    detail = check_instance("iris.service", "tester")
    sessions = sh(["loginctl", "list-sessions", "--no-legend"]).stdout
    if "tester " not in sessions.replace("\t", " ") + " ":
        raise Fail(f"no logind session of tester: {sessions}")
    return f"READY in {took:.1f} s; {detail}"


def second_instance() -> str:
    """iris@tester while iris.service (tester) runs: exit 75, failed, not restarted."""
    unit = "iris@tester.service"
    try:
        if sh(["systemctl", "start", unit], check=False, timeout=120).returncode == 0:
            raise Fail("a second IRIS started for tester")
        time.sleep(7)  # longer than RestartSec: a restart would have happened by now
        props = show(unit)
        got = {k: props.get(k) for k in ("ExecMainStatus", "Result", "ActiveState", "NRestarts")}
        if got != {"ExecMainStatus": "75", "Result": "exit-code", "ActiveState": "failed", "NRestarts": "0"}:
            raise Fail(f"{unit}: {got}\n{_journal(unit)}")
    finally:
        sh(["systemctl", "reset-failed", unit], check=False)
    return "exit 75, failed, NRestarts=0 (RestartPreventExitStatus)"


def start_template() -> str:
    """``sudo systemctl enable --now iris@tester2``."""
    took = start("iris@tester2.service", enable=True)
    enabled = sh(["systemctl", "is-enabled", "iris@tester2.service"], check=False).stdout.strip()
    if enabled != "enabled":
        raise Fail(f"iris@tester2.service is {enabled!r} after enable")
    return f"READY in {took:.1f} s; enabled; {check_instance('iris@tester2.service', 'tester2')}"


def start_user_unit() -> str:
    """``systemctl --user enable --now iris`` for tester3 (lingering)."""
    took = start("iris.service", user="tester3", enable=True)
    return f"READY in {took:.1f} s; {check_instance('iris.service', 'tester3', user='tester3')}"


def status() -> str:
    """``iris status --json`` as tester reaches iris.service over the control socket."""
    need_daemon()
    out = sh(["iris", "status", "--json"], user="tester", env=session_env("tester"))
    try:
        data = json.loads(out.stdout)
    except json.JSONDecodeError:
        raise Fail(f"not JSON: {out.stdout[:300]!r}") from None
    return f"keys: {', '.join(sorted(data)) if isinstance(data, dict) else type(data).__name__}"


def stop_all() -> str:
    """``systemctl stop`` ends each IRIS within STOP_LIMIT_S, with exit status 0."""
    timings = []
    for unit, user in (("iris.service", None), ("iris@tester2.service", None), ("iris.service", "tester3")):
        t0 = time.monotonic()
        sh(["systemctl", *_scope(user), "stop", unit], timeout=60)
        took = time.monotonic() - t0
        props = show(unit, user)
        got = {k: props.get(k) for k in ("ActiveState", "Result", "ExecMainStatus")}
        where = f"{user}'s {unit}" if user else unit
        if got != {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": "0"}:
            raise Fail(f"{where} after stop: {got}\n{_journal(unit, user)}")
        if took > STOP_LIMIT_S:
            raise Fail(f"{where} took {took:.1f} s to stop (limit {STOP_LIMIT_S} s)")
        timings.append(f"{where} {took:.1f} s")
    return "exit 0: " + ", ".join(timings)


def steps(params: dict, ctx: dict) -> list:
    """(name, function, critical) for the service steps."""
    return [
        ("daemon: is `iris run` in this build?", detect, True),
        ("sudo systemctl start iris: READY as tester in tester's session", start_system, False),
        ("a second IRIS for tester exits 75 and is not restarted", second_instance, False),
        ("sudo systemctl enable --now iris@tester2: READY", start_template, False),
        ("systemctl --user enable --now iris (tester3, linger): READY", start_user_unit, False),
        ("iris status --json over the control socket", status, False),
        (
            "spoken question on tester's virtual mic gets a spoken answer",
            lambda: deb_checks_voice.spoken_turn(params, _daemon["present"]),
            False,
        ),
        (f"systemctl stop: each IRIS exits 0 within {STOP_LIMIT_S:.0f} s", stop_all, False),
    ]
