"""Recover tool calls that a small model wrote as text instead of structured ``tool_calls``.

Ollama only parses a call that opens the reply and is wrapped the way the model's
template says; small models also write calls in ``<tool_call>`` tags mid-reply, in
fenced JSON, or as a bare JSON object. One left-to-right scanner finds them all, both
for a whole reply (``extract_calls``) and for a stream (``SpeakableFilter``), so the
two always agree on what is a call and what may be spoken. JSON is read with
``json.JSONDecoder.raw_decode`` after a string-aware bracket match, never with a regex.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder(strict=False)  # small models put raw newlines in strings
_START = re.compile(r"<|```|[{\[]")
# Qwen-family models also wrap calls in the <tools> tag of their prompt, or echo <tool_response>.
_TAG = r"(?:tool_calls?|tools|tool_response)"
_OPEN = re.compile(rf"<{_TAG}(?:\s[^<>]{{0,100}})?>", re.I)
_CLOSE = re.compile(rf"</{_TAG}\s*>", re.I)
_STRAY = re.compile(rf"</?{_TAG}", re.I)
_MARKUP = re.compile(rf"<{_TAG}(?:\s[^<>]{{0,100}})?>|</{_TAG}\s*>|</?{_TAG}|```", re.I)
_LANG = re.compile(r"[A-Za-z][\w+.-]*")
_OUT = re.compile(r'[{}\[\]"]')
_IN = re.compile(r'["\\]')
_NON_WS = re.compile(r"\S")
_CALL_LANGS = frozenset({"", "json", "json5", "jsonc", "tool_call", "tool_code"})
_TAG_WAIT = 120  # chars a stream may hold while an opening tag waits for its ">"
_HOLD = ("hold",)  # a sentinel: more text could change the answer
_Event = tuple[Any, ...]


@dataclass(frozen=True)
class TextCall:
    """A tool call found in a model's text."""

    name: str
    """A name from ``known_names`` (a ``functions.`` prefix removed)."""
    arguments: dict[str, Any]
    """The arguments object, decoded when the model gave it as a JSON string."""
    span: tuple[int, int]
    """Start and end offsets of the removed markup that held the call."""


def _known(name: Any, known: Collection[str]) -> str | None:
    """The tool name a call refers to, or None when it is not a known tool."""
    if isinstance(name, str) and name not in known and name.startswith("functions."):
        name = name[10:]  # OpenAI-trained models prefix the namespace
    return name if isinstance(name, str) and name in known else None


def _arguments(value: Any) -> dict[str, Any] | None:
    """An arguments object from a dict, a JSON-encoded string or nothing."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value, strict=False)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def _as_call(obj: Any, known: Collection[str]) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) when ``obj`` is a call to a known tool, else None."""
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function")
    if isinstance(fn, dict) and "name" in fn:
        if set(obj) - {"function", "type", "id", "index"}:
            return None
        obj = fn  # the OpenAI wrapper {"type": "function", "function": {...}}
    name = _known(obj.get("name"), known)
    if name is None:
        return None
    key = next((k for k in ("arguments", "parameters") if k in obj), None)
    if key is None:
        # {"name": "get_time"} is a call; {"name": "Bob", "age": 3} is data.
        return (name, {}) if set(obj) <= {"name", "type", "id"} else None
    args = _arguments(obj[key])
    return None if args is None else (name, args)


def _calls_from(value: Any, known: Collection[str]) -> list[tuple[str, dict[str, Any]]]:
    """Calls in a decoded JSON value: one call object or a list of them."""
    items = value if isinstance(value, list) else [value]
    return [c for c in (_as_call(v, known) for v in items) if c is not None]


def _bracket_end(text: str, start: int, memo: dict[int, int | None]) -> int | None:
    """End (exclusive) of the bracket opened at ``start``, or None if it never closes.

    Strings and escapes are respected, so braces inside strings do not count. Every
    bracket met on the way is memoised: a later match from it would walk the same path,
    which keeps a long run of unclosed brackets linear instead of quadratic.
    """
    if start in memo:
        return memo[start]
    stack, pos = [start], start + 1
    while (m := _OUT.search(text, pos)) is not None:
        p = m.start()
        char = text[p]
        if char == '"':
            pos = p + 1
            while (s := _IN.search(text, pos)) is not None and text[s.start()] == "\\":
                pos = s.start() + 2
            if s is None:
                break  # unterminated string: nothing after it closes
            pos = s.end()
        elif char in "{[":
            if p in memo:
                if memo[p] is None:
                    break
                pos = memo[p]  # type: ignore[assignment]
            else:
                stack.append(p)
                pos = p + 1
        else:
            memo[stack.pop()] = p + 1
            if not stack:
                return p + 1
            pos = p + 1
    for p in stack:
        memo[p] = None
    return None


def _could_grow(text: str, end: int) -> bool:
    """Whether ``<tool_call`` ending at ``end`` may still become a whole tag."""
    rest = text[end : end + _TAG_WAIT + 1]
    return rest == "" or (rest[0].isspace() and len(rest) <= _TAG_WAIT and not re.search("[<>]", rest))


def _block_end(text: str, start: int, final: bool) -> tuple[Any, ...]:
    """(inner end, block end) of a tag block opened before ``start``; unclosed runs to the end."""
    m = _STRAY.search(text, start)
    if m is None:
        return _HOLD if not final else (len(text), len(text))
    if c := _CLOSE.match(text, m.start()):
        return m.start(), c.end()
    if not final and text[m.start() + 1] == "/" and _could_grow(text, m.end()):
        return _HOLD
    return m.start(), m.start()  # a new <tool_call> also ends the one before


def _calls_in(inner: str, known: Collection[str]) -> list[tuple[str, dict[str, Any]]]:
    """Calls inside a tag block or fence, whatever markup the model nested there."""
    cleaned = _MARKUP.sub(" ", inner)
    return [(c.name, c.arguments) for c in _scan(cleaned, known, True)[1]]


# Handlers for what _START finds at p. Each returns _HOLD (more text could change the
# answer), ("skip", pos) (prose or data: keep it), ("cut", end, calls) or, for a fence
# that holds no call, ("fence", end, inner, closed).


def _tag(text: str, p: int, final: bool, known: Collection[str], memo: Any) -> tuple[Any, ...]:
    """A ``<``: a whole tag block, a stray tag, or prose such as ``3 < 4``."""
    if m := _OPEN.match(text, p):
        block = _block_end(text, m.end(), final)
        return block if block is _HOLD else ("cut", block[1], _calls_in(text[m.end() : block[0]], known))
    if m := _CLOSE.match(text, p):
        return ("cut", m.end(), [])
    if m := _STRAY.match(text, p):
        return _HOLD if not final and _could_grow(text, m.end()) else ("cut", m.end(), [])
    rest = text[p : p + 16].lower()
    prefixes = ("<tool_call", "</tool_call", "<tool_response", "</tool_response", "<tools", "</tools")
    if not final and len(rest) < 16 and any(t.startswith(rest) for t in prefixes):
        return _HOLD
    return ("skip", p + 1)


def _fence(text: str, p: int, final: bool, known: Collection[str], memo: Any) -> tuple[Any, ...]:
    """A code fence: cut when a json (or plain) fence holds a call, else kept as is."""
    lang = _LANG.match(text, p + 3)
    body = lang.end() if lang else p + 3
    close = text.find("```", body)
    if close < 0 and not final:
        return _HOLD
    inner = text[body:close] if close >= 0 else text[body:]
    end = close + 3 if close >= 0 else len(text)
    found = _calls_in(inner, known) if (lang.group().lower() if lang else "") in _CALL_LANGS else []
    return ("cut", end, found) if found else ("fence", end, inner, close >= 0)


def _bracket(text: str, p: int, final: bool, known: Collection[str], memo: Any) -> tuple[Any, ...]:
    """A ``{"`` or ``[{`` that may start a call object or a list of them."""
    nxt = _NON_WS.search(text, p + 1)
    if nxt is not None and nxt.group() != ('"' if text[p] == "{" else "{"):
        return ("skip", p + 1)
    end = _bracket_end(text, p, memo) if nxt is not None else None
    if end is None:
        return _HOLD if not final else ("skip", p + 1)
    # Skipping a whole object is safe only when no markup hides inside its strings.
    whole = ("skip", p + 1 if _MARKUP.search(text, p, end) else end)
    if text.find('"name"', p, end) < 0:
        return whole  # every call object has a "name" key, so none starts inside
    try:
        value, vend = _DECODER.raw_decode(text, p)
    except RecursionError:
        return whole  # nesting this deep is no model's tool call
    except ValueError:
        return ("skip", p + 1)  # an inner bracket may still hold a valid call
    found = _calls_from(value, known)
    return ("cut", vend, found) if found else whole


_HANDLERS = {"<": _tag, "`": _fence, "{": _bracket, "[": _bracket}


def _scan(text: str, known: Collection[str], final: bool) -> tuple[list[_Event], list[TextCall], int]:
    """Split ``text`` into events: ("text", s), ("cut",), ("fence", whole, inner, closed).

    Returns the events, the calls and where scanning stopped. Unless ``final``, it stops
    at the first place that more text could turn into (or out of) a call.
    """
    events: list[_Event] = []
    calls: list[TextCall] = []
    memo: dict[int, int | None] = {}
    pos = keep = 0
    stop = len(text)
    while (m := _START.search(text, pos)) is not None:
        p = m.start()
        act = _HANDLERS[text[p]](text, p, final, known, memo)
        if act is _HOLD:
            stop = p
            break
        if act[0] == "skip":
            pos = act[1]
            continue
        if p > keep:
            events.append(("text", text[keep:p]))
        if act[0] == "cut":
            events.append(("cut",))
            calls.extend(TextCall(name, args, (p, act[1])) for name, args in act[2])
        else:
            events.append(("fence", text[p : act[1]], act[2], act[3]))
        pos = keep = act[1]
    else:
        tail = len(text) - max(pos, len(text.rstrip("`")))
        if not final and tail in (1, 2):
            stop = len(text) - tail  # one or two backticks may yet become a fence
    if stop > keep:
        events.append(("text", text[keep:stop]))
    return events, calls, stop


class _Joiner:
    """Glues kept text around removed spans; feeding it in pieces gives the same result.

    Whitespace next to a removed span shrinks to one space, newline or blank line, and
    trailing whitespace waits until more text proves it is not before a removed call.
    """

    def __init__(self) -> None:
        self.pending, self.cut_pending, self.started = "", False, False

    def text(self, s: str) -> str:
        body = s.strip()
        if not body:
            self.pending += s
            return ""
        lead = s[: len(s) - len(s.lstrip())]
        ws = self.pending + lead
        if self.cut_pending:
            lines = ws.count("\n")
            ws = "" if not self.started else "\n\n" if lines > 1 else "\n" if lines else " "
        self.pending, self.cut_pending, self.started = s[len(s.rstrip()) :], False, True
        return ws + body

    def finish(self) -> str:
        out, self.pending = ("" if self.cut_pending else self.pending), ""
        return out

    def apply(self, events: list[_Event], strip: bool) -> str:
        """Feed events; with ``strip`` a kept fence loses its markers (for speech)."""
        out = []
        for ev in events:
            if ev[0] == "text":
                out.append(self.text(ev[1]))
            elif ev[0] == "cut":
                self.cut_pending = True
            elif not strip:
                out.append(self.text(ev[1]))
            else:  # a kept fence: its markers go, its text stays
                self.cut_pending = True
                out.append(self.apply(_markup_events(ev[2]), True))
                self.cut_pending = self.cut_pending or ev[3]
        return "".join(out)


def _markup_events(text: str) -> list[_Event]:
    """Text and cuts for every tag and fence marker (an opening fence takes its language)."""
    events: list[_Event] = []
    keep, in_fence = 0, False
    while (m := _MARKUP.search(text, keep)) is not None:
        end = m.end()
        if m.group() == "```":
            if not in_fence and (lang := _LANG.match(text, end)):
                end = lang.end()
            in_fence = not in_fence
        if m.start() > keep:
            events.append(("text", text[keep : m.start()]))
        events.append(("cut",))
        keep = end
    if keep < len(text):
        events.append(("text", text[keep:]))
    return events


def extract_calls(text: str, known_names: Collection[str]) -> tuple[list[TextCall], str]:
    """Find tool calls written as text; return them and the text without them.

    Only calls to ``known_names`` count, everything else stays as written, except
    that ``<tool_call>`` blocks are always removed (a tag is never meant for speech).
    Pass the remainder through ``strip_markup`` before speaking it.
    """
    events, calls, _ = _scan(text, known_names, True)
    if len(events) == 1 and events[0][0] == "text":
        return calls, text
    joiner = _Joiner()
    return calls, joiner.apply(events, False) + joiner.finish()


def strip_markup(text: str) -> str:
    """Remove leftover ``<tool_call>`` tags and code-fence markers from speakable text."""
    joiner = _Joiner()
    return joiner.apply(_markup_events(text), True) + joiner.finish()


class SpeakableFilter:
    """Streams a model reply to speech while holding back anything that may be a call.

    Prose passes through at once; from a ``<tool_call``, a fence or a ``{"`` on, text
    waits until the scanner can decide: a call is swallowed (and kept in ``calls``),
    anything else is released. Its output equals ``strip_markup`` of the remainder
    ``extract_calls`` gives for the whole reply. Use one filter per reply.
    """

    def __init__(self, known_names: Collection[str]) -> None:
        self._known = frozenset(known_names)
        self._buf = ""
        self._offset = 0
        self._joiner = _Joiner()
        self.calls: list[TextCall] = []
        """Calls swallowed so far, with spans into the whole reply."""

    def _run(self, final: bool) -> str:
        events, calls, stop = _scan(self._buf, self._known, final)
        off = self._offset
        self.calls += [TextCall(c.name, c.arguments, (c.span[0] + off, c.span[1] + off)) for c in calls]
        self._buf, self._offset = self._buf[stop:], off + stop
        return self._joiner.apply(events, True)

    def feed(self, delta: str) -> str:
        """Add a chunk of the reply; return the text that is now safe to speak."""
        self._buf += delta
        return self._run(False)

    def flush(self) -> str:
        """The reply has ended: decide everything held back and return the rest."""
        return self._run(True) + self._joiner.finish()
