"""The local sections of IRIS's configuration: the model, tools, audio, speech, fast path.

Each is a frozen pydantic model; ``_Section`` forbids unknown keys and infinite numbers.
The sections that reach other machines or programs (boost, MCP) are in ``remote``; the
whole configuration and its loading in the package's ``__init__``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

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
    choice: Literal["off", "retrieved", "always"] = "off"
    """A round where the model may call a tool writes its choice as JSON a grammar keeps
    (Ollama's ``format``): one tool it was shown with arguments its schema allows, or an
    answer. ``retrieved``: only on turns retrieval added tools to; ``always``; ``off``.
    Only a turn's first choice is constrained: after a tool result the model answers freely."""
    connect_timeout_s: Annotated[float, Field(gt=0)] = 5.0
    request_timeout_s: Annotated[float, Field(gt=0)] = 120.0
    history_turns: Annotated[int, Field(ge=0, le=100)] = 12
    """Most earlier turns kept; past it the oldest go in one step, down to a third (``Bounds.keep``)."""
    history_tokens: Annotated[int, Field(ge=0)] = 1500
    """Most (rough) tokens of kept turns; with the system prompt and tools (~830 tokens) and a
    turn's own rounds it stays well inside ``num_ctx``."""
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
    echo_cancel: Literal["webrtc", "pipewire", "guard", "off"] = "guard"
    """IRIS's own voice in the microphone: "guard" ignores what IRIS itself is saying;
    "webrtc" also removes it with WebRTC's AEC3 inside IRIS, fed the exact samples IRIS
    plays (any devices); "pipewire" runs PipeWire's WebRTC canceller between IRIS and the
    default devices instead. Either is needed for ``barge_in = "voice"`` and falls back to
    "guard" where it cannot run; "off" for headphones."""
    vad_threshold: Annotated[float, Field(gt=0, lt=1)] = 0.5
    vad_hangover_ms: Annotated[int, Field(ge=60, le=3000)] = 400
    end_of_turn: Literal["smart_turn", "silence"] = "smart_turn"
    end_of_turn_max_ms: Annotated[int, Field(ge=200, le=5000)] = 1000
    end_of_turn_threshold: Annotated[float, Field(gt=0, lt=1)] = 0.5
    end_of_turn_recheck_ms: Annotated[int, Field(ge=0, le=1000)] = 100
    """Silence between two questions to Smart Turn within one pause, while it has not called
    the turn finished; 0 asks once per pause (an unsure first verdict then waits for
    ``end_of_turn_max_ms``)."""
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
    patience: Annotated[int, Field(ge=1, le=8)] = 3
    """Model steps (80 ms each) in a row that must score at or above ``threshold``: 1 fires
    on a single step; 3 ignores a phrase that only brushes past it, at 160 ms later."""
    verifier: bool = False
    """Ask IRIS's verifier about every step the ``hey_jarvis`` model scores from a low
    candidate level, and judge its probability against ``threshold`` instead (other
    models run alone). Off by default: the shipped weights refuse some of IRIS's own
    spoken test phrases (``make bench-wake-verifier``)."""
    keep_phrase: bool = True
    """The question's recording starts with the wake phrase, and Whisper is told it opens
    with it (false: the recording starts at the end of the phrase, as before)."""


class SttConfig(_Section):
    """Speech to text (faster-whisper here, or a Wyoming ASR server elsewhere)."""

    engine: Literal["local", "wyoming"] = "local"
    """"local": faster-whisper in IRIS; "wyoming": the Wyoming server at ``uri``."""
    uri: Annotated[str, Field(validate_default=True)] = ""
    """The Wyoming server (``tcp://HOST:PORT`` or ``unix:///PATH``); needed by ``engine = "wyoming"``."""
    timeout_s: Annotated[float, Field(gt=0, le=300)] = 10.0
    """Wyoming: the longest wait to connect and for each reply (the transcript includes the decode)."""
    model: str = "tiny.en"
    """``tiny.en`` (packaged), ``base`` (packaged) or a CTranslate2 model directory."""
    language: str = "en"
    compute_type: Literal["int8", "int8_float32", "float32"] = "int8"
    threads: Annotated[int, Field(ge=1, le=64)] = 2
    beam_size: Annotated[int, Field(ge=1, le=10)] = 1
    incremental: bool = True
    """Decode while the user speaks, committing at pauses; only the tail is left at the end
    (the local engine only)."""
    incremental_min_s: Annotated[float, Field(ge=0.5, le=30)] = 2.0
    """Audio needed since the last commit before a pause is a commit point."""
    incremental_pause_ms: Annotated[int, Field(ge=64, le=1000)] = 96
    """Silence inside speech that is a commit point; below ``audio.vad_hangover_ms`` to matter."""
    speculative: bool = True
    """At each pause, decode the words so far as if the question were over, and start
    answering them while the end of turn is being decided (needs ``incremental``)."""
    window: Literal["auto", "short", "full"] = "auto"
    """"short": Whisper's encoder sees the audio plus ``window_pad_s`` (the full 30 s
    window decides when that decode repeats or looks wrong); "auto": short for a decode
    from the utterance's start, full for a piece that continues a prompt (where short
    windows lose words); "full": always 30 s."""
    window_pad_s: Annotated[float, Field(ge=1, le=20)] = 10.0
    """Zero padding after the audio in a short window (longer: fewer full-window fallbacks)."""

    @field_validator("uri")
    @classmethod
    def _uri(cls, value: str, info: ValidationInfo) -> str:
        value = wyoming_uri(value)
        if info.data.get("engine") == "wyoming" and not value:
            raise ValueError('is needed with engine = "wyoming" (e.g. tcp://HOST:10300)')
        return value


class TtsConfig(_Section):
    """Text to speech (Piper here, or a Wyoming TTS server elsewhere)."""

    engine: Literal["local", "wyoming"] = "local"
    """"local": Piper in IRIS; "wyoming": the Wyoming server at ``uri``."""
    uri: Annotated[str, Field(validate_default=True)] = ""
    """The Wyoming server (``tcp://HOST:PORT`` or ``unix:///PATH``); needed by ``engine = "wyoming"``."""
    timeout_s: Annotated[float, Field(gt=0, le=300)] = 5.0
    """Wyoming: the longest wait to connect and for each reply (one sentence's audio)."""
    voice: str = ""
    """Path of a Piper ``.onnx`` voice (its ``.onnx.json`` beside it); "" = the packaged en_US joe voice."""
    length_scale: Annotated[float, Field(gt=0.3, le=3)] = 1.0
    """Speaking rate: below 1 is faster."""
    volume: Annotated[float, Field(gt=0, le=2)] = 1.0
    first_clause_words: Annotated[int, Field(ge=0, le=20)] = 4
    """A reply's first clause (",", ";", ":" or a dash after this many words) is spoken
    before the sentence is complete; 0 waits for whole sentences."""
    late_cue_s: Annotated[float, Field(ge=0, le=30)] = 2.0
    """Seconds after the end of a spoken question with no reply begun before IRIS says
    ``late_cue``, so the person knows it is working; 0 never says it."""
    late_cue: Annotated[str, Field(min_length=1, max_length=80)] = "One moment."
    """What IRIS says when a reply is late."""

    @field_validator("uri")
    @classmethod
    def _uri(cls, value: str, info: ValidationInfo) -> str:
        value = wyoming_uri(value)
        if info.data.get("engine") == "wyoming" and not value:
            raise ValueError('is needed with engine = "wyoming" (e.g. tcp://HOST:10200)')
        return value


class RetrievalConfig(_Section):
    """Per-turn tool retrieval: the hidden (lazy MCP) tools a request needs, shown for that turn."""

    enabled: bool = True
    tools_per_turn: Annotated[int, Field(ge=1, le=10)] = 2
    """Most tools added to one turn (after the history, so the cached prompt prefix stays;
    each is read anew on every turn it is shown: two, measured in docs/benchmarks.md)."""
    min_score: Annotated[float, Field(ge=0, le=100)] = 3.0
    """Least BM25 score of a tool worth showing; below it a request gets no extra tool."""
    meta_tools: bool = False
    """Also list get_tools_in_category and execute_tool (lured the 1.5B model into browsing
    for questions that need no tool)."""
    definitions: Literal["brief", "full"] = "brief"
    """How a retrieved tool is shown: ``brief`` keeps each description's first sentence and
    drops ``$schema``, titles, examples and defaults (read anew on every turn it is shown);
    ``full`` as its server describes it."""
    examples: bool = False
    """Show each retrieved tool with one example call, its values from its own schema
    (examples, defaults, enums, "e.g." in a description): measured in docs/benchmarks.md."""


REPLY_RULES = (
    "syntax",
    "claims",
    "own_claims",
    "described_call",
    "retry_words",
    "explain",
    "closing",
    "unknown_tool",
    "repeated_call",
    "one_change",
    "grounding",
)
"""The reply policy's rules, in the order they act (``conversation.policy`` says what each guards against)."""


class ReplyConfig(_Section):
    """The reply policy: the rules that judge, hold or replace what the model says."""

    off: list[str] = []
    """Rules switched off (names from ``REPLY_RULES``); every rule is on by default."""

    @field_validator("off")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in REPLY_RULES]
        if unknown:
            raise ValueError(f"unknown rule {unknown[0]!r}; the rules are: {', '.join(REPLY_RULES)}")
        return value


class ConversationsConfig(_Section):
    """Conversations other than this machine's own: each satellite's, each Wyoming client's."""

    keep: Annotated[int, Field(ge=1, le=10_000)] = 64
    """Kept at once; beyond it the least recently used (of a satellite that is not
    connected) is forgotten."""
    idle_s: Annotated[float, Field(gt=0, le=30 * 86400)] = 86400.0
    """One unused this long (of a satellite that is not connected) is forgotten."""


class IntentsConfig(_Section):
    """The local intent fast path: everyday commands answered without the language model."""

    enabled: bool = True


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


def wyoming_uri(value: str) -> str:
    """A Wyoming server address: ``tcp://HOST:PORT`` (an IPv6 host in brackets) or
    ``unix:///PATH``; "" for none."""
    value = value.strip()
    if not value:
        return ""
    m = re.fullmatch(r"tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})", value)
    if m:
        if not 0 < int(m.group(2)) < 65536:
            raise ValueError(f"port out of range in {value!r}")
        return value
    if re.fullmatch(r"unix:///\S+", value):
        return value
    raise ValueError(f"must be tcp://HOST:PORT or unix:///PATH, not {value!r}")
