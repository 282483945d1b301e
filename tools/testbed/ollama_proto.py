"""Pure wire-format helpers for the Ollama-protocol test server (no llama.cpp here).

Everything that decides what the bytes on the wire look like lives in this module so it
can be unit-tested without a model: model-name normalisation, keep_alive parsing, request
validation, chat-template rendering and the ``<tool_call>`` stream filter; the response
bodies are in ``ollama_replies``. Shapes follow Ollama's documented ``/api/chat`` format
(NDJSON stream, tool-call arguments as objects, ``{"error": "…"}`` bodies).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

DEFAULT_KEEP_ALIVE = 300.0
TOOL_OPEN = "<tool_call>"
TOOL_CLOSE = "</tool_call>"
REGISTRY_PREFIX = "registry.ollama.ai/library/"


class ProtocolError(Exception):
    """A request Ollama would refuse: carries the HTTP status and Ollama's error text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# --- names and times ---------------------------------------------------------------------------


def canonical_name(name: str) -> str:
    """Normalise a model name the way Ollama matches it: case-insensitive, the default
    registry/namespace dropped, and a missing tag read as ``:latest``."""
    n = name.strip().lower()
    for prefix in ("registry.ollama.ai/", "library/"):
        if n.startswith(prefix):
            n = n[len(prefix) :]
    if ":" not in n.rsplit("/", 1)[-1]:
        n += ":latest"
    return n


def registry_name(name: str) -> str:
    """The fully qualified name Ollama puts in capability errors (``registry.ollama.ai/library/x:tag``)."""
    return REGISTRY_PREFIX + canonical_name(name)


_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_keep_alive(value: Any) -> float | None:
    """Seconds to keep the model loaded after a request, ``None`` meaning forever.

    Mirrors Ollama's ``api.Duration``: a JSON number is seconds, a string is a Go duration
    (``"5m"``, ``"1h30m"``, ``"0"``), anything negative means "never unload".
    Raises ``ValueError`` for anything else.
    """
    if value is None:
        return DEFAULT_KEEP_ALIVE
    if isinstance(value, bool):
        raise ValueError(f"invalid keep_alive {value!r}")
    if isinstance(value, int | float):
        return None if value < 0 else float(int(value))
    if not isinstance(value, str):
        raise ValueError(f"invalid keep_alive {value!r}")
    text = value.strip()
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if not m:
            raise ValueError(f'time: invalid duration "{value}"')
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos == 0:
        raise ValueError(f'time: invalid duration "{value}"')
    return None if sign < 0 else total


# --- requests --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatOptions:
    """Sampling options from the request's ``options`` (defaults are Ollama's)."""

    num_ctx: int | None = None
    """Context size; ``None`` means the server's ``--n-ctx``."""
    temperature: float = 0.8
    top_p: float = 0.9
    top_k: int = 40
    min_p: float = 0.0
    repeat_penalty: float = 1.1
    seed: int | None = None
    """``None`` (or negative on the wire): a random seed per request."""
    num_predict: int | None = None
    """Token limit; ``None`` (-1/-2 on the wire): until the model stops or the context is full."""
    stop: tuple[str, ...] = ()


_OPTION_TYPES: dict[str, type] = {
    "num_ctx": int,
    "temperature": float,
    "top_p": float,
    "top_k": int,
    "min_p": float,
    "repeat_penalty": float,
    "seed": int,
    "num_predict": int,
}


def parse_options(raw: Any) -> ChatOptions:
    """Validate ``options``; unknown keys are ignored (Ollama only logs them)."""
    if raw is None:
        return ChatOptions()
    if not isinstance(raw, dict):
        raise ProtocolError(400, "options must be an object")
    values: dict[str, Any] = {}
    for key, kind in _OPTION_TYPES.items():
        if raw.get(key) is None:
            continue
        v = raw[key]
        # JSON has one number type: accept 4096.0 for an int option like Go's decoder does.
        if isinstance(v, bool) or not isinstance(v, int | float) or (kind is int and v != int(v)):
            raise ProtocolError(
                400, f'option "{key}" must be of type {"integer" if kind is int else "float"}'
            )
        values[key] = kind(v)
    stop = raw.get("stop")
    if stop is not None:
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise ProtocolError(400, 'option "stop" must be of type array of strings')
        values["stop"] = tuple(s for s in stop if s)
    if values.get("seed", 0) < 0:
        values["seed"] = None  # Ollama: a negative seed means "random"
    if values.get("num_predict", 1) <= 0:
        values["num_predict"] = None  # -1 (infinite) and -2 (fill context) both mean "until the context ends"
    return ChatOptions(**values)


@dataclass(frozen=True)
class ChatRequest:
    """A validated ``POST /api/chat`` body."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    stream: bool = True
    """Ollama streams unless the body says ``"stream": false``."""
    options: ChatOptions = field(default_factory=ChatOptions)
    keep_alive: float | None = DEFAULT_KEEP_ALIVE
    """Seconds; ``None`` = forever, 0 = unload after the request."""
    think: bool | str | None = None
    format: str | dict[str, Any] | None = None
    """``"json"`` or a JSON Schema: the reply is constrained to it (Ollama's structured outputs)."""


def _check_message(i: int, msg: Any) -> dict[str, Any]:
    if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
        raise ProtocolError(400, f"messages[{i}]: role must be a string")
    content = msg.get("content")
    if content is not None and not isinstance(content, str):
        raise ProtocolError(400, f"messages[{i}]: content must be a string")
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ProtocolError(400, f"messages[{i}]: tool_calls must be an array")
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ProtocolError(400, f"messages[{i}]: tool_calls[].function.name must be a string")
        # Ollama's Go type makes arguments an object; a JSON string here fails to unmarshal.
        if not isinstance(fn.get("arguments", {}), dict):
            raise ProtocolError(400, f"messages[{i}]: tool_calls[].function.arguments must be an object")
    return msg


def parse_chat_request(body: Any) -> ChatRequest:
    """Validate a chat body into a :class:`ChatRequest` or raise :class:`ProtocolError` (400)."""
    if not isinstance(body, dict):
        raise ProtocolError(400, "invalid request body: expected a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ProtocolError(400, "model is required")
    messages = body.get("messages") or []
    if not isinstance(messages, list):
        raise ProtocolError(400, "messages must be an array")
    tools = body.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise ProtocolError(400, "tools must be an array of objects")
    think = body.get("think")
    if think is not None and not isinstance(think, bool | str):
        raise ProtocolError(400, "think must be a boolean or a string")
    fmt = body.get("format") or None
    if fmt is not None and fmt != "json" and not isinstance(fmt, dict):
        raise ProtocolError(400, 'invalid format: expected "json" or a JSON schema')
    try:
        keep_alive = parse_keep_alive(body.get("keep_alive"))
    except ValueError as exc:
        raise ProtocolError(400, str(exc)) from None
    return ChatRequest(
        model=model,
        messages=[_check_message(i, m) for i, m in enumerate(messages)],
        tools=tools,
        stream=body.get("stream") is not False,  # Ollama streams unless told `false`
        options=parse_options(body.get("options")),
        keep_alive=keep_alive,
        think=think,
        format=fmt,
    )


# --- prompt ----------------------------------------------------------------------------------------


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: int | None = None, separators=None, sort_keys=False
) -> str:
    # Hugging Face's override: Jinja's own tojson HTML-escapes <, > and & — not what the model was trained on.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise(message: str) -> None:
    raise ValueError(message)


class ChatTemplate:
    """The GGUF's ``tokenizer.chat_template`` rendered the way transformers renders it."""

    def __init__(self, source: str) -> None:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        self.source = source
        self._template = env.from_string(source)

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """Render ``messages`` (Ollama shape) and ``tools`` (function-wrapped dicts) with the
        generation prompt appended."""
        # The template concatenates content with strings, so a tool-calling assistant
        # turn without content must read as "" rather than None.
        msgs = [{**m, "content": m.get("content") or ""} for m in messages]
        return self._template.render(messages=msgs, tools=tools or None, add_generation_prompt=True)


# --- tool calls ------------------------------------------------------------------------------------

_BLOCK = re.compile(re.escape(TOOL_OPEN) + r"(.*?)(?:" + re.escape(TOOL_CLOSE) + r"|\Z)", re.DOTALL)


def parse_tool_calls(text: str) -> tuple[list[dict[str, Any]], str] | None:
    """Turn ``<tool_call>{json}</tool_call>`` blocks into Ollama tool calls.

    Returns ``(tool_calls, leftover_text)``, or ``None`` when any block is not a JSON object
    with a string ``name`` and object ``arguments`` — then the whole text stays content.
    """
    calls = []
    for m in _BLOCK.finditer(text):
        try:
            obj = json.loads(m.group(1))
        except json.JSONDecodeError:
            return None
        args = obj.get("arguments", {}) if isinstance(obj, dict) else None
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not isinstance(args, dict):
            return None
        calls.append({"function": {"name": obj["name"], "arguments": args}})
    if not calls:
        return None
    return calls, _BLOCK.sub("", text).strip()


_OPEN_LEAD = re.compile(r"\s*" + re.escape(TOOL_OPEN) + r"\s*")
_CLOSE_LEAD = re.compile(r"\s*" + re.escape(TOOL_CLOSE))
_DECODER = json.JSONDecoder()


class ToolCallFilter:
    """Streams content through unchanged unless the reply opens with ``<tool_call>``.

    Like Ollama with a Qwen template, only a call that is the first thing the model says is
    parsed: output is held back while it could still become the tag, released as content
    the moment it cannot, and buffered once the tag is seen. Each call is ready (``ready``)
    as soon as its JSON object is complete, as Ollama's incremental parser sends it (since
    0.8) — a client that needs only the first call can stop the generation there.
    """

    def __init__(self, enabled: bool) -> None:
        self._mode = "undecided" if enabled else "content"
        self._buf = ""
        self._pending: list[dict[str, Any]] = []
        self._closing = False  # a call was taken: its closing tag is still to come
        self._taken = 0  # calls taken from the buffer so far

    def feed(self, text: str) -> str:
        """Take a generated delta; return the content that can be sent now."""
        if self._mode == "content":
            return text
        self._buf += text
        if self._mode == "calls":
            self._take_calls()
            return ""
        head = self._buf.lstrip()
        if head.startswith(TOOL_OPEN):
            self._mode = "calls"
            self._take_calls()
            return ""
        if TOOL_OPEN.startswith(head):  # still a prefix of the tag (or only whitespace so far)
            return ""
        self._mode = "content"
        out, self._buf = self._buf, ""
        return out

    def ready(self) -> list[dict[str, Any]]:
        """The calls completed since the last look (each given once)."""
        calls, self._pending = self._pending, []
        return calls

    def _take_calls(self) -> None:
        """Move every complete call at the head of the buffer into the pending calls."""
        while True:
            if self._closing and (close := _CLOSE_LEAD.match(self._buf)):
                self._buf, self._closing = self._buf[close.end() :], False
            opened = _OPEN_LEAD.match(self._buf)
            if opened is None:
                return
            try:
                obj, end = _DECODER.raw_decode(self._buf, opened.end())
            except ValueError:
                return  # not complete yet (or malformed: left to ``finish``)
            args = obj.get("arguments", {}) if isinstance(obj, dict) else None
            if not isinstance(args, dict) or not isinstance(obj.get("name"), str):
                return
            self._pending.append({"function": {"name": obj["name"], "arguments": args}})
            self._buf, self._closing = self._buf[end:], True
            self._taken += 1

    def finish(self) -> tuple[str, list[dict[str, Any]]]:
        """End of generation: return ``(remaining_content, tool_calls)`` (the calls not
        yet taken with ``ready``)."""
        text, self._buf = self._buf, ""
        calls = self.ready()
        if self._mode != "calls":
            return text, calls
        if self._closing and (close := _CLOSE_LEAD.match(text)):
            text = text[close.end() :]
        if not text.strip():
            return "", calls
        if self._taken and TOOL_OPEN not in text:
            return text.strip(), calls  # words after the calls
        parsed = parse_tool_calls(text)
        if parsed is None:
            return text, calls  # malformed call: the client gets the raw text to recover from
        more, rest = parsed
        return rest, calls + more


# --- responses -------------------------------------------------------------------------------------
