"""Argument repair for a server's folders: a path the model guessed, mapped into the folder.

A file server is started on folders (``args = [".../server-filesystem", "/home/me/notes"]``)
and refuses any path outside them. The 1.5B model has never seen those folders: asked for
"the shopping list in my notes folder" it writes ``/home/user/notes/shopping_list.txt``,
the server answers "Access denied - path outside allowed directories", and the turn takes
two more rounds to say so. Before such a call runs, each path argument (a parameter named
path, paths, source, destination, file or directory) outside every folder of its server
is mapped into one, when exactly one mapping exists:

- the part after a component named like the folder ("notes"), or the whole of a relative
  path, is looked up inside the folder;
- a file that does not exist under that name is the one file in its directory with the
  same stem ("ideas.txt" → "ideas.md"; "shopping_list" → "shopping.txt" is no match);
- what maps nowhere, or to several places, stays as written (the server says what is wrong).

Folders are the server's configured arguments that are existing absolute directories.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

from iris_voice.tools.registry import Tool

_PATH_PARAM = re.compile(r"^(?:path|paths|source|destination|file|filename|directory|dir|folder)$", re.I)


def server_folders(args: list[str]) -> list[str]:
    """The configured arguments of a server that are existing absolute directories."""
    return [os.path.normpath(a) for a in args if os.path.isabs(a) and os.path.isdir(a)]


def _inside(path: str, folders: list[str]) -> bool:
    norm = os.path.normpath(path)
    return any(norm == f or norm.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def _existing(candidate: Path) -> Path | None:
    """``candidate`` if it exists, else the one sibling with its stem ("ideas.txt" → "ideas.md")."""
    if candidate.exists():
        return candidate
    parent = candidate.parent
    if not parent.is_dir() or not candidate.name:
        return None
    stem = candidate.stem.lower()
    same = [p for p in parent.iterdir() if p.stem.lower() == stem]
    return same[0] if len(same) == 1 else None


def _map(value: str, folders: list[str]) -> str | None:
    """Where ``value`` lies in one of ``folders``, or None (no place, or more than one)."""
    parts = [p for p in PurePosixPath(value).parts if p not in ("/", ".")]
    found: set[str] = set()
    for folder in folders:
        base = os.path.basename(folder).lower()
        tails = [parts[i + 1 :] for i, p in enumerate(parts) if p.lower() == base]
        if not PurePosixPath(value).is_absolute():
            tails.append(parts)
        for tail in tails:
            hit = _existing(Path(folder, *tail)) if tail else Path(folder)
            if hit is not None:
                found.add(str(hit))
    return found.pop() if len(found) == 1 else None


def repair_paths(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with paths outside the server's folders mapped into them (see the
    module's doc); unchanged for a tool whose server was given no folder."""
    folders = tool.meta.get("folders") or []
    if not folders:
        return arguments
    fixed = dict(arguments)
    for name, value in arguments.items():
        if not _PATH_PARAM.match(name):
            continue
        if isinstance(value, str) and value and not _inside(value, folders):
            fixed[name] = _map(value, folders) or value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            fixed[name] = [v if _inside(v, folders) else (_map(v, folders) or v) for v in value]
    return fixed
