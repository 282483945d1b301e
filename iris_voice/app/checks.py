"""The start-up checks of a configuration that go beyond its schema, without starting anything.

``config.parse`` checks each value (types, ranges, finite numbers, URLs); these check
what a value refers to: tool names, the timers database, the boost planner's key, MCP
server commands and working folders, the Wyoming service's token file and socket, and
the speech models. A path that must be writable is tried (a probe file made and
removed), never asked with ``os.access``, which says yes to root for paths no one can
write. ``iris check-config`` runs all of them, and every entry point runs the ones its
parts need before it builds them (``assembly``), so a configuration that
``check-config`` passes is one IRIS accepts. Each problem is a ``key: reason`` line,
like the schema's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from iris_voice.config import Config
from iris_voice.errors import ConfigError
from iris_voice.speech.model_files import ModelMissing, piper_voice_files, smart_turn_model, whisper_model_dir
from iris_voice.speech.wake import resolve_wake_model
from iris_voice.timers.store import default_db_path
from iris_voice.tools.builtin import declared_names, name_problems

_SUN_PATH_MAX = 108
"""Linux's limit on a Unix socket path (``sun_path``), its final NUL included."""


def _first_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (a dangling symlink counts: it is in the way)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def folder_problem(folder: Path, *, create: bool) -> str | None:
    """Why no new file can be made in ``folder``, or None; tried for real, not asked.

    ``os.access`` answers yes to root for any folder, even one under /proc where nothing
    can be made, and nothing for folders still to be made; so this makes what start-up
    would make: the missing folders (only with ``create``; else a missing folder is the
    problem) and a probe file in the last one; then it removes the probe and the folders
    it made, and nothing else.
    """
    base = _first_existing(folder)
    if base != folder and not create:
        return f"the folder {folder} does not exist"
    if not base.is_dir():
        return f"{base} is not a directory"
    made: list[Path] = []
    try:
        for missing in reversed([folder, *folder.parents][: len(folder.parts) - len(base.parts)]):
            try:
                missing.mkdir()
            except FileExistsError:  # made meanwhile by someone else: theirs, not ours to remove
                continue
            except OSError as exc:
                return f"{missing}: {exc.strerror or exc}"
            made.append(missing)
        try:
            fd, probe = tempfile.mkstemp(prefix=".iris-check-", dir=folder)
        except OSError as exc:
            return f"{folder}: {exc.strerror or exc}"
        os.close(fd)
        os.unlink(probe)
    finally:
        for path in reversed(made):
            with contextlib.suppress(OSError):  # not empty: someone else's files are in it now
                path.rmdir()
    return None


def timers_db_problem(cfg: Config) -> str | None:
    """Why ``tools.timers_db`` (or the default path) cannot hold the timers at all, or None.

    Only what IRIS cannot work around: a path that is not a regular file, a file this
    user cannot open for reading and writing, a folder where SQLite cannot put its -wal
    and -shm files (or a damaged file cannot be moved aside), a folder that cannot be
    created. Each is tried (``folder_problem``), as root too. A file that is not a SQLite
    database, or a damaged one, is no configuration problem: the store moves it aside,
    starts a new one and says so (``timers.store``).
    """
    path = Path(cfg.tools.timers_db).expanduser() if cfg.tools.timers_db else default_db_path()
    key = f"tools.timers_db ({path})" if not cfg.tools.timers_db else "tools.timers_db"
    if not os.path.lexists(path):
        problem = folder_problem(path.parent, create=True)
        return f"{key}: {path} cannot be created ({problem})" if problem else None
    if not path.is_file():
        return f"{key}: {path} is not a file"
    try:
        # Opened and closed before the store opens it (build_app checks first), so no
        # SQLite lock of this process is on it for the close to drop.
        os.close(os.open(path, os.O_RDWR | os.O_CLOEXEC))
    except OSError as exc:
        return f"{key}: {path} cannot be opened for reading and writing ({exc.strerror or exc})"
    if problem := folder_problem(path.parent, create=False):
        return f"{key}: SQLite cannot add its -wal file beside {path} ({problem})"
    return None


def serve_problems(cfg: Config) -> list[str]:
    """The ``[serve]`` files: ``token_file`` must hold a token, a ``unix://`` socket must be
    creatable in its (existing: the server does not make it) folder."""
    out = []
    if cfg.serve.token_file:
        from iris_voice.app.serve_trust import load_token  # imports wyoming: only when needed

        try:
            load_token(cfg.serve)
        except ConfigError as exc:
            out += exc.problems
    parsed = urlparse(cfg.serve.uri)
    if parsed.scheme == "unix":
        sock = Path(parsed.path)
        if len(os.fsencode(sock)) >= _SUN_PATH_MAX:
            out.append(f"serve.uri: the socket path {sock} is longer than {_SUN_PATH_MAX - 1} bytes")
        elif sock.is_dir():
            out.append(f"serve.uri: {sock} is a directory, not a socket path")
        elif problem := folder_problem(sock.parent, create=False):
            out.append(f"serve.uri: the socket {sock} cannot be created ({problem})")
    return out


def boost_problems(cfg: Config) -> list[str]:
    """The boost planner's API key variable, when one is named."""
    b = cfg.boost
    if b.enabled and b.backend == "openai" and b.api_key_env and not os.environ.get(b.api_key_env):
        return [f"boost.api_key_env: the environment variable {b.api_key_env} is not set or empty"]
    return []


def mcp_problems(cfg: Config) -> list[str]:
    """Every enabled stdio MCP server's command must be found (on its PATH, or as a path),
    in a working directory (``cwd``) that exists."""
    out = []
    for i, server in enumerate(cfg.mcp.servers):
        if not server.enabled or not server.command:
            continue
        if server.cwd and not Path(server.cwd).is_dir():
            out.append(f"mcp.servers[{i}].cwd: {server.cwd!r} is not a directory")
        search = server.env.get("PATH") or os.environ.get("PATH", os.defpath)
        if shutil.which(server.command, path=search) is None:
            where = "is not an executable file" if "/" in server.command else "is not found on PATH"
            out.append(f"mcp.servers[{i}].command: {server.command!r} {where}")
    return out


def speech_problems(cfg: Config) -> list[str]:
    """The speech models the voice daemon loads must be there (found, not loaded); a remote
    engine (``engine = "wyoming"``) has its models on its server (``iris doctor`` asks it)."""
    out = []
    checks: list[Callable[[], object]] = []
    if cfg.stt.engine == "local":
        checks.append(lambda: whisper_model_dir(cfg.stt.model, join=False))
    if cfg.tts.engine == "local":
        checks.append(lambda: piper_voice_files(cfg.tts.voice))
    if cfg.audio.activation == "wake_word" or cfg.audio.barge_in == "wake_word":
        checks.append(lambda: resolve_wake_model(cfg.wake.model))
    if cfg.audio.end_of_turn == "smart_turn":
        checks.append(smart_turn_model)
    for check in checks:
        try:
            check()
        except ModelMissing as exc:
            out.append(exc.message)
    return out


def problems(cfg: Config, *, speech: bool = True) -> list[str]:
    """Every problem of ``cfg`` beyond its schema; ``speech`` includes the speech models."""
    out = name_problems(cfg, declared_names())
    if (db := timers_db_problem(cfg)) is not None:
        out.append(db)
    out += boost_problems(cfg) + mcp_problems(cfg) + serve_problems(cfg)
    if speech:
        out += speech_problems(cfg)
    return out


def check(cfg: Config, *, speech: bool = True, source: str = "") -> None:
    """Raise one ``ConfigError`` listing every problem (see ``problems``)."""
    found = problems(cfg, speech=speech)
    if found:
        raise ConfigError(found, source)
