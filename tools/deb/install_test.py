"""The .deb install test: build, lint, install and run IRIS in a booted Debian bookworm.

1. build ``iris`` and ``iris-speech-models`` into dist/ (``tools.deb.build``; xz level 1),
   the venv from the wheels cached in ``$IRIS_CACHE/deb-wheels``;
2. ``lintian --fail-on error``, in the background while the container runs;
3. the bookworm rootfs (``tools.deb.rootfs``: debootstrapped once, cached as a tarball in
   ``$IRIS_CACHE/deb-test``), unpacked into a scratch directory for this run;
4. the upgrade package: this build's ``iris`` repacked with a higher version (in the
   background while the container boots; the upgrade step waits for it);
5. the spoken question: the test bed's fixture ``jarvis_multiply`` (``make setup``);
6. boot it with ``systemd-nspawn --boot`` (sharing the host's network, so a test server
   on the host's loopback is reachable) with a oneshot unit that runs
   ``python3.11 -m tools.deb.checks`` in /srv/iris-test — install as a user would, the
   units, the real daemon in three users' sessions, a spoken question and its spoken
   answer, upgrade, purge — and powers off. Each step's result is printed as it happens.
   When the spoken-turn step asks for it, the host starts the Ollama-protocol test server
   (``tools.testbed.ollama_server`` on the GGUF from ``make setup``, under
   ``flock /tmp/iris-llm.lock``) and stops it after.

Every phase is timed. Exit status 0 only if every step passed and lintian found no
error. Needs root (debootstrap, systemd-nspawn) and the test bed (``make setup``).
``--skip-build`` reuses dist/; ``--keep`` keeps the scratch rootfs for a look inside.
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

from tools.deb import build as deb_build
from tools.deb import rootfs as deb_rootfs
from tools.deb import version as deb_version
from tools.deb.host import Background, LlmOnDemand, spoken_question

ROOT = deb_version.ROOT
CHECKS = ROOT / "tools" / "deb" / "checks"
"""The in-container checks: copied to /srv/iris-test/tools/deb/checks with the
``__init__.py`` of tools/ and tools/deb/, and run as a package from /srv/iris-test."""
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
WorkingDirectory=/srv/iris-test
ExecStart=/usr/bin/python3.11 -m tools.deb.checks
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
    # Uncompressed: this package is only installed, never linted or shipped (2 s, not 9).
    cmd = ["dpkg-deb", "--root-owner-group", "-Znone", "-b", str(tree), str(target)]
    subprocess.run(cmd, check=True)
    shutil.rmtree(tree)
    return target


def copy_checks(test_dir: Path) -> None:
    """The checks into ``test_dir`` as ``tools/deb/checks/*.py`` with the ``__init__.py`` of
    tools/ and tools/deb/ (nothing else of them), so that ``python3.11 -m tools.deb.checks``
    runs from ``test_dir``."""
    (test_dir / CHECKS.relative_to(ROOT)).mkdir(parents=True)
    parents = [ROOT / "tools" / "__init__.py", ROOT / "tools" / "deb" / "__init__.py"]
    for module in [*parents, *sorted(CHECKS.glob("*.py"))]:
        shutil.copy2(module, test_dir / module.relative_to(ROOT))


def stage(root: Path, debs: list[Path], question: Path, params: dict) -> None:
    """Copy the packages, the checks, the spoken question and the oneshot unit into the
    rootfs (the upgrade package follows while it boots: ``upgrade/``)."""
    test_dir = root / "srv" / "iris-test"
    (test_dir / "debs").mkdir(parents=True)
    (test_dir / "upgrade").mkdir()
    for deb in debs:
        shutil.copy2(deb, test_dir / "debs" / deb.name)
    copy_checks(test_dir)
    shutil.copy2(question, test_dir / "question.wav")
    (test_dir / "params.json").write_text(json.dumps(params, indent=1))
    for path in [test_dir, *test_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # apt's _apt user reads the .debs
    # dpkg without an fsync per file, as in Debian's build chroots: the test machine's
    # disk is not what is being tested, and the venv has thousands of files.
    (root / "etc" / "dpkg" / "dpkg.cfg.d" / "iris-test-unsafe-io").write_text("force-unsafe-io\n")
    unit = root / "etc" / "systemd" / "system" / "iris-install-test.service"
    unit.write_text(CHECK_UNIT.format(timeout=BOOT_TIMEOUT_S - 60))
    wants = root / "etc" / "systemd" / "system" / "multi-user.target.wants"
    wants.mkdir(exist_ok=True)
    (wants / unit.name).symlink_to("/etc/systemd/system/" + unit.name)


def boot(root: Path, scratch: Path, llm: LlmOnDemand) -> tuple[int, float]:
    """Boot the rootfs until the checks power it off; print their log as it grows and
    serve their requests for the test server. Returns nspawn's exit status and the
    seconds until the checks started."""
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
            llm.poll()
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


def start_lintian(dist: Path, log: Path) -> subprocess.Popen:
    """``lintian --fail-on error`` on the built packages, in the background."""
    changes = [str(c) for c in sorted(dist.glob("iris_*.changes"))]
    with log.open("wb") as out:
        # niced: the container's steps (daemons starting, the spoken turn) come first
        cmd = ["nice", "-n", "10", "lintian", "--fail-on", "error", *changes]
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)


def container_phases(phases: Phases, results: list[dict], container_s: float, boot_s: float) -> None:
    """Split the container's time into phases by the steps' own timings."""

    def seconds(*prefixes: str) -> float:
        return sum(r["seconds"] for r in results if r["step"].startswith(prefixes))

    phases.add("boot", boot_s, "(nspawn start to the checks' first line)")
    parts = {
        "install": (seconds("sudo apt install"), "(sudo apt install of both packages)"),
        "services": (
            seconds("iris run", "sudo systemctl", "a second", "systemctl --user", "iris status", "every IRIS",
                    "systemctl stop"),
            "(three daemons READY, second instance, status, stayed up, stop)",
        ),
        "voice": (seconds("spoken question"), "(devices, test server, restart, spoken turn, Whisper)"),
        "upgrade": (seconds("upgrade"), ""),
        "purge": (seconds("apt purge"), ""),
    }  # fmt: skip
    rest = container_s - boot_s - sum(s for s, _ in parts.values())
    parts["other checks"] = (rest, "(command, models, units, security, debconf; power-off)")
    for name, (secs, note) in parts.items():
        phases.add(name, secs, note)


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
    scratch = Path(tempfile.mkdtemp(prefix="iris-debtest-", dir="/var/tmp"))
    lintian = None
    llm = LlmOnDemand(scratch / "root" / "srv" / "iris-test", scratch / "llm-server.log")
    results: list[dict] = []
    try:
        if not args.skip_build:
            os.environ.setdefault("DEB_XZ_LEVEL", "1")
            phases.run("build", lambda: deb_build.build(dist), "(iris + iris-speech-models, xz -1)")
            lintian_start = time.monotonic()
            lintian = start_lintian(dist, scratch / "lintian.log")
        version = deb_version.debian_version(deb_version.upstream_version())
        debs = [dist / f"iris_{version}_amd64.deb", dist / f"iris-speech-models_{version}_all.deb"]
        missing = [d.name for d in debs if not d.exists()]
        if missing:
            print(f"FAIL no {', '.join(missing)} in dist/ (run make deb)", flush=True)
            return 1
        for deb in debs:
            print(f"{deb.name}: {deb.stat().st_size / 1e6:.1f} MB", flush=True)
        question, question_text = phases.run("spoken question", spoken_question, "(fixture jarvis_multiply)")
        tarball, built = phases.run("rootfs", deb_rootfs.ensure)
        name, secs, _ = phases.rows[-1]
        phases.rows[-1] = (name, secs, "(debootstrap, cold)" if built else "(cached)")
        root = scratch / "root"
        phases.run("unpack rootfs", lambda: deb_rootfs.unpack(tarball, root))
        upgrade_version = f"{version}+upgradetest1"
        params = {
            "version": version,
            "upstream_version": deb_version.upstream_version(),
            "upgrade_version": upgrade_version,
            "llm_model": "qwen2.5-coder:1.5b",
            "question": question_text,
        }
        stage(root, debs, question, params)

        def upgrade_package() -> None:  # needed only by the upgrade step, minutes later
            deb = repack_upgrade(debs[0], upgrade_version, scratch)
            deb.chmod(0o644)
            deb.replace(root / "srv" / "iris-test" / "upgrade" / deb.name)

        upgrade = Background(upgrade_package)
        boot_start = time.monotonic()
        rc, boot_s = boot(root, scratch, llm)
        container_s = time.monotonic() - boot_start
        llm.stop()
        upgrade.join()
        phases.add("upgrade package", upgrade.seconds, "(repacked in the background during boot)")
        results_file = root / "srv" / "iris-test" / "results.json"
        if not results_file.exists():
            print(f"FAIL the checks wrote no results (nspawn exit {rc}); console log:", flush=True)
            print((scratch / "nspawn.log").read_text(errors="replace")[-4000:], flush=True)
            return 1
        results = json.loads(results_file.read_text())["results"]
        container_phases(phases, results, container_s, boot_s)
        phases.add("test server", (llm.stopped_at or llm.asked_at) - llm.asked_at, llm.note())
        if lintian is not None:
            lint_rc = lintian.wait()
            phases.add("lintian", time.monotonic() - lintian_start, "(in the background since the build)")
            lint_log = (scratch / "lintian.log").read_text(errors="replace")
            tags = [line for line in lint_log.splitlines() if line[:2] in ("E:", "W:")]
            print(f"lintian --fail-on error: exit {lint_rc}, {len(tags)} errors/warnings", flush=True)
            print("\n".join(tags[-40:]), flush=True)
            results.append({"step": "lintian --fail-on error", "status": "FAIL" if lint_rc else "PASS",
                            "seconds": 0.0, "detail": ""})  # fmt: skip
        if llm.asked_at and not llm.ready_at:
            print("the test server never came up:\n" + llm.log_tail(), flush=True)
    finally:
        llm.stop()
        if lintian is not None and lintian.poll() is None:
            lintian.kill()
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
    return 1 if counts["FAIL"] or rc != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
