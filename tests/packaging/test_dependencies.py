"""One list of runtime dependencies: ``requirements/runtime.txt``.

``pyproject.toml`` reads it (``pip install .``), the .deb's venv installs it
(``debian/rules``), the test bed installs it through ``requirements/dev.txt``; these
tests keep it that way, and keep it complete: every third-party module the package
imports (statements anywhere, and the names given to ``heavy.load`` or
``importlib.import_module``) comes from a distribution the list names.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQS = ROOT / "requirements"
PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")
LAZY_IMPORTERS = {"load", "import_module"}
"""``heavy.load("faster_whisper")``, ``importlib.import_module("x")``: imports by name."""


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them (``PyYAML`` = ``pyyaml``, ``a_b`` = ``a-b``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file, by normalized name (options skipped)."""
    out = {}
    for line in path.read_text().splitlines():
        if (match := PIN.fullmatch(line.strip())) is not None:
            out[normalize(match[1])] = match[2]
    return out


def imported_modules(package: Path) -> dict[str, set[str]]:
    """Top-level names of the absolute imports under ``package`` → the files importing them
    (named from ``package``'s parent)."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in LAZY_IMPORTERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names = [node.args[0].value]
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(package.parent)))
    return found


def test_runtime_list_is_plain_pins_that_setuptools_can_read():
    """setuptools reads the file as bare requirement lines: no pip options, no inline comments."""
    for line in (REQS / "runtime.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert PIN.fullmatch(line), f"requirements/runtime.txt: {line!r} is not name==version"


def test_pyproject_reads_its_dependencies_from_the_runtime_list():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "dependencies" not in meta["project"], "a second list in pyproject.toml"
    assert "dependencies" in meta["project"]["dynamic"]
    dynamic = meta["tool"]["setuptools"]["dynamic"]["dependencies"]
    assert dynamic == {"file": ["requirements/runtime.txt"]}


def test_the_deb_venv_and_the_test_bed_install_the_runtime_list():
    rules = (ROOT / "debian" / "rules").read_text()
    install = [line for line in rules.splitlines() if "$(PIP) install" in line and " -r " in line]
    assert install and all("-r requirements/runtime.txt" in line for line in install), install
    dev = (REQS / "dev.txt").read_text().splitlines()
    assert "-r runtime.txt" in dev and "-c constraints.txt" in dev
    venv_target = (ROOT / "Makefile").read_text().split("$(BIN)/.stamp-dev:")[1].split("\n\n")[0]
    assert "-r requirements/dev.txt" in venv_target


def test_runtime_pins_agree_with_the_constraints_and_are_not_repeated_in_dev():
    runtime, constraints = pins(REQS / "runtime.txt"), pins(REQS / "constraints.txt")
    differ = {n: (v, constraints.get(n)) for n, v in runtime.items() if constraints.get(n) != v}
    assert not differ, f"runtime.txt vs constraints.txt: {differ}"
    again = set(runtime) & set(pins(REQS / "dev.txt"))
    assert not again, f"requirements/dev.txt pins runtime packages again: {sorted(again)}"


def test_every_third_party_import_comes_from_the_runtime_list():
    runtime = set(pins(REQS / "runtime.txt"))
    dists = packages_distributions()
    missing = []
    for module, files in sorted(imported_modules(ROOT / "iris_voice").items()):
        if module in sys.stdlib_module_names or module == "iris_voice":
            continue
        provided = {normalize(d) for d in dists.get(module, [])}
        if not provided & runtime:
            where = ", ".join(sorted(files)[:3])
            missing.append(f"{module} (from {sorted(provided) or 'no installed distribution'}; {where})")
    assert not missing, "imported but not in requirements/runtime.txt: " + "; ".join(missing)


def test_the_import_scan_sees_lazy_and_nested_imports(tmp_path):
    """The scan would catch a dependency that is imported only in a function or by name."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        "import os\nfrom . import sibling\n"
        "def f():\n    import wyoming.event\n    return heavy.load('faster_whisper.audio')\n"
    )
    assert set(imported_modules(pkg)) == {"os", "wyoming", "faster_whisper"}
