"""The package layout's rules, read from the source: imports point down the pipeline only,
no module imports one that imports it back, nothing edits ``sys.path``.

``make lint`` runs this file. The layers (ARCHITECTURE.md) from the ground floor up:
errors and events; config; audio, llm, timers; speech and tools; conversation; voice;
wyoming; app; cli. A package may import its own modules and any package of a lower layer.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "iris_voice"

RANK = {
    "": 0,  # iris_voice/__init__.py: the version
    "errors": 0,
    "safejson": 0,
    "logsafe": 0,  # log lines a client's words cannot forge
    "heavy": 0,  # one lock for the heavy third-party imports
    "events": 0,
    "config": 1,
    "audio": 2,
    "llm": 2,
    "timers": 2,
    "speech": 3,
    "tools": 3,
    "conversation": 4,
    "voice": 5,
    "wyoming": 6,
    "app": 7,
    "cli": 8,
}
"""Each top-level part of the package and its layer."""


def module_name(path: Path, root: Path = ROOT) -> str:
    """``iris_voice/tools/mcp/client.py`` → ``iris_voice.tools.mcp.client``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set[str], root: Path = ROOT) -> set[str]:
    """The project modules ``path`` imports, anywhere in the file (functions and
    ``TYPE_CHECKING`` blocks included): ``from a import b`` counts as ``a.b`` when that is a module."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                base = ".".join(up[: len(up) - node.level + 1] + ([base] if base else []))
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph(top: str, root: Path = ROOT) -> dict[str, set[str]]:
    """Module → the project modules it imports, for every module under ``root/top``."""
    files = {module_name(p, root): p for p in (root / top).rglob("*.py")}
    modules = set(files)
    return {name: imports_of(path, modules, root) for name, path in files.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def part(module: str) -> str:
    """The top-level part of ``iris_voice`` a module belongs to (``""`` for the package itself)."""
    rest = module.removeprefix(PACKAGE).lstrip(".")
    return rest.split(".")[0]


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every import from a layer to the same or a higher one (other parts)."""
    out = []
    for src, targets in edges.items():
        for dst in targets:
            a, b = part(src), part(dst)
            if a != b and RANK[b] >= RANK[a]:
                out.append(
                    f"{src} -> {dst} ({a or PACKAGE} may not import {b}: layer {RANK[b]} >= {RANK[a]})"
                )
    return sorted(out)


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {part(m) for m in graph(PACKAGE)}
    assert parts <= set(RANK), f"unknown parts {parts - set(RANK)}: give them a layer in RANK"


def test_imports_point_down_the_pipeline() -> None:
    assert layer_violations(graph(PACKAGE)) == []


@pytest.mark.parametrize("top", [PACKAGE, "tools", "tests"])
def test_no_import_cycles(top: str) -> None:
    assert cycles(graph(top)) == []


@pytest.mark.parametrize("top", ["tools", "tests"])
def test_nothing_edits_sys_path(top: str) -> None:
    offenders = []
    for path in (ROOT / top).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "path"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
                and path.resolve() != Path(__file__).resolve()
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize("top", ["tools", "tests"])
def test_project_modules_are_imported_by_their_full_name(top: str) -> None:
    """``import fixtures`` works only with a folder on ``sys.path``: one way to import, the full name."""
    bare = {p.stem for p in (ROOT / top).rglob("*.py")} - {"__init__", "__main__", "tools", "tests", PACKAGE}
    offenders = []
    for path in (ROOT / top).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in bare
            ]
    assert offenders == []


# -- the checker itself: it must catch what it is for ------------------------------------------
def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checker_finds_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import thing\n",
            "pkg/b.py": "def thing():\n    from pkg import a\n    return a\n",
            "pkg/c.py": "import pkg.a\n",
        },
    )
    assert cycles(graph("pkg", tmp_path)) == [["pkg.a", "pkg.b"]]


def test_the_checker_reads_relative_imports(tmp_path: Path) -> None:
    write(
        tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from . import b\n", "pkg/b.py": "from .a import x\n"}
    )
    assert cycles(graph("pkg", tmp_path)) == [["pkg.a", "pkg.b"]]


def test_the_checker_finds_an_upward_import() -> None:
    edges = {
        "iris_voice.tools.registry": {"iris_voice.conversation.trace"},
        "iris_voice.voice.pipeline": {"iris_voice.tools.registry"},
        "iris_voice.config": {"iris_voice.errors"},
    }
    assert layer_violations(edges) == [
        "iris_voice.tools.registry -> iris_voice.conversation.trace "
        "(tools may not import conversation: layer 4 >= 3)"
    ]
