"""Service steps of the .deb install test (run by ``python3.11 -m tools.deb.checks`` in the
container): the three ways to run IRIS — the real daemon, ``iris run`` — come up READY in their
user's session, a second IRIS for the same user is refused without a restart loop,
``iris status`` answers over each control socket, a spoken question gets a spoken answer,
every daemon stays up (also the one whose user has no PipeWire at all: its audio problems
are logged and retried), and ``systemctl stop`` ends each one cleanly.

The three users' sessions differ on purpose: tester (``iris.service``) gets PipeWire
virtual devices for the spoken turn; tester2 (``iris@tester2``) has PipeWire masked, as
on a machine without a sound server; tester3 (user unit, lingering) has PipeWire with no
devices, as the user manager starts it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tools.deb.checks import resources, voice
from tools.deb.checks.common import USERS, Fail, session_env, sh, show, wait_for
from tools.deb.checks.iris_unit import check_instance, daemon_log, logs, scope, start, started

STOP_LIMIT_S = 3.0  # the daemon exits within 2 s of SIGTERM; plus closing the PAM session
STAY_UP_S = 10.0  # longer than RestartSec and than the capture's first retries
NO_PIPEWIRE_USER = "tester2"
PIPEWIRE_UNITS = (
    "pipewire.socket", "pipewire.service", "pipewire-pulse.socket", "pipewire-pulse.service",
    "wireplumber.service",
)  # fmt: skip
INSTANCES = (("iris.service", "tester", None), ("iris@tester2.service", "tester2", None),
             ("iris.service", "tester3", "tester3"))  # fmt: skip
"""(unit, the user it runs as, the user manager it lives in or None for the system)."""


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
            raise Fail(f"{unit}: {got}\n{logs(unit, 'tester')}")
        try:
            wait_for(
                "its reason", lambda: "IRIS is already running for this user" in daemon_log("tester", 50), 10
            )
        except Fail:
            raise Fail(f"{unit} did not say why it exited:\n{logs(unit, 'tester')}") from None
    finally:
        sh(["systemctl", "reset-failed", unit], check=False)
    return "exit 75 ('IRIS is already running for this user'), failed, NRestarts=0"


def _mask_pipewire(owner: str) -> None:
    """Mask PipeWire in ``owner``'s user manager (in the home: the purge check ignores it)."""
    units = Path("/home", owner, ".config", "systemd", "user")
    units.mkdir(parents=True, exist_ok=True)
    for name in PIPEWIRE_UNITS:
        link = units / name
        if not link.is_symlink():
            link.symlink_to("/dev/null")
    uid = USERS[owner]
    for path in (units.parent.parent, units.parent, units, *units.iterdir()):
        os.lchown(path, uid, uid)


def start_template() -> str:
    """``sudo systemctl enable --now iris@tester2``, in a session without PipeWire."""
    _mask_pipewire(NO_PIPEWIRE_USER)
    took = start("iris@tester2.service", enable=True)
    enabled = sh(["systemctl", "is-enabled", "iris@tester2.service"], check=False).stdout.strip()
    if enabled != "enabled":
        raise Fail(f"iris@tester2.service is {enabled!r} after enable")
    if Path(f"/run/user/{USERS[NO_PIPEWIRE_USER]}/pipewire-0").exists():
        raise Fail("PipeWire runs in tester2's session although it is masked")
    return f"READY in {took:.1f} s; enabled; no PipeWire; {check_instance('iris@tester2.service', 'tester2')}"


def start_user_unit() -> str:
    """``systemctl --user enable --now iris`` for tester3 (lingering)."""
    took = start("iris.service", user="tester3", enable=True)
    return f"READY in {took:.1f} s; {check_instance('iris.service', 'tester3', user='tester3')}"


def status_text() -> str:
    """``iris status`` as tester prints the daemon's state (what a user types)."""
    out = sh(["iris", "status"], user="tester", env=session_env("tester")).stdout
    first = out.splitlines()[0] if out.strip() else ""
    if not first.startswith("state:"):
        raise Fail(f"iris status printed {out[:300]!r}")
    return " | ".join(line.strip() for line in out.splitlines()[:4])


def stayed_up() -> str:
    """Each IRIS still runs as the process that said READY (no crash, no restart); the
    one without PipeWire logged its audio problem and keeps retrying."""
    if started:  # each daemon has run for at least STAY_UP_S
        time.sleep(max(0.0, STAY_UP_S - (time.monotonic() - max(t for _, t in started.values()))))
    found = []
    for unit, owner, user in INSTANCES:
        props = show(unit, user)
        where = f"{user}'s {unit}" if user else unit
        got = {k: props.get(k) for k in ("ActiveState", "SubState", "NRestarts")}
        if got != {"ActiveState": "active", "SubState": "running", "NRestarts": "0"}:
            raise Fail(f"{where}: {got}\n{logs(unit, owner, user)}")
        ready_pid = started.get((unit, user), (None, 0.0))[0]
        if int(props["MainPID"]) != ready_pid:
            raise Fail(f"{where}: pid {props['MainPID']}, not {ready_pid} that said READY")
        found.append(f"{where} pid {props['MainPID']}")
    lines = daemon_log(NO_PIPEWIRE_USER, lines=200).splitlines()
    problems = [
        line for line in lines
        if ("microphone" in line or "speaker" in line) and ("retrying" in line or "next try" in line)
    ]  # fmt: skip
    if not problems:
        raise Fail("tester2 has no PipeWire, yet IRIS logged no audio problem:\n" + "\n".join(lines[-20:]))
    return f"{', '.join(found)}; NRestarts=0; without PipeWire IRIS logs {problems[-1].strip()!r}"


def stop_all() -> str:
    """``systemctl stop`` ends each IRIS within STOP_LIMIT_S, with exit status 0."""
    timings = []
    for unit, _owner, user in INSTANCES:
        t0 = time.monotonic()
        sh(["systemctl", *scope(user), "stop", unit], timeout=60)
        took = time.monotonic() - t0
        props = show(unit, user)
        got = {k: props.get(k) for k in ("ActiveState", "Result", "ExecMainStatus")}
        where = f"{user}'s {unit}" if user else unit
        if got != {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": "0"}:
            raise Fail(f"{where} after stop: {got}\n{logs(unit, _owner, user)}")
        if took > STOP_LIMIT_S:
            raise Fail(f"{where} took {took:.1f} s to stop (limit {STOP_LIMIT_S} s)")
        timings.append(f"{where} {took:.1f} s")
    return "exit 0: " + ", ".join(timings)


def daemon_present() -> str:
    """The package carries the voice daemon (``iris run``)."""
    out = sh(["iris", "run", "--help"], user="tester", check=False)
    if out.returncode != 0:
        raise Fail(f"`iris run --help` exited {out.returncode}: {(out.stdout + out.stderr).strip()[-500:]}")
    return "iris run --help: ok"


def steps(params: dict, ctx: dict) -> list:
    """(name, function, critical) for the service steps."""
    return [
        ("iris run is in the package", daemon_present, True),
        ("sudo systemctl start iris: READY as tester in tester's session", start_system, False),
        ("a second IRIS for tester exits 75 and is not restarted", second_instance, False),
        ("sudo systemctl enable --now iris@tester2 (no PipeWire): READY", start_template, False),
        ("systemctl --user enable --now iris (tester3, linger): READY", start_user_unit, False),
        ("iris status over the control socket (tester)", status_text, False),
        (
            "spoken question on tester's virtual mic gets a spoken answer",
            lambda: voice.spoken_turn(params, ctx),
            False,
        ),
        *resources.steps(),
        ("every IRIS stayed up; without PipeWire, audio problems are logged", stayed_up, False),
        (f"systemctl stop: each IRIS exits 0 within {STOP_LIMIT_S:.0f} s", stop_all, False),
    ]
