"""IRIS configuration: frozen pydantic models loaded from TOML.

Search order: ``--config PATH``, ``$IRIS_CONFIG``, ``~/.config/iris/config.toml``,
``/etc/iris/config.toml``, then the built-in defaults. ``OLLAMA_HOST`` overrides
``llm.host`` as it does for Ollama's own tools. Unknown keys are errors, and every
error names its key (``llm.max_tool_calls: must be greater than 0``).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from iris_voice.config.remote import BoostConfig, McpConfig, McpServerConfig
from iris_voice.config.satellite import SatelliteConfig
from iris_voice.config.sections import (
    DEFAULT_SYSTEM_PROMPT,
    REPLY_RULES,
    AudioConfig,
    ConversationsConfig,
    IntentsConfig,
    LlmConfig,
    ReplyConfig,
    RetrievalConfig,
    SttConfig,
    ToolsConfig,
    TtsConfig,
    WakeConfig,
    _Section,
    normalize_host,
)
from iris_voice.config.serve import ServeConfig
from iris_voice.errors import ConfigError

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "AudioConfig",
    "BoostConfig",
    "Config",
    "ConversationsConfig",
    "IntentsConfig",
    "LlmConfig",
    "McpConfig",
    "McpServerConfig",
    "REPLY_RULES",
    "ReplyConfig",
    "RetrievalConfig",
    "ServeConfig",
    "SatelliteConfig",
    "SttConfig",
    "ToolsConfig",
    "TtsConfig",
    "WakeConfig",
    "candidate_paths",
    "format_errors",
    "key_path",
    "load",
    "normalize_host",
    "parse",
    "read_toml",
]


class Config(_Section):
    """The whole configuration."""

    llm: LlmConfig = LlmConfig()
    tools: ToolsConfig = ToolsConfig()
    audio: AudioConfig = AudioConfig()
    wake: WakeConfig = WakeConfig()
    stt: SttConfig = SttConfig()
    tts: TtsConfig = TtsConfig()
    boost: BoostConfig = BoostConfig()
    mcp: McpConfig = McpConfig()
    intents: IntentsConfig = IntentsConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    reply: ReplyConfig = ReplyConfig()
    serve: ServeConfig = ServeConfig()
    satellite: SatelliteConfig = SatelliteConfig()
    conversations: ConversationsConfig = ConversationsConfig()


def _message(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "is required"
    msg = str(err.get("msg", "is invalid"))
    msg = re.sub(r"^Value error, ", "", msg)
    msg = re.sub(r"^Input should be ", "must be ", msg)
    return msg


def key_path(loc: tuple[Any, ...]) -> str:
    """``("mcp", "servers", 0, "command")`` as ``mcp.servers[0].command``, the way TOML readers think."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def format_errors(exc: ValidationError) -> list[str]:
    """One ``key.path: reason`` line per problem."""
    return [f"{key_path(tuple(e.get('loc', ()))) or 'config'}: {_message(e)}" for e in exc.errors()]


def candidate_paths(explicit: str | os.PathLike[str] | None = None) -> list[Path]:
    """Config files in the order IRIS looks for them."""
    if explicit:
        return [Path(explicit)]
    paths = []
    if os.environ.get("IRIS_CONFIG"):
        return [Path(os.environ["IRIS_CONFIG"])]
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    paths.append(Path(xdg) / "iris" / "config.toml")
    paths.append(Path("/etc/iris/config.toml"))
    return paths


def parse(data: dict[str, Any], source: str = "") -> Config:
    """Validate a TOML dict; raise ConfigError naming every bad key."""
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc), source) from None
    if cfg.boost.problems():
        raise ConfigError(cfg.boost.problems(), source)
    if cfg.serve.problems():
        raise ConfigError(cfg.serve.problems(), source)
    if cfg.stt.incremental and cfg.stt.incremental_pause_ms >= cfg.audio.vad_hangover_ms:
        # a pause that long already ends the question: nothing would be decoded early
        bad = f"must be below audio.vad_hangover_ms ({cfg.audio.vad_hangover_ms})"
        raise ConfigError([f"stt.incremental_pause_ms: {bad}"], source)
    host = os.environ.get("OLLAMA_HOST")
    if host:
        try:
            cfg = cfg.model_copy(update={"llm": cfg.llm.model_copy(update={"host": normalize_host(host)})})
        except ValueError as exc:
            raise ConfigError([f"OLLAMA_HOST: {exc}"], "environment") from None
    return cfg


def read_toml(path: Path) -> dict[str, Any]:
    """Read one TOML file; syntax errors, text that is not UTF-8 and nesting too deep for the
    parser (it recurses once per level) become a ConfigError naming the file."""
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: TOML syntax error: {exc}"], str(path)) from None
    except UnicodeDecodeError as exc:  # tomllib decodes the whole file before parsing
        bad = f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); TOML must be UTF-8"
        raise ConfigError([bad], str(path)) from None
    except RecursionError:
        raise ConfigError([f"{path}: arrays or tables nested too deeply to read"], str(path)) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"], str(path)) from None


def load(explicit: str | os.PathLike[str] | None = None) -> tuple[Config, Path | None]:
    """Load the first config file that exists (an explicit path must exist)."""
    paths = candidate_paths(explicit)
    for i, path in enumerate(paths):
        must_exist = explicit is not None or (i == 0 and bool(os.environ.get("IRIS_CONFIG")))
        if path.exists() or must_exist:
            return parse(read_toml(path), str(path)), path
    return parse({}, "defaults"), None
