"""Service steps of the .deb install test (run by deb_checks.py inside the container):
the three ways to run IRIS — the real daemon, ``iris run`` — come up READY in their
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

import json
import os
import stat
import time
from pathlib import Path

import deb_checks_voice
from deb_checks import USERS, Fail, session_env, sh, show, wait_for

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
_started: dict[tuple[str, str | None], tuple[int, float]] = {}
"""MainPID of each instance when it came up (and when), to prove it stayed up."""


def _scope(user: str | None) -> list[str]:
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
    out = sh(["systemctl", *_scope(user), *argv, unit], check=False, timeout=240)
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
    _started[(unit, user)] = (pid, time.monotonic())
    models = answer["models"]
    return (
        f"pid {pid} uid {uid}, XDG_RUNTIME_DIR={runtime}, control.sock 0600; "
        f"iris status: {answer['state']}, stt {models['stt']}, tts {models['tts']}, wake {models['wake']}"
    )


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
    if _started:  # each daemon has run for at least STAY_UP_S
        time.sleep(max(0.0, STAY_UP_S - (time.monotonic() - max(t for _, t in _started.values()))))
    found = []
    for unit, owner, user in INSTANCES:
        props = show(unit, user)
        where = f"{user}'s {unit}" if user else unit
        got = {k: props.get(k) for k in ("ActiveState", "SubState", "NRestarts")}
        if got != {"ActiveState": "active", "SubState": "running", "NRestarts": "0"}:
            raise Fail(f"{where}: {got}\n{logs(unit, owner, user)}")
        ready_pid = _started.get((unit, user), (None, 0.0))[0]
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
        sh(["systemctl", *_scope(user), "stop", unit], timeout=60)
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
            lambda: deb_checks_voice.spoken_turn(params, ctx),
            False,
        ),
        ("every IRIS stayed up; without PipeWire, audio problems are logged", stayed_up, False),
        (f"systemctl stop: each IRIS exits 0 within {STOP_LIMIT_S:.0f} s", stop_all, False),
    ]
