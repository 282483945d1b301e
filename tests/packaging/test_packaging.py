"""The Debian packaging's static facts, and the service contract the units rely on.

The install test (``make test-deb``) proves all of this under a booted systemd with the
real daemon; these checks catch the common slips in seconds: a version bump without a changelog entry, the
two system units' hardening drifting apart, a unit losing Type=notify or the exit codes
that must not restart, an install list naming a missing file, a model pin without a hash.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iris_voice.app.runtime import InstanceLock
from tools.deb import version as deb_version

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_UNIT = ROOT / "packaging" / "systemd" / "iris.service"
TEMPLATE_UNIT = ROOT / "packaging" / "systemd" / "iris@.service"
USER_UNIT = ROOT / "packaging" / "systemd-user" / "iris.service"


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit file as {section: {key: [values in order]}} (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


def test_changelog_carries_the_package_version():
    assert deb_version.main(["--check"]) == 0


@pytest.mark.parametrize(
    ("pep440", "debian"),
    [
        ("0.1.0", "0.1.0"),
        ("0.2.0rc1", "0.2.0~rc1"),
        ("1.0.0b2", "1.0.0~b2"),
        ("1.0.dev3", "1.0~dev3"),
        ("1.0.post1", "1.0+post1"),
    ],
)
def test_debian_version_sorts_like_pep440(pep440, debian):
    assert deb_version.debian_version(pep440) == debian
    if shutil.which("dpkg") and "~" in debian:
        release = debian.split("~")[0]
        assert subprocess.run(["dpkg", "--compare-versions", debian, "lt", release]).returncode == 0


def test_system_units_share_their_hardening():
    per_instance = {"User", "PAMName", "ExecStart"}
    system = {k: v for k, v in parse_unit(SYSTEM_UNIT)["Service"].items() if k not in per_instance}
    template = {k: v for k, v in parse_unit(TEMPLATE_UNIT)["Service"].items() if k not in per_instance}
    assert system == template


@pytest.mark.parametrize(
    "unit", [SYSTEM_UNIT, TEMPLATE_UNIT, USER_UNIT], ids=lambda p: p.parent.name + "/" + p.name
)
def test_units_follow_the_daemon_contract(unit):
    service = parse_unit(unit)["Service"]
    assert service["Type"] == ["notify"]
    assert service["Restart"] == ["on-failure"]
    # 75: another IRIS runs for this user; 78: bad configuration. Restarting helps neither.
    assert {"75", "78"} <= set(service["RestartPreventExitStatus"][0].split())
    assert "iris run" in service["ExecStart"][-1]
    assert parse_unit(unit)["Install"]["WantedBy"]


@pytest.mark.parametrize(
    "unit", [SYSTEM_UNIT, TEMPLATE_UNIT, USER_UNIT], ids=lambda p: p.parent.name + "/" + p.name
)
def test_units_limit_memory_tasks_and_files(unit):
    service = parse_unit(unit)["Service"]
    assert service["MemoryMax"] == ["2G"] and service["TasksMax"] == ["256"]
    assert service["LimitNOFILE"] == ["1024"]


def test_system_units_apply_their_limits_to_the_session_scope_and_write_only_home_and_run_user():
    for unit in (SYSTEM_UNIT, TEMPLATE_UNIT):
        service = parse_unit(unit)["Service"]
        assert service["ExecStartPost"] == ["-+/usr/lib/iris/iris-session-limits %n $MAINPID"]
        assert service["ProtectSystem"] == ["strict"]
        assert service["ReadWritePaths"] == ["-/home -/run/user"]
    script = ROOT / "packaging" / "systemd" / "iris-session-limits"
    assert os.access(script, os.X_OK)
    install = (ROOT / "debian" / "iris.install").read_text()
    assert "packaging/systemd/iris-session-limits usr/lib/iris/" in install


def test_session_limits_leave_a_daemon_outside_a_session_scope_alone(tmp_path):
    """In the unit's own cgroup (here: this test's), the script changes nothing: it calls
    no systemctl (a fake one on PATH records calls)."""
    script = ROOT / "packaging" / "systemd" / "iris-session-limits"
    if "session-" in Path(f"/proc/{os.getpid()}/cgroup").read_text():
        pytest.skip("this test runs inside a logind session scope")
    (tmp_path / "sed").symlink_to(shutil.which("sed"))
    fake = tmp_path / "systemctl"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\n')
    fake.chmod(0o755)
    out = subprocess.run(
        ["/bin/sh", str(script), "iris.service", str(os.getpid())],
        env={"PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert not (tmp_path / "calls").exists()


def test_system_units_open_a_pam_session_for_their_user():
    template = parse_unit(TEMPLATE_UNIT)["Service"]
    assert template["User"] == ["%i"] and template["PAMName"] == ["iris"]
    # iris.service gets User= and PAMName= from the drop-in that debconf writes.
    assert "User" not in parse_unit(SYSTEM_UNIT)["Service"]
    assert "PAMName=iris" in (ROOT / "debian" / "iris.postinst").read_text()
    assert "session required pam_systemd.so" in (ROOT / "packaging" / "pam" / "iris").read_text()


def test_install_lists_name_existing_files():
    for name in ("iris.install", "iris.manpages", "iris.docs"):
        for line in (ROOT / "debian" / name).read_text().splitlines():
            if line.strip():
                assert (ROOT / line.split()[0]).exists(), f"debian/{name}: {line}"


def test_speech_models_are_pinned_with_hashes():
    pins = [
        line
        for line in (ROOT / "requirements" / "speech-models.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(pins) == 4
    for line in pins:
        assert re.fullmatch(r"[a-z0-9-]+==[0-9.]+ --hash=sha256:[0-9a-f]{64}", line), line


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
@pytest.mark.parametrize("unit", [SYSTEM_UNIT, TEMPLATE_UNIT], ids=["iris.service", "iris@.service"])
def test_system_units_exposure_at_most_2(unit, tmp_path):
    # As installed: iris.service with the debconf drop-in, the template for one user.
    name = "iris@tester.service" if unit == TEMPLATE_UNIT else "iris.service"
    shutil.copy(unit, tmp_path / name)
    dropin = tmp_path / f"{name}.d"
    dropin.mkdir()
    (dropin / "user.conf").write_text("[Service]\nUser=tester\nPAMName=iris\n")
    out = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    exposure = float(re.search(r"Overall exposure level for \S+: ([0-9.]+)", out).group(1))
    assert exposure <= 2.0, out


@pytest.mark.parametrize("case", ["lock-held", "bad-config"])
def test_daemon_exits_with_a_status_the_units_do_not_restart(case, tmp_path):
    """`iris run` when IRIS already runs for the user (the lock is held) or the config is
    invalid exits with a status the units list in RestartPreventExitStatus, saying why:
    systemd must not restart it every RestartSec."""
    runtime = tmp_path / "run"
    (runtime / "iris").mkdir(parents=True, mode=0o700)
    config = tmp_path / "config.toml"
    valid = '[llm]\nhost = "http://127.0.0.1:9"\n'
    config.write_text(valid if case == "lock-held" else "[llm]\nnum_ctx = -1\n")
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "IRIS_CONFIG": str(config)}
    lock = InstanceLock(runtime / "iris" / "lock")
    lock.acquire()
    try:
        cmd = [sys.executable, "-m", "iris_voice.cli", "run"]
        out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        lock.release()
    expected, says = (75, "already running for this user") if case == "lock-held" else (78, "llm.num_ctx")
    assert out.returncode == expected, out.stderr
    assert says in out.stderr
    for unit in (SYSTEM_UNIT, TEMPLATE_UNIT, USER_UNIT):
        assert str(expected) in parse_unit(unit)["Service"]["RestartPreventExitStatus"][0].split()


def _container_module(name: str):
    """A module of the install test's container side (the package tools.deb.checks)."""
    return importlib.import_module(f"tools.deb.checks.{name}")


def test_container_checks_need_only_the_standard_library():
    # They run with the container's /usr/bin/python3.11, before and after IRIS is installed.
    container = [ROOT / "tools" / "__init__.py", ROOT / "tools" / "deb" / "__init__.py"]
    for path in container + sorted((ROOT / "tools" / "deb" / "checks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            for name in names:
                top, checks = name.split(".")[0], name.startswith("tools.deb.checks")
                assert top in sys.stdlib_module_names or checks, f"{path.relative_to(ROOT)}: {name}"


@pytest.mark.parametrize(
    ("said", "heard", "share"),
    [
        ("The answer is 1,081.", "The answer is 1081.", 1.0),
        ("The answer is 1,081.", "the answer is one thousand eighty-one", 1.0),
        ("23 times 47 is 1081.", "twenty three times forty seven is 1081", 1.0),
        ("23 times 47 is 1081.", "23x47 is 1081", 1.0),
        ("The answer is 1,081.", "the answer is 1018", 0.75),
        ("The answer is 1081.", "The answers 1,081.", 0.75),
        ("The answer is 1081.", "Your pasta timer is done.", 0.25),
        ("The answer is 1,081.", "", 0.0),
    ],
)
def test_spoken_answer_judge_counts_numbers_in_digits_or_words(said, heard, share):
    voice = _container_module("voice")
    assert voice.share_heard(said, heard) == share
    assert voice.spell(1081) == "one thousand eighty one" and voice.spell(700) == "seven hundred"


def test_install_test_server_waits_for_the_llm_lock_a_bounded_time(tmp_path, monkeypatch):
    """A caller holding the machine's LLM lock gets a named error in llm.json, not a hang."""
    import fcntl
    import json

    from tools.deb import host as deb_testbed

    lock = tmp_path / "llm.lock"
    monkeypatch.setattr(deb_testbed, "LLM_LOCK", str(lock))
    monkeypatch.setattr(deb_testbed, "LOCK_WAIT_S", 1)
    (tmp_path / "llm-request").write_text("now")
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        server = deb_testbed.LlmOnDemand(tmp_path, tmp_path / "server.log")
        server.poll()
        server.thread.join(30)
    answer = json.loads((tmp_path / "llm.json").read_text())
    assert answer["url"] is None
    assert answer["error"] == f"{lock} still held after 1 s (is the caller holding it?)"
