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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from iris_voice.errors import ConfigError

DEFAULT_SYSTEM_PROMPT = (
    "You are IRIS, a voice assistant on the user's Linux desktop. Your replies are spoken aloud: "
    "answer in one or two short sentences of plain text, with no markdown, lists or emoji. "
    "Use a tool when the question needs the current time, arithmetic, timers or reminders; "
    "otherwise answer directly without tools. After a tool result, state the answer briefly."
)


class _Section(BaseModel):
    # inf and nan are numbers to Python and TOML, but an infinite timeout defeats the
    # protection it exists for: every float must be finite.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


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
    warm_cache: bool = True
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    direct_return: list[str] | None = None
    """Tools whose answer is spoken as is, without a second model round (if they succeed);
    None: the tools that declare their answer a complete sentence (all but the calculator)."""

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
    vad_hangover_ms: Annotated[int, Field(ge=60, le=3000)] = 400
    end_of_turn: Literal["smart_turn", "silence"] = "smart_turn"
    end_of_turn_max_ms: Annotated[int, Field(ge=200, le=5000)] = 1000
    end_of_turn_threshold: Annotated[float, Field(gt=0, lt=1)] = 0.5
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
    incremental: bool = True
    """Decode while the user speaks, committing at pauses; only the tail is left at the end."""
    incremental_min_s: Annotated[float, Field(ge=0.5, le=30)] = 2.0
    """Audio needed since the last commit before a pause is a commit point."""
    incremental_pause_ms: Annotated[int, Field(ge=64, le=1000)] = 150
    speculative: bool = True
    """Silence inside speech that is a commit point; below ``audio.vad_hangover_ms`` to matter."""


class TtsConfig(_Section):
    """Text to speech (Piper)."""

    voice: str = ""
    """Path of a Piper ``.onnx`` voice (its ``.onnx.json`` beside it); "" = the packaged en_US joe voice."""
    length_scale: Annotated[float, Field(gt=0.3, le=3)] = 1.0
    """Speaking rate: below 1 is faster."""
    volume: Annotated[float, Field(gt=0, le=2)] = 1.0
    first_clause_words: Annotated[int, Field(ge=0, le=20)] = 4
    """A reply's first clause (",", ";", ":" or a dash after this many words) is spoken
    before the sentence is complete; 0 waits for whole sentences."""


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class BoostConfig(_Section):
    """Boost mode: a planner model directs the local model's tool calls (llm/boost.py)."""

    enabled: bool = False
    backend: Literal["ollama", "openai"] = "ollama"
    """Where the planner runs: an Ollama model, or an OpenAI-compatible ``/v1/chat/completions``."""
    model: str = ""
    """Planner model; "" = ``llm.model`` for the ollama backend (required for openai)."""
    base_url: str = ""
    """Ollama: "" = ``llm.host``. OpenAI: the API root that ends in ``/v1`` (required)."""
    api_key_env: str = ""
    """NAME of the environment variable holding the API key (never the key); "" = no key."""
    max_loops: Annotated[int, Field(ge=1, le=10)] = 3
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0
    """Longest wait for one whole planner reply."""
    when: Literal["always", "tools"] = "always"
    """``tools``: only requests with tool words (numbers, time, timers…) go to the planner."""
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.2
    tool_format: Literal["concise", "text"] = "concise"
    """How the tools are written into the planner's prompt."""

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and not re.match(r"https?://[^/\s]+", value):
            raise ValueError(f"must be an http:// or https:// URL, not {value!r}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, value: str) -> str:
        if value and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must be the NAME of an environment variable that holds the key "
                "(e.g. OPENAI_API_KEY), not the key itself"
            )
        return value

    def problems(self) -> list[str]:
        """Errors that involve two keys, as ``boost.key: reason`` lines (checked only when enabled)."""
        if not self.enabled or self.backend != "openai":
            return []
        out = []
        if not self.base_url:
            out.append(
                'boost.base_url: is required when boost.backend is "openai" (e.g. http://host:8000/v1)'
            )
        if not self.model:
            out.append('boost.model: is required when boost.backend is "openai"')
        return out


_MCP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Lower-case path segments: the model types categories back, and case mistakes are common.
_MCP_SEGMENT = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


class McpServerConfig(_Section):
    """One MCP tool server: how to start or reach it, where its tools sit, how long to wait."""

    name: str
    """Unique name for logs and error messages (``time``)."""
    category: str
    """Category path of its tools, segments joined by ``/`` (``time``, ``utilities/math``)."""
    description: str = ""
    """What its tools do, a short verb phrase ("get the current time in any time zone"): the
    model reads it in get_tools_in_category's description to decide when to browse there."""
    command: str = ""
    """Executable of a stdio server (``python3``, ``uvx``, ``mcp-server-time``); exclusive with ``url``."""
    args: list[str] = []
    """Arguments of ``command``."""
    url: str = ""
    """Endpoint of a streamable-HTTP server (``http://127.0.0.1:8000/mcp``); exclusive with ``command``."""
    env: dict[str, str] = {}
    """Extra environment of a stdio server, on top of a safe default (HOME, PATH, USER…)."""
    cwd: str = ""
    """Working directory of a stdio server; empty keeps IRIS's."""
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 10.0
    """Longest wait for one tool call before the model gets ``Error: … timed out``."""
    startup_timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0
    """Longest wait for the server to start and answer ``initialize`` and ``tools/list``."""
    mode: Literal["lazy", "eager"] = "lazy"
    """``lazy``: the model browses to the tools when it needs them; ``eager``: always listed."""
    enabled: bool = True
    """False keeps the entry but neither starts the server nor shows its tools."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _MCP_NAME.fullmatch(value):
            raise ValueError("must be 1-64 letters, digits, '_', '.' or '-'")
        return value

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        path = value.strip().strip("/")
        if not path or not all(_MCP_SEGMENT.fullmatch(p) for p in path.split("/")):
            raise ValueError("must be a path such as 'time' or 'utilities/math' (a-z, 0-9, '_', '-')")
        return path

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if value and not re.match(r"https?://[^/\s]+", value):
            raise ValueError("must start with http:// or https:// and name a host")
        return value

    @model_validator(mode="after")
    def _transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of 'command' (a stdio server) or 'url' (streamable HTTP)")
        return self


class McpConfig(_Section):
    """MCP tool servers, started in the background when IRIS starts."""

    start_wait_s: Annotated[float, Field(ge=0, le=60)] = 2.0
    """Longest a turn waits for a server that is still starting before the model gets an error."""
    servers: list[McpServerConfig] = []
    """The servers, each under its own category."""

    @model_validator(mode="after")
    def _unique(self) -> McpConfig:
        for attr in ("name", "category"):
            seen: set[str] = set()
            for server in self.servers:
                value = getattr(server, attr)
                if value in seen:
                    raise ValueError(f"two servers have the {attr} {value!r}; each needs its own")
                seen.add(value)
        return self

    def active(self) -> list[McpServerConfig]:
        """The enabled servers."""
        return [s for s in self.servers if s.enabled]


class RetrievalConfig(_Section):
    """Per-turn tool retrieval: the hidden (lazy MCP) tools a request needs, shown for that turn."""

    enabled: bool = True
    tools_per_turn: Annotated[int, Field(ge=1, le=10)] = 3
    """Most tools added to one turn (after the history, so the cached prompt prefix stays)."""
    min_score: Annotated[float, Field(ge=0, le=100)] = 3.0
    """Least BM25 score of a tool worth showing; below it a request gets no extra tool."""
    meta_tools: bool = False
    """Also list get_tools_in_category and execute_tool (lured the 1.5B model into browsing
    for questions that need no tool)."""


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
    boost: BoostConfig = BoostConfig()
    mcp: McpConfig = McpConfig()
    intents: IntentsConfig = IntentsConfig()
    retrieval: RetrievalConfig = RetrievalConfig()


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
