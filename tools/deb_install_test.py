#!/usr/bin/env python3
"""The .deb install test: build, lint, install and run IRIS in a booted Debian bookworm.

1. build ``iris`` and ``iris-speech-models`` into dist/ (tools/deb_build.py; xz level 1);
2. ``lintian --fail-on error``;
3. the bookworm rootfs (tools/deb_rootfs.py: debootstrapped once, cached as a tarball in
   ``$IRIS_CACHE/deb-test``), unpacked into a scratch directory for this run;
4. the upgrade package: this build's ``iris`` repacked with a higher version;
5. boot it with ``systemd-nspawn --boot`` (sharing the host's network, so a test server
   on the host's loopback is reachable) with a oneshot unit that runs
   tools/deb_checks.py — install as a user would, the units, the services, upgrade,
   purge — and powers off. Each step's result is printed as it happens.

Every phase is timed. Exit status 0 only if every step passed or was skipped with a
reason. Needs root (debootstrap, systemd-nspawn). ``--skip-build`` reuses dist/;
``--keep`` keeps the scratch rootfs for a look inside.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deb_build  # noqa: E402
import deb_rootfs  # noqa: E402
import deb_version  # noqa: E402

ROOT = deb_version.ROOT
TOOLS = ROOT / "tools"
BOOT_TIMEOUT_S = 1800
CHECK_UNIT = """\
[Unit]
Description=IRIS .deb install test
After=multi-user.target
SuccessAction=poweroff
FailureAction=poweroff

[Service]
Type=oneshot
Environment=LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
ExecStart=/usr/bin/python3.11 /srv/iris-test/deb_checks.py
TimeoutStartSec={timeout}

[Install]
WantedBy=multi-user.target
"""


class Phases:
    """Wall-clock time of each phase, printed at the end."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, str]] = []

    def run(self, name: str, fn, note: str = ""):
        """Time ``fn()``; print the phase's start and end."""
        print(f"\n== {name} ==", flush=True)
        start = time.monotonic()
        result = fn()
        self.add(name, time.monotonic() - start, note)
        return result

    def add(self, name: str, seconds: float, note: str = "") -> None:
        """Record a phase timed elsewhere."""
        self.rows.append((name, seconds, note))
        print(f"-- {name}: {seconds:.0f} s {note}", flush=True)

    def table(self) -> str:
        """The phases as aligned lines."""
        return "\n".join(f"  {n:<22} {s:7.1f} s  {note}" for n, s, note in self.rows)


def repack_upgrade(deb: Path, version: str, out: Path) -> Path:
    """This build's iris package as ``version`` (only DEBIAN/control's Version changes)."""
    tree = out / "tree"
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tree)], check=True)
    control = tree / "DEBIAN" / "control"
    control.write_text(re.sub(r"^Version: .*$", f"Version: {version}", control.read_text(), flags=re.M))
    target = out / f"iris_{version}_amd64.deb"
    # gzip -1: this package is only installed, never linted or shipped.
    cmd = ["dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "-b", str(tree), str(target)]
    subprocess.run(cmd, check=True)
    shutil.rmtree(tree)
    return target


def start_llm_server() -> tuple[subprocess.Popen | None, str | None, str]:
    """The Ollama-protocol test server on the host's loopback, when the build has the
    daemon and the test bed (.venv, GGUF) exists; returns (process, url, reason)."""
    if not (ROOT / "iris_voice" / "daemon.py").exists():
        return None, None, "no daemon in this source tree"
    python = ROOT / ".venv" / "bin" / "python"
    if not python.exists():
        return None, None, "no .venv (run make setup)"
    cmd = ["flock", "/tmp/iris-llm.lock", str(python), str(TOOLS / "ollama_server.py"), "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 600
    for line in proc.stdout:
        if m := re.match(r"^listening on (http://\S+)$", line.strip()):
            return proc, m.group(1), ""
        if time.monotonic() > deadline:
            break
    os.killpg(proc.pid, signal.SIGTERM)
    return None, None, "the test server did not start"


def stage(root: Path, debs: list[Path], upgrade: Path, params: dict) -> None:
    """Copy the packages, the checks and the oneshot unit into the rootfs."""
    test_dir = root / "srv" / "iris-test"
    (test_dir / "debs").mkdir(parents=True)
    (test_dir / "upgrade").mkdir()
    for deb in debs:
        shutil.copy2(deb, test_dir / "debs" / deb.name)
    shutil.copy2(upgrade, test_dir / "upgrade" / upgrade.name)
    for script in TOOLS.glob("deb_check*.py"):
        shutil.copy2(script, test_dir / script.name)
    shutil.copy2(TOOLS / "deb_probe.py", test_dir / "deb_probe.py")
    (test_dir / "params.json").write_text(json.dumps(params, indent=1))
    for path in [test_dir, *test_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # apt's _apt user reads the .debs
    unit = root / "etc" / "systemd" / "system" / "iris-install-test.service"
    unit.write_text(CHECK_UNIT.format(timeout=BOOT_TIMEOUT_S - 60))
    wants = root / "etc" / "systemd" / "system" / "multi-user.target.wants"
    wants.mkdir(exist_ok=True)
    (wants / unit.name).symlink_to("/etc/systemd/system/" + unit.name)


def boot(root: Path, scratch: Path) -> tuple[int, float]:
    """Boot the rootfs until the checks power it off; print their log as it grows.
    Returns nspawn's exit status and the seconds until the checks started."""
    log = root / "srv" / "iris-test" / "log.txt"
    # No --private-network or --network-*: the container shares the host's network.
    cmd = ["systemd-nspawn", "-q", "-D", str(root), "--register=no", "--keep-unit", "--boot"]
    cmd.append("--console=pipe")  # the checks' results come from log.txt, not the console
    with (scratch / "nspawn.log").open("wb") as console:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT)
        start, started = time.monotonic(), 0.0
        deadline, shown = start + BOOT_TIMEOUT_S, 0
        while proc.poll() is None:
            time.sleep(0.2)
            if log.exists():
                started = started or time.monotonic() - start
                text = log.read_text(errors="replace")
                print(text[shown:], end="", flush=True)
                shown = len(text)
            if time.monotonic() > deadline:
                print(f"\nFAIL the container did not power off within {BOOT_TIMEOUT_S} s", flush=True)
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                return 124, started
        if log.exists():
            print(log.read_text(errors="replace")[shown:], end="", flush=True)
    return proc.returncode, started


def main(argv: list[str] | None = None) -> int:
    """Run the whole test; see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-build", action="store_true", help="use the packages already in dist/")
    p.add_argument("--keep", action="store_true", help="keep the scratch rootfs")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("deb_install_test: needs root (debootstrap, systemd-nspawn)", file=sys.stderr)
        return 2
    phases, dist, total_start = Phases(), ROOT / "dist", time.monotonic()
    if not args.skip_build:
        os.environ.setdefault("DEB_XZ_LEVEL", "1")
        phases.run("build", lambda: deb_build.build(dist), "(iris + iris-speech-models, xz -1)")
        phases.run("lintian", lambda: deb_build.lintian(dist))
    version = deb_version.debian_version(deb_version.upstream_version())
    debs = [dist / f"iris_{version}_amd64.deb", dist / f"iris-speech-models_{version}_all.deb"]
    missing = [d.name for d in debs if not d.exists()]
    if missing:
        print(f"FAIL no {', '.join(missing)} in dist/ (run make deb)", flush=True)
        return 1
    tarball, built = phases.run("rootfs", deb_rootfs.ensure)
    phases.rows[-1] = (phases.rows[-1][0], phases.rows[-1][1], "(debootstrap, cold)" if built else "(cached)")
    scratch = Path(tempfile.mkdtemp(prefix="iris-debtest-", dir="/var/tmp"))
    server = None
    try:
        root = scratch / "root"
        phases.run("unpack rootfs", lambda: deb_rootfs.unpack(tarball, root))
        upgrade_version = f"{version}+upgradetest1"
        upgrade = phases.run("upgrade package", lambda: repack_upgrade(debs[0], upgrade_version, scratch))
        server, url, why = phases.run("test server", start_llm_server)
        if why:
            print(f"no Ollama-protocol test server: {why}", flush=True)
        params = {
            "version": version,
            "upstream_version": deb_version.upstream_version(),
            "upgrade_version": upgrade_version,
            "llm_url": url,
            "llm_model": "qwen2.5-coder:1.5b",
        }
        stage(root, debs, upgrade, params)
        boot_start = time.monotonic()
        rc, boot_s = boot(root, scratch)
        container_s = time.monotonic() - boot_start
        results_file = root / "srv" / "iris-test" / "results.json"
        if not results_file.exists():
            print(f"FAIL the checks wrote no results (nspawn exit {rc}); console log:", flush=True)
            print((scratch / "nspawn.log").read_text(errors="replace")[-4000:], flush=True)
            return 1
        results = json.loads(results_file.read_text())["results"]

        def seconds(prefix: str) -> float:
            return sum(r["seconds"] for r in results if r["step"].startswith(prefix))

        phases.add("boot", boot_s, "(nspawn start to the checks' first line)")
        install_s, upgrade_s, purge_s = seconds("sudo apt install"), seconds("upgrade"), seconds("apt purge")
        phases.add("install", install_s, "(sudo apt install of both packages)")
        checks_s = container_s - boot_s - install_s - upgrade_s - purge_s
        phases.add("checks", checks_s, "(command, models, units, services; and the power-off)")
        phases.add("upgrade", upgrade_s)
        phases.add("purge", purge_s)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
        if args.keep:
            print(f"kept the scratch rootfs: {scratch}/root", flush=True)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    phases.add("total", time.monotonic() - total_start)
    counts = {s: sum(r["status"] == s for r in results) for s in ("PASS", "FAIL", "SKIP")}
    print("\n== deb install test: timings ==\n" + phases.table())
    print("\n== deb install test: steps ==")
    for r in results:
        print(f"  {r['status']:4} {r['step']} ({r['seconds']:.1f} s)")
    print(f"\ndeb-install-test: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] or rc not in (0,) else 0


if __name__ == "__main__":
    sys.exit(main())
