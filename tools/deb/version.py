"""The .deb's version comes from one place: ``__version__`` in ``iris_voice/__init__.py``.

``python3.11 -m tools.deb.version`` prints the Debian version for it (PEP 440 pre-releases sort before the
release in Debian with ``~``: 0.2.0rc1 → 0.2.0~rc1). ``--check`` fails when the top entry of
``debian/changelog`` does not carry it; ``--update`` adds the entry when it is missing (run
by ``make deb``: commit the changelog it writes). ``--set VERSION`` adds an entry with
another version, for the install test's upgrade build in a scratch copy of the tree.
"""

from __future__ import annotations

import argparse
import email.utils
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAINTAINER = "IRIS maintainers <maintainers@users.noreply.a-seed-8e558d98.example>"
_TOP = re.compile(r"^(?P<source>[a-z0-9][a-z0-9.+-]+) \((?P<version>[^)]+)\) (?P<dist>[^;]+);")


def upstream_version(root: Path = ROOT) -> str:
    """``__version__`` of iris_voice, read without importing the package."""
    text = (root / "iris_voice" / "__init__.py").read_text()
    m = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if not m:
        raise SystemExit("deb_version: no __version__ in iris_voice/__init__.py")
    return m.group(1)


def debian_version(pep440: str) -> str:
    """The Debian spelling of a PEP 440 version, ordering the same way."""
    v = re.sub(r"\.?(a|b|rc)(\d+)", r"~\1\2", pep440)
    v = re.sub(r"\.?dev(\d+)", r"~dev\1", v)
    v = re.sub(r"\.?post(\d+)", r"+post\1", v)
    if not re.fullmatch(r"[0-9][A-Za-z0-9.+~]*", v):
        raise SystemExit(f"deb_version: cannot turn {pep440!r} into a Debian version")
    return v


def changelog_top(changelog: Path) -> tuple[str, str, str]:
    """``(source, version, distribution)`` of the newest changelog entry."""
    m = _TOP.match(changelog.read_text())
    if not m:
        raise SystemExit(f"deb_version: cannot read the first line of {changelog}")
    return m.group("source"), m.group("version"), m.group("dist")


def add_entry(changelog: Path, version: str, message: str) -> None:
    """Prepend a changelog entry for ``version`` (same source and distribution)."""
    source, _, dist = changelog_top(changelog)
    stamp = email.utils.formatdate(usegmt=False, localtime=False).replace("-0000", "+0000")
    entry = f"{source} ({version}) {dist}; urgency=medium\n\n  * {message}\n\n -- {MAINTAINER}  {stamp}\n\n"
    changelog.write_text(entry + changelog.read_text())


def main(argv: list[str] | None = None) -> int:
    """Print, check or update the changelog version; see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail if debian/changelog lacks the version")
    mode.add_argument("--update", action="store_true", help="add the changelog entry if it is missing")
    mode.add_argument("--set", metavar="VERSION", help="add an entry with this Debian version")
    p.add_argument("--root", type=Path, default=ROOT, help="source tree (default: this repository)")
    args = p.parse_args(argv)
    changelog = args.root / "debian" / "changelog"
    wanted = debian_version(upstream_version(args.root))
    _, current, _ = changelog_top(changelog)
    if args.set:
        add_entry(changelog, args.set, f"Rebuild of {wanted} as {args.set}.")
        print(args.set)
        return 0
    if current != wanted:
        if args.check:
            print(
                f"deb_version: debian/changelog is at {current} but iris_voice.__version__ is "
                f"{wanted}: run python3.11 -m tools.deb.version --update (or make deb) and commit it",
                file=sys.stderr,
            )
            return 1
        if args.update:
            add_entry(changelog, wanted, f"New release {wanted}.")
            print(f"deb_version: added debian/changelog entry {wanted}", file=sys.stderr)
    print(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
