"""A Debian bookworm root file system for the .deb install test, cached as a tarball.

The first run debootstraps a minbase system with systemd, logind (libpam-systemd), D-Bus,
Python 3.11, PortAudio, the PipeWire stack and sudo — what a bookworm desktop has that
IRIS relies on — upgrades it from the same suites the host uses, and packs it into
``$IRIS_CACHE/deb-test/rootfs-bookworm-<key>.tar.zst``. Later runs unpack that tarball
into a scratch directory, so each test boots a pristine system in seconds. The key is a
hash of the recipe (suites, mirrors, package list), so changing any of them rebuilds it.

The mirrors are read from the host's apt sources: the test uses the Debian archive the
machine is configured for and names none itself.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = "bookworm"
RECIPE_VERSION = 1  # bump when the steps below change in a way the key cannot see
PACKAGES = [
    # the booted system and user sessions
    "systemd",
    "systemd-sysv",
    "dbus",
    "dbus-user-session",
    "libpam-systemd",
    "sudo",
    "procps",
    "apt-utils",
    "man-db",  # systemd-analyze verify reads the units' Documentation=man:iris(1)
    # what the iris package depends on and recommends
    "python3.11",
    "libportaudio2",
    "pipewire",
    "pipewire-pulse",
    "pipewire-alsa",
    "wireplumber",
    "pulseaudio-utils",
]
# Timers that would take the dpkg lock or burn CPU while the test installs packages, and
# the console getty (the test's console is a pipe, not a terminal).
MASKED_UNITS = [
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "man-db.timer",
    "dpkg-db-backup.timer",
    "fstrim.timer",
    "e2scrub_all.timer",
    "console-getty.service",
    "getty@.service",
    "systemd-networkd-wait-online.service",
]
_SUITE_RE = re.compile(rf"^{SUITE}(-updates|-security)?$")


def cache_dir() -> Path:
    """IRIS's cache (``$IRIS_CACHE``, else ``~/.cache/iris``): outside the repository."""
    base = os.environ.get("IRIS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "iris"
    )
    return Path(base)


def host_sources() -> list[tuple[str, str]]:
    """``(uri, suite)`` pairs of the host's Debian bookworm sources (main component)."""
    out = subprocess.run(
        ["apt-get", "indextargets", "--format", "$(REPO_URI) $(RELEASE) $(COMPONENT)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    pairs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and _SUITE_RE.match(parts[1]) and parts[2] == "main":
            pairs.append((parts[0], parts[1]))
    pairs = sorted(set(pairs), key=lambda p: (len(p[1]), p))
    if not any(suite == SUITE for _, suite in pairs):
        raise SystemExit(
            f"deb_rootfs: the host's apt sources have no '{SUITE} main' suite to debootstrap from "
            "(run apt-get update first)"
        )
    return pairs


def recipe_key(sources: list[tuple[str, str]]) -> str:
    """A short hash of everything that decides the rootfs's content."""
    recipe = {"v": RECIPE_VERSION, "suite": SUITE, "packages": PACKAGES, "masked": MASKED_UNITS}
    recipe["sources"] = sources
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def tarball_path(sources: list[tuple[str, str]]) -> Path:
    """Where the cached rootfs tarball for this recipe lives."""
    return cache_dir() / "deb-test" / f"rootfs-{SUITE}-{recipe_key(sources)}.tar.zst"


def _run(cmd: list[str], **kw) -> None:
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def _in_root(root: Path, *cmd: str) -> None:
    """Run a command inside the rootfs (a container without init: apt, dpkg, systemctl)."""
    env = ["--setenv=DEBIAN_FRONTEND=noninteractive", "--setenv=LC_ALL=C.UTF-8"]
    _run(["systemd-nspawn", "-q", "-D", str(root), "--register=no", "--keep-unit", *env, *cmd])


def build(sources: list[tuple[str, str]], target: Path) -> None:
    """Debootstrap, upgrade and configure a rootfs, and pack it into ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rootfs-build-", dir=target.parent))
    root = work / "root"
    try:
        mirror = next(uri for uri, suite in sources if suite == SUITE)
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                "--components=main",
                "--include=" + ",".join(PACKAGES),
                SUITE,
                str(root),
                mirror,
            ]
        )
        lines = [f"deb {uri} {suite} main" for uri, suite in sources]
        (root / "etc/apt/sources.list").write_text("\n".join(lines) + "\n")
        _in_root(root, "apt-get", "-q", "update")
        _in_root(root, "apt-get", "-q", "-y", "dist-upgrade")
        _in_root(root, "apt-get", "clean")
        _in_root(root, "systemctl", "mask", *MASKED_UNITS)
        (root / "etc/hostname").write_text("iris-test\n")
        # An empty machine-id: each boot of a copy gets its own, as on first boot.
        (root / "etc/machine-id").write_text("")
        partial = target.with_suffix(".partial")
        tar = ["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-I", "zstd -T0 -3"]
        _run([*tar, "-cf", str(partial), "."])
        partial.replace(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ensure(rebuild: bool = False) -> tuple[Path, bool]:
    """The cached tarball, built first if missing; returns ``(path, built_now)``."""
    sources = host_sources()
    target = tarball_path(sources)
    if target.is_file() and not rebuild:
        return target, False
    for old in target.parent.glob(f"rootfs-{SUITE}-*.tar.zst"):
        old.unlink()  # a stale recipe's tarball: only the current one is kept
    build(sources, target)
    return target, True


def unpack(tarball: Path, dest: Path) -> None:
    """Unpack the cached rootfs into ``dest`` (a fresh scratch directory)."""
    dest.mkdir(parents=True, exist_ok=False)
    _run(["tar", "--numeric-owner", "--xattrs", "-C", str(dest), "-I", "zstd -T0", "-xf", str(tarball)])


def main(argv: list[str] | None = None) -> int:
    """``python3.11 -m tools.deb.rootfs [--rebuild]``: make sure the cached rootfs exists; print its path."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rebuild", action="store_true", help="debootstrap again even if cached")
    args = p.parse_args(argv)
    start = time.monotonic()
    path, built = ensure(args.rebuild)
    how = "built" if built else "cached"
    print(f"rootfs {how}: {path} ({path.stat().st_size / 1e6:.0f} MB, {time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
