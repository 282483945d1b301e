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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from iris_voice.errors import ConfigError

DEFAULT_SYSTEM_PROMPT = (
    "You are IRIS, a voice assistant on the user's Linux desktop. Your replies are spoken aloud: "
    "answer in one or two short sentences of plain text, with no markdown, lists or emoji. "
    "Use a tool when the question needs the current time, arithmetic, timers or reminders; "
    "otherwise answer directly without tools. After a tool result, state the answer briefly."
)

DIRECT_RETURN = (
    "get_current_time", "set_timer", "list_timers", "cancel_timer", "adjust_timer", "pause_timer",
    "resume_timer", "set_reminder",
)  # fmt: skip
"""Tools whose result is already a complete spoken sentence (not the calculator's "23 * 47 = 1081")."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LlmConfig(_Section):
    """The Ollama server, the model and the tool-calling loop."""

    host: str = "http://127.0.0.1:11434"
    model: str = "qwen2.5-coder:1.5b"
    tool_mode: Literal["auto", "native", "text"] = "auto"
    text_format: Literal["qwen-xml", "text", "concise"] = "qwen-xml"
    max_tool_calls: Annotated[int, Field(gt=0, le=20)] = 4
    num_ctx: Annotated[int, Field(ge=512, le=131072)] = 4096
    keep_alive: str = "30m"
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.2
    think: bool = False
    connect_timeout_s: Annotated[float, Field(gt=0)] = 5.0
    request_timeout_s: Annotated[float, Field(gt=0)] = 120.0
    history_turns: Annotated[int, Field(ge=0, le=100)] = 6
    history_tokens: Annotated[int, Field(ge=0)] = 1500
    history_idle_reset_s: Annotated[float, Field(ge=0)] = 300.0
    warmup: bool = True
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    direct_return: list[str] = list(DIRECT_RETURN)
    """Tools whose answer is spoken as is, without a second model round (if they succeed)."""

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        return normalize_host(value)

    @field_validator("keep_alive")
    @classmethod
    def _keep_alive(cls, value: str) -> str:
        if not re.fullmatch(r"-1|0|\d+(\.\d+)?(ms|s|m|h)?", value.strip()):
            raise ValueError("must be a duration such as 30m, 1h, 0 or -1 (forever)")
        return value.strip()


class ToolsConfig(_Section):
    """Which native tools the model may call and where their state lives."""

    enabled: list[str] | None = None
    disabled: list[str] = []
    timezone: str = ""
    timers_db: str = ""

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        if value:
            import pytz

            if value not in pytz.all_timezones_set:
                raise ValueError(f"unknown IANA time zone {value!r} (e.g. Europe/Paris); empty means local")
        return value


class AudioConfig(_Section):
    """Microphone, speaker, activation and endpointing of the voice daemon."""

    input_device: str = ""
    """Capture device: a name (substring, case-insensitive) or an index; "" = the default."""
    output_device: str = ""
    """Playback device, as ``input_device``."""
    activation: Literal["wake_word", "push_to_talk", "always"] = "wake_word"
    follow_up_s: Annotated[float, Field(ge=0, le=60)] = 6.0
    barge_in: Literal["off", "wake_word", "voice"] = "wake_word"
    vad_threshold: Annotated[float, Field(gt=0, lt=1)] = 0.5
    vad_hangover_ms: Annotated[int, Field(ge=60, le=3000)] = 300
    pre_roll_ms: Annotated[int, Field(ge=0, le=2000)] = 400
    max_utterance_s: Annotated[float, Field(gt=1, le=120)] = 15.0
    no_speech_timeout_s: Annotated[float, Field(gt=0, le=60)] = 6.0
    chime: bool = True
    alarm_repeat_s: Annotated[float, Field(ge=1, le=600)] = 10.0
    alarm_timeout_s: Annotated[float, Field(ge=0, le=3600)] = 60.0
    notifications: bool = True


class WakeConfig(_Section):
    """The wake word (openWakeWord)."""

    model: str = "hey_jarvis"
    """A built-in model name (hey_jarvis, alexa, hey_mycroft…) or the path of a .tflite/.onnx model."""
    threshold: Annotated[float, Field(gt=0, lt=1)] = 0.5


class SttConfig(_Section):
    """Speech to text (faster-whisper)."""

    model: str = "tiny.en"
    """``tiny.en`` (packaged), ``base`` (packaged) or a CTranslate2 model directory."""
    language: str = "en"
    compute_type: Literal["int8", "int8_float32", "float32"] = "int8"
    threads: Annotated[int, Field(ge=1, le=64)] = 2
    beam_size: Annotated[int, Field(ge=1, le=10)] = 1


class TtsConfig(_Section):
    """Text to speech (Piper)."""

    voice: str = ""
    """Path of a Piper ``.onnx`` voice (its ``.onnx.json`` beside it); "" = the packaged en_US joe voice."""
    length_scale: Annotated[float, Field(gt=0.3, le=3)] = 1.0
    """Speaking rate: below 1 is faster."""
    volume: Annotated[float, Field(gt=0, le=2)] = 1.0


class IntentsConfig(_Section):
    """The local intent fast path: everyday commands answered without the language model."""

    enabled: bool = True


class Config(_Section):
    """The whole configuration."""

    llm: LlmConfig = LlmConfig()
    tools: ToolsConfig = ToolsConfig()
    audio: AudioConfig = AudioConfig()
    wake: WakeConfig = WakeConfig()
    stt: SttConfig = SttConfig()
    tts: TtsConfig = TtsConfig()
    intents: IntentsConfig = IntentsConfig()


def normalize_host(value: str) -> str:
    """Turn ``host``, ``host:port`` or a URL into ``http://host:port`` like Ollama's client."""
    value = value.strip().rstrip("/")
    if not value:
        raise ValueError("must not be empty")
    m = re.fullmatch(r"(?:(https?)://)?(\[[^\]]+\]|[^:/]+)?(?::(\d+))?(/.*)?", value)
    if not m:
        raise ValueError(f"is not a host or URL: {value!r}")
    scheme, host, port, path = m.groups()
    scheme = scheme or "http"
    host = host or "127.0.0.1"
    if host == "0.0.0.0":  # a listen address; connect locally, as the ollama client does
        host = "127.0.0.1"
    port = port or ("443" if scheme == "https" and "://" in value else "11434")
    return f"{scheme}://{host}:{port}{path or ''}"


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


def format_errors(exc: ValidationError) -> list[str]:
    """One ``key.path: reason`` line per problem."""
    return [f"{'.'.join(str(p) for p in e.get('loc', ())) or 'config'}: {_message(e)}" for e in exc.errors()]


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
    host = os.environ.get("OLLAMA_HOST")
    if host:
        try:
            cfg = cfg.model_copy(update={"llm": cfg.llm.model_copy(update={"host": normalize_host(host)})})
        except ValueError as exc:
            raise ConfigError([f"OLLAMA_HOST: {exc}"], "environment") from None
    return cfg


def read_toml(path: Path) -> dict[str, Any]:
    """Read one TOML file; syntax errors become ConfigError with the file and line."""
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: TOML syntax error: {exc}"], str(path)) from None
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
