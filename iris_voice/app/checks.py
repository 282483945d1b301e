"""The start-up checks of a configuration that go beyond its schema, without starting anything.

``config.parse`` checks each value (types, ranges, finite numbers, URLs); these check
what a value refers to: tool names, the timers database, the boost planner's key, MCP
server commands and the speech models. ``iris check-config`` runs all of them, and
every entry point runs the ones its parts need before it builds them (``assembly``),
so a configuration that ``check-config`` passes is one IRIS accepts. Each problem is a
``key: reason`` line, like the schema's.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from iris_voice.config import Config
from iris_voice.errors import ConfigError
from iris_voice.speech.model_files import ModelMissing, piper_voice_files, smart_turn_model, whisper_model_dir
from iris_voice.speech.wake import resolve_wake_model
from iris_voice.timers.store import default_db_path
from iris_voice.tools.builtin import declared_names, name_problems


def timers_db_problem(cfg: Config) -> str | None:
    """Why ``tools.timers_db`` (or the default path) cannot hold the timers at all, or None.

    Only what IRIS cannot work around: a path that is not a regular file, a file this
    user cannot read and write, a folder where SQLite cannot put its -wal and -shm files
    (or a damaged file cannot be moved aside), a folder that cannot be created. A file
    that is not a SQLite database, or a damaged one, is no configuration problem: the
    store moves it aside, starts a new one and says so (``timers.store``).
    """
    path = Path(cfg.tools.timers_db).expanduser() if cfg.tools.timers_db else default_db_path()
    key = f"tools.timers_db ({path})" if not cfg.tools.timers_db else "tools.timers_db"
    if path.exists():
        if not path.is_file():
            return f"{key}: {path} is not a file"
        if not os.access(path, os.R_OK | os.W_OK):
            return f"{key}: {path} is not readable and writable by this user"
        if not os.access(path.parent, os.W_OK | os.X_OK):
            return f"{key}: {path.parent} is not writable by this user, so SQLite cannot add its -wal file"
        return None
    parent = path.parent
    while not parent.exists():  # the folders are made at start: the first that exists decides
        parent = parent.parent
    if not parent.is_dir():
        return f"{key}: {parent} is not a directory, so {path} cannot be created"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{key}: {parent} is not writable by this user, so {path} cannot be created"
    return None


def boost_problems(cfg: Config) -> list[str]:
    """The boost planner's API key variable, when one is named."""
    b = cfg.boost
    if b.enabled and b.backend == "openai" and b.api_key_env and not os.environ.get(b.api_key_env):
        return [f"boost.api_key_env: the environment variable {b.api_key_env} is not set or empty"]
    return []


def mcp_problems(cfg: Config) -> list[str]:
    """Every enabled stdio MCP server's command must be found (on its PATH, or as a path)."""
    out = []
    for i, server in enumerate(cfg.mcp.servers):
        if not server.enabled or not server.command:
            continue
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
    out += boost_problems(cfg) + mcp_problems(cfg)
    if speech:
        out += speech_problems(cfg)
    return out


def check(cfg: Config, *, speech: bool = True, source: str = "") -> None:
    """Raise one ``ConfigError`` listing every problem (see ``problems``)."""
    found = problems(cfg, speech=speech)
    if found:
        raise ConfigError(found, source)
