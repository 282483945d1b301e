"""Six real MCP tool servers for the model tests and the tool benchmarks.

Four from PyPI (installed in the venv by ``requirements/dev.txt``): mcp-server-time,
mcp-server-calculator, mcp-server-sqlite, mcp-server-git; two from npm, installed by
``make mcp-npm`` (``npm ci`` of ``tools/testbed/npm`` into ``$IRIS_CACHE/npm``):
@modelcontextprotocol/server-memory and server-filesystem. Each works on files made
under a state directory the caller owns, so nothing outside it is changed.

The descriptions are what a user would write in ``config.toml``: they reach the model
(get_tools_in_category) and the retriever's index.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from iris_voice.config import McpServerConfig

PY = sys.executable
BIN = Path(PY).parent
NPM_DIR = Path(os.environ.get("IRIS_CACHE") or Path.home() / ".cache" / "iris") / "npm"
"""Where ``make mcp-npm`` installs the Node servers."""
_SCOPE = NPM_DIR / "node_modules" / "@modelcontextprotocol"
NODE_SERVERS = {
    "memory": _SCOPE / "server-memory" / "dist" / "index.js",
    "filesystem": _SCOPE / "server-filesystem" / "dist" / "index.js",
}
"""The Node servers' entry scripts."""


def node_missing() -> str | None:
    """Why the Node servers cannot run (``None`` when they can)."""
    if shutil.which("node") is None:
        return "node is not installed"
    gone = [name for name, path in NODE_SERVERS.items() if not path.is_file()]
    return f"run `make mcp-npm` (missing: {', '.join(gone)})" if gone else None


def make_state(state: Path) -> dict[str, Path]:
    """The files the servers work on, made under ``state``: a shop database, a notes folder
    and a small git repository. Returns their paths by server name."""
    state.mkdir(parents=True, exist_ok=True)
    db = state / "shop.db"
    if not db.exists():
        with sqlite3.connect(db) as conn:
            conn.executescript(
                "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL, stock INTEGER);"
                "INSERT INTO products (name, price, stock) VALUES"
                " ('apple', 0.5, 120), ('banana', 0.25, 80), ('coffee', 7.9, 12), ('tea', 4.5, 30);"
                "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);"
                "INSERT INTO customers (name, city) VALUES ('Alice', 'Paris'), ('Bob', 'Berlin');"
            )
    notes = state / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "shopping.txt").write_text("milk\neggs\nbread\n", encoding="utf-8")
    (notes / "ideas.md").write_text("# Ideas\n- a birdhouse\n- learn the guitar\n", encoding="utf-8")
    repo = state / "repo"
    if not (repo / ".git").exists():
        repo.mkdir(exist_ok=True)
        (repo / "README.md").write_text("# Garden planner\n", encoding="utf-8")
        env = {**os.environ, "GIT_AUTHOR_NAME": "IRIS", "GIT_AUTHOR_EMAIL": "iris@localhost",
               "GIT_COMMITTER_NAME": "IRIS", "GIT_COMMITTER_EMAIL": "iris@localhost"}  # fmt: skip
        steps = (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "Start"])
        for cmd in steps:
            subprocess.run(["git", *cmd], cwd=repo, env=env, check=True)
        (repo / "plants.txt").write_text("tomato\n", encoding="utf-8")  # an uncommitted change
    return {"sqlite": db, "filesystem": notes, "git": repo, "memory": state / "memory.jsonl"}


def six_servers(state: Path, mode: str = "lazy") -> list[McpServerConfig]:
    """The six servers as ``[[mcp.servers]]`` entries, every one in ``mode``."""
    paths = make_state(state)
    node = shutil.which("node") or "node"
    return [
        McpServerConfig(name="time", category="time", mode=mode, command=PY,
                        args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
                        description="current time in any time zone, convert a time between zones"),
        McpServerConfig(name="calculator", category="utilities/math", mode=mode, command=PY,
                        args=["-m", "mcp_server_calculator"],
                        description="evaluate math expressions"),
        McpServerConfig(name="sqlite", category="data/sqlite", mode=mode,
                        command=str(BIN / "mcp-server-sqlite"), args=["--db-path", str(paths["sqlite"])],
                        description="the shop database: products, prices, stock, customers (SQL)"),
        McpServerConfig(name="git", category="dev/git", mode=mode, command=PY,
                        args=["-m", "mcp_server_git", "--repository", str(paths["git"])],
                        arguments={"repo_path": str(paths["git"])},
                        description="the garden planner git repository: status, log, diff, commits"),
        McpServerConfig(name="memory", category="memory", mode=mode, command=node,
                        args=[str(NODE_SERVERS["memory"])], env={"MEMORY_FILE_PATH": str(paths["memory"])},
                        description="remember facts about people and things, recall what was remembered"),
        McpServerConfig(name="files", category="files", mode=mode, command=node,
                        args=[str(NODE_SERVERS["filesystem"]), str(paths["filesystem"])],
                        description="the notes folder: read, write, list and search text files"),
    ]  # fmt: skip
