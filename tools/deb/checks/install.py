"""Install-side steps of the .deb install test (run by ``python3.11 -m tools.deb.checks``
inside the container): users, ``sudo apt install``, the command, the speech models, the units and their
hardening, the debconf user; at the end the upgrade and the purge."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from tools.deb.checks import iris_unit
from tools.deb.checks.common import (
    CONFIG,
    DROPIN,
    USERS,
    WORK,
    Fail,
    session_env,
    sh,
    show,
    snapshot,
    wait_for,
)

DEB_DIR = WORK / "debs"
UPGRADE_DIR = WORK / "upgrade"
VENV_PYTHON = "/usr/lib/iris/venv/bin/python"
MODELS = Path("/usr/share/iris/models")
MODEL_FILES = [
    *(f"whisper-tiny.en/{n}" for n in ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")),
    *(f"whisper-base/{n}" for n in ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")),
    "piper/en_US-joe-medium.onnx",
    "piper/en_US-joe-medium.onnx.json",
    "smart-turn/smart-turn-v3.2-cpu.onnx",
    "smart-turn/LICENSE",
]
MAX_EXPOSURE = 2.0
ROUNDTRIP = """
import sys, numpy as np
from piper import PiperVoice
from faster_whisper import WhisperModel
m = "/usr/share/iris/models"
onnx = m + "/piper/en_US-joe-medium.onnx"
voice = PiperVoice.load(onnx, config_path=onnx + ".json")
chunks = list(voice.synthesize("What time is it in Tokyo?"))
audio = np.concatenate([c.audio_float_array for c in chunks])
rate = chunks[0].sample_rate
audio16k = np.interp(np.arange(0, len(audio), rate / 16000), np.arange(len(audio)), audio).astype(np.float32)
model = WhisperModel(m + "/whisper-tiny.en", device="cpu", compute_type="int8", cpu_threads=2)
segments, _ = model.transcribe(audio16k, language="en", beam_size=1)
print(" ".join(s.text.strip() for s in segments))
"""


def booted() -> str:
    """The container reached multi-user.target with D-Bus and logind (this step runs in
    the boot transaction itself, so the system is still "starting")."""
    for unit in ("multi-user.target", "dbus.service", "systemd-logind.service"):
        wait_for(unit, lambda u=unit: sh(["systemctl", "is-active", u], check=False).returncode == 0, 120)
    failed = sh(["systemctl", "--failed", "--no-legend", "--plain"]).stdout.strip()
    return f"multi-user.target, dbus, logind active; failed units: {failed or 'none'}"


def apt_as_tester(*args: str, cwd: Path) -> str:
    """``sudo apt-get ARGS`` run by tester, as a user would (SUDO_USER=tester)."""
    cmd = ["sudo", "-n", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "-q", *args]
    out = sh(cmd, user="tester", cwd=str(cwd), timeout=900)
    summary = [line for line in out.stdout.splitlines() if re.match(r"\d+ upgraded", line)]
    return summary[0] if summary else ""


def installed_version(package: str) -> str:
    """The installed version of ``package``, or "" when it is not installed."""
    out = sh(["dpkg-query", "-W", "-f=${db:Status-Abbrev}|${Version}", package], check=False)
    status, _, version = out.stdout.partition("|")
    return version if status.startswith("ii") else ""


def make_users(ctx: dict) -> str:
    """tester2 is the first regular user, tester installs (sudo), tester3 lingers."""
    for name, uid in sorted(USERS.items(), key=lambda kv: kv[1]):
        if sh(["id", name], check=False).returncode != 0:
            sh(["useradd", "--create-home", "--uid", str(uid), "--shell", "/bin/bash", name])
    sudoers = Path("/etc/sudoers.d/tester")
    sudoers.write_text("tester ALL=(ALL:ALL) NOPASSWD: ALL\n")
    sudoers.chmod(0o440)
    sh(["loginctl", "enable-linger", "tester3"])
    wait_for("tester3's user manager", lambda: Path(f"/run/user/{USERS['tester3']}/bus").exists(), 60)
    ctx["before"] = snapshot()
    return f"{len(ctx['before'])} paths on the file system before the install"


def install(params: dict, ctx: dict) -> str:
    """sudo apt install ./iris_*.deb ./iris-speech-models_*.deb, from tester's shell."""
    debs = sorted(p.name for p in DEB_DIR.glob("*.deb"))
    if len(debs) != 2:
        raise Fail(f"expected the iris and iris-speech-models packages in {DEB_DIR}, found {debs}")
    summary = apt_as_tester("install", *(f"./{d}" for d in debs), cwd=DEB_DIR)
    for package in ("iris", "iris-speech-models"):
        if installed_version(package) != params["version"]:
            raise Fail(f"{package} is not installed at {params['version']} ({installed_version(package)!r})")
    return f"{' '.join(debs)}: {summary}"


def version(params: dict) -> str:
    """``iris --version`` prints the packaged version."""
    out = sh(["iris", "--version"], user="tester").stdout.strip()
    if out != f"iris {params['upstream_version']}":
        raise Fail(f"iris --version printed {out!r}, expected 'iris {params['upstream_version']}'")
    return out


def check_config() -> str:
    """The shipped /etc/iris/config.toml is valid, and is the one tester's iris loads."""
    for args in ([], [str(CONFIG)]):
        out = sh(["iris", "check-config", *args], user="tester").stdout.strip()
        if out != "ok":
            raise Fail(f"iris check-config {' '.join(args)} printed {out!r}")
    return "ok (default lookup and /etc/iris/config.toml)"


def models_present() -> str:
    """Every file iris_voice.speech.model_files looks for under /usr/share/iris/models."""
    missing = [f for f in MODEL_FILES if not (MODELS / f).is_file()]
    if missing:
        raise Fail(f"missing: {', '.join(missing)}")
    total = sum((MODELS / f).stat().st_size for f in MODEL_FILES)
    return f"{len(MODEL_FILES)} files, {total / 1e6:.0f} MB"


def models_roundtrip() -> str:
    """The packaged voice and Whisper tiny.en work with the packaged venv."""
    text = sh([VENV_PYTHON, "-c", ROUNDTRIP], user="tester", timeout=300).stdout.strip()
    if "tokyo" not in text.lower():
        raise Fail(f"Whisper heard {text!r} for 'What time is it in Tokyo?'")
    return f"heard {text!r}"


def verify_units() -> str:
    """``systemd-analyze verify`` prints nothing for any of the three units."""
    problems = []
    system = sh(
        "systemd-analyze verify /lib/systemd/system/iris.service /lib/systemd/system/iris@.service 2>&1",
        check=False,
    )
    if system.returncode or system.stdout.strip():
        problems.append(f"system units (exit {system.returncode}): {system.stdout.strip()}")
    user = sh(
        "systemd-analyze --user verify /usr/lib/systemd/user/iris.service 2>&1",
        user="tester3",
        env=session_env("tester3"),
        check=False,
    )
    if user.returncode or user.stdout.strip():
        problems.append(f"user unit (exit {user.returncode}): {user.stdout.strip()}")
    if problems:
        raise Fail("\n".join(problems))
    return "clean: iris.service, iris@.service, user iris.service"


def _exposure(out: str) -> float:
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", out)
    if not m:
        raise Fail(f"no exposure level in: {out[-500:]}")
    return float(m.group(1))


def security(ctx: dict) -> str:
    """Exposure of the system units as installed (with the debconf drop-in) <= MAX_EXPOSURE."""
    figures = {}
    for unit in ("iris.service", "iris@tester2.service"):
        figures[unit] = _exposure(sh(["systemd-analyze", "security", "--no-pager", unit]).stdout)
    user = sh(
        ["systemd-analyze", "--user", "security", "--no-pager", "iris.service"],
        user="tester3",
        env=session_env("tester3"),
        check=False,
    )
    ctx["security"] = dict(figures)
    detail = ", ".join(f"{u} {v:.1f}" for u, v in figures.items())
    if user.returncode == 0:
        ctx["security"]["user iris.service"] = _exposure(user.stdout)
        detail += f"; user iris.service {ctx['security']['user iris.service']:.1f} (no limit for user units)"
    too_high = [u for u, v in figures.items() if v > MAX_EXPOSURE]
    if too_high:
        raise Fail(f"exposure above {MAX_EXPOSURE}: {detail}")
    return detail


def _dropin_user() -> str:
    if not DROPIN.exists():
        return ""
    found = re.findall(r"^User=(\S+)$", DROPIN.read_text(), re.M)
    if "PAMName=iris" not in DROPIN.read_text().splitlines():
        raise Fail(f"{DROPIN} has no PAMName=iris")
    return found[-1] if found else ""


def dropin_and_enablement() -> str:
    """SUDO_USER is the default user; the package enables nothing."""
    if _dropin_user() != "tester":
        raise Fail(f"{DROPIN} names {_dropin_user()!r}, expected the installing user 'tester'")
    if show("iris.service").get("User") != "tester":
        raise Fail(f"systemctl show iris: User={show('iris.service').get('User')!r}")
    states = {
        name: sh(["systemctl", *scope, "is-enabled", unit], check=False).stdout.strip()
        for name, scope, unit in (
            ("iris.service", [], "iris.service"),
            ("iris@tester2.service", [], "iris@tester2.service"),
            ("user iris.service", ["--global"], "iris.service"),
        )
    }
    enabled = {u: s for u, s in states.items() if s != "disabled"}
    if enabled:
        raise Fail(f"not disabled after install: {enabled}")
    return "drop-in User=tester PAMName=iris; all three units disabled"


def _reconfigure(answer: str | None) -> str:
    """dpkg-reconfigure with ``answer`` preseeded (None: reset the question to unseen)."""
    if answer is None:
        sh("printf 'RESET iris/user\\nFSET iris/user seen false\\n' | debconf-communicate iris")
    else:
        sh(f"echo 'iris iris/user string {answer}' | debconf-set-selections")
    out = sh(["dpkg-reconfigure", "-fnoninteractive", "iris"])
    return out.stdout + out.stderr


def reconfigure() -> str:
    """dpkg-reconfigure changes the user; no answer falls back to the first regular user;
    a missing user removes the drop-in with a message."""
    _reconfigure("tester3")
    if _dropin_user() != "tester3" or show("iris.service").get("User") != "tester3":
        raise Fail(f"after dpkg-reconfigure to tester3 the drop-in names {_dropin_user()!r}")
    _reconfigure(None)
    if _dropin_user() != "tester2":
        raise Fail(f"with no answer and no SUDO_USER the user is {_dropin_user()!r}, not tester2 (uid 1000)")
    out = _reconfigure("nosuchuser")
    if DROPIN.exists() or "there is no user" not in out:
        raise Fail(f"a missing user left {DROPIN} or said nothing: {out.strip()!r}")
    _reconfigure("tester")
    if _dropin_user() != "tester":
        raise Fail("could not set the user back to tester")
    return "tester3, then tester2 (first regular user), nosuchuser (no drop-in, message), tester"


def root_guard() -> str:
    """Without a configured user, iris.service fails with exit 78 instead of running as root."""
    _reconfigure("")
    try:
        started = sh(["systemctl", "start", "iris.service"], check=False, timeout=60)
        if started.returncode == 0:
            raise Fail("iris.service started without a user (as root)")
        time.sleep(7)  # longer than RestartSec: a restart would have happened by now
        props = show("iris.service")
        journal = sh(["journalctl", "-u", "iris.service", "-o", "cat", "--no-pager", "-n", "20"]).stdout
        if "has no desktop user" not in journal:
            raise Fail(f"no explanation in the journal: {journal[-500:]}")
        got = {k: props.get(k) for k in ("ExecMainStatus", "ActiveState", "NRestarts")}
        if got != {"ExecMainStatus": "78", "ActiveState": "failed", "NRestarts": "0"}:
            raise Fail(f"iris.service without a user: {got}")
    finally:
        sh(["systemctl", "reset-failed", "iris.service"], check=False)
        _reconfigure("tester")
    return "exit 78 with 'has no desktop user… run sudo dpkg-reconfigure iris', NRestarts=0"


def steps(params: dict, ctx: dict) -> list:
    """(name, function, critical) for the steps before the services start."""
    return [
        ("users: tester2 (uid 1000), tester (sudo), tester3 (linger)", lambda: make_users(ctx), True),
        ("sudo apt install ./iris_*.deb ./iris-speech-models_*.deb", lambda: install(params, ctx), True),
        ("iris --version", lambda: version(params), False),
        ("iris check-config", check_config, False),
        ("speech models in /usr/share/iris/models", models_present, False),
        ("speech models: Piper speaks, Whisper hears", models_roundtrip, False),
        ("systemd-analyze verify: iris.service, iris@.service, user unit", verify_units, False),
        (f"systemd-analyze security: system units <= {MAX_EXPOSURE}", lambda: security(ctx), False),
        ("debconf: iris.service runs as the installing user; nothing enabled", dropin_and_enablement, False),
        ("dpkg-reconfigure iris changes the user", reconfigure, False),
        ("iris.service without a user refuses root, no restart loop", root_guard, False),
    ]


def upgrade(params: dict, ctx: dict) -> str:
    """A higher version keeps the edited config, tester's timers and the user, and
    restarts the running iris.service."""
    edited = CONFIG.read_text().replace('model = "qwen2.5-coder:1.5b"', 'model = "kept-by-upgrade:1b"')
    if "kept-by-upgrade" not in edited:
        raise Fail(f"cannot find the llm.model line to edit in {CONFIG}")
    CONFIG.write_text(edited)
    timer = '{"duration": "2 hours", "label": "upgrade check"}'
    out = json.loads(sh(["iris", "tools", "call", "set_timer", timer], user="tester").stdout)
    if not out.get("ok"):
        raise Fail(f"set_timer failed: {out}")
    db = Path("/home/tester/.local/state/iris/timers.db")
    if not db.is_file():
        raise Fail(f"no timers database at {db}")
    iris_unit.start("iris.service")
    pid_before = show("iris.service")["MainPID"]
    wait_for("the host's upgrade package", lambda: any(UPGRADE_DIR.glob("iris_*.deb")), 300)
    debs = sorted(p.name for p in UPGRADE_DIR.glob("iris_*.deb"))
    summary = apt_as_tester("install", *(f"./{d}" for d in debs), cwd=UPGRADE_DIR)
    now = installed_version("iris")
    if now != params["upgrade_version"]:
        raise Fail(f"iris is at {now!r} after the upgrade, not {params['upgrade_version']}")
    if "kept-by-upgrade" not in CONFIG.read_text():
        raise Fail(f"the edit in {CONFIG} was lost")
    leftovers = [p.name for p in CONFIG.parent.iterdir() if ".dpkg-" in p.name]
    if leftovers:
        raise Fail(f"dpkg left {leftovers} in {CONFIG.parent}")
    timers = sh(["iris", "tools", "call", "list_timers"], user="tester").stdout
    if "upgrade check" not in timers:
        raise Fail(f"the timer is gone after the upgrade: {timers}")
    if _dropin_user() != "tester":
        raise Fail(f"the drop-in names {_dropin_user()!r} after the upgrade")
    wait_for("iris.service active again", lambda: show("iris.service")["ActiveState"] == "active", 60)
    if show("iris.service")["MainPID"] == pid_before:
        raise Fail("iris.service was not restarted by the upgrade")
    versions = f"{params['version']} -> {params['upgrade_version']}"
    return f"{versions} ({summary}); config edit, timer, user kept; restarted"


def _iris_processes() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "/usr/lib/iris/" in cmdline or "/usr/bin/iris " in cmdline:
            found.append(f"{pid}: {cmdline.strip()}")
    return found


def purge(ctx: dict) -> str:
    """apt purge stops every running IRIS and leaves no file outside the users' homes."""
    iris_unit.start("iris.service")
    iris_unit.start("iris@tester2.service")
    iris_unit.start("iris.service", user="tester3")
    apt_as_tester("purge", "iris", "iris-speech-models", cwd=WORK)
    problems = []
    try:
        wait_for("every IRIS process gone", lambda: not _iris_processes(), 20)
    except Fail:
        problems.append("still running: " + "; ".join(_iris_processes()))
    after = snapshot()
    added = sorted(after - ctx["before"])
    removed = sorted(ctx["before"] - after)
    if added:
        problems.append(f"{len(added)} paths left behind: " + ", ".join(added[:30]))
    debconf = sh(["debconf-show", "iris"], check=False).stdout.strip()
    if debconf:
        problems.append(f"debconf still has: {debconf}")
    if show("iris.service").get("LoadState") != "not-found":
        problems.append(f"iris.service still loads: {show('iris.service').get('LoadState')}")
    if problems:
        raise Fail("\n".join(problems))
    note = f"; {len(removed)} paths that existed before are gone: {removed[:10]}" if removed else ""
    return f"no IRIS process, no file left outside /home (tester3's own enable link stays there){note}"


def final_steps(params: dict, ctx: dict) -> list:
    """(name, function, critical) for the steps after the services."""
    return [
        ("upgrade keeps config, timers, user; restarts IRIS", lambda: upgrade(params, ctx), False),
        ("apt purge: IRIS stopped everywhere, nothing left behind", lambda: purge(ctx), False),
    ]
