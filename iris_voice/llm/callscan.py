"""The scanner that finds tool calls a model wrote as text, in a whole reply or a stream.

One left-to-right pass finds what may hold a call — a ``<tool_call>`` tag block, a code
fence, a ``{"`` or ``[{`` that may open a call object — and decides each: cut it (a
call, or markup that is never spoken), keep it as text, or, on a stream, hold it
until more text decides it. JSON is read with ``json.JSONDecoder.raw_decode`` after a
string-aware bracket match, never with a regex. Each stretch of text is searched once
per scan, and an object nested more than 32 levels deep is not decoded (no model nests
a call that deep), so a whole reply costs time linear in its length.

A stream scans again only from where it held, and its ``ScanState`` keeps what that
scan learnt (how far the search for a closing tag or fence got, where the held bracket's
walk stopped), so held text is read once, not once per chunk.

The hold limit: a stream holds back at most ``HOLD_LIMIT`` characters. A fence, ``{``/``[``
or tag block that the ``HOLD_LIMIT`` characters from its start do not decide is taken
not to be a call: a ``{``/``[`` is released as text, and no call starts inside it up to
the bracket that closes it; a fence is released as a fence that ends there (calls in
that part still count), the rest of it is read as ordinary text and its closing marker
is dropped; a tag block is dropped, as always, up to its end tag, but its calls are not
recorded. This is where a stream may differ from ``scan`` of the whole reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from iris_voice.llm.jsonish import OpenBracket, bracket_end, calls_from

HOLD_LIMIT = 2000
"""Characters a stream holds back, at most, waiting to see whether text is a call. IRIS's
tools take arguments of a few hundred characters at most; 2,000 characters of JSON
without the closing bracket are data, and ~20 s of the model's output left unspoken."""

_DECODER = json.JSONDecoder(strict=False)  # small models put raw newlines in strings
_START = re.compile(r"<|```|[{\[]")
# Qwen-family models also wrap calls in the <tools> tag of their prompt, or echo <tool_response>.
_TAG = r"(?:tool_calls?|tools|tool_response)"
_OPEN = re.compile(rf"<{_TAG}(?:\s[^<>]{{0,100}})?>", re.I)
_CLOSE = re.compile(rf"</{_TAG}\s*>", re.I)
_STRAY = re.compile(rf"</?{_TAG}", re.I)
_STRAY_LONGEST = len("</tool_response")
MARKUP = re.compile(rf"<{_TAG}(?:\s[^<>]{{0,100}})?>|</{_TAG}\s*>|</?{_TAG}|```", re.I)
"""Tags and fence markers: never spoken."""
LANG = re.compile(r"[A-Za-z][\w+.-]{0,31}")
"""The language word after an opening fence (at most 32 characters)."""
_FENCE = re.compile(r"```")
_NAME_KEY = re.compile(r'"name"')
_NON_WS = re.compile(r"\S")
_CALL_LANGS = frozenset({"", "json", "json5", "jsonc", "tool_call", "tool_code"})
_TAG_WAIT = 120  # chars a stream may hold while an opening tag waits for its ">"
# No model nests a call this deep; not decoding deeper objects keeps a reply of nested
# objects linear (each character is decoded at most this many times).
_DEEPEST_CALL = 32
_HOLD = ("hold",)  # a sentinel: more text could change the answer
Event = tuple[Any, ...]
"""("text", s), ("cut",) or ("fence", whole, inner, closed)."""


@dataclass(frozen=True)
class TextCall:
    """A tool call found in a model's text."""

    name: str
    """A name from ``known_names`` (a ``functions.`` prefix removed)."""
    arguments: dict[str, Any]
    """The arguments object, decoded when the model gave it as a JSON string."""
    span: tuple[int, int]
    """Start and end offsets of the removed markup that held the call."""


@dataclass
class ScanState:
    """What scanning keeps: a fresh one for a whole text; a stream keeps one from chunk
    to chunk. Positions index the text being scanned; ``rebase`` moves them when the
    text loses its head."""

    limit: int | None = None
    """Characters a held construct may take before it is decided anyway; None for a whole
    text (which will not grow: nothing is kept for a next scan)."""
    memo: dict[int, int | None] = field(default_factory=dict)
    """Bracket ends found by this scan (cleared by each ``scan``: a None is "not yet")."""
    depths: dict[int, int] = field(default_factory=dict)
    """Nesting depths of the brackets in ``memo`` that closed."""
    nearest: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    """For ``next_start``, by pattern: (from, the first match at or after it), this scan."""
    searched: dict[tuple[str, int], int] = field(default_factory=dict)
    """For a search started at a position: no match starts before this one."""
    held: dict[int, OpenBracket] = field(default_factory=dict)
    """Unclosed brackets a stream holds, followed as the text grows."""
    blob: OpenBracket | None = None
    """A ``{``/``[`` past the limit: brackets are plain text until it closes."""
    closing_fence: bool = False
    """A fence was decided at the limit: the next fence marker closes it."""
    dropping: int | None = None
    """A tag block past the limit is being dropped: search its end from here."""

    def search(
        self, pattern: re.Pattern[str], text: str, key: tuple[str, int], start: int, longest: int
    ) -> re.Match[str] | None:
        """``pattern.search(text, start)``, resumed where the same search stopped before.

        ``longest`` is the longest match: one that starts closer than that to the end of
        ``text`` may still need characters that have not come yet.
        """
        if self.limit is None:
            return pattern.search(text, start)
        begin = max(start, self.searched.get(key, start))
        m = pattern.search(text, begin)
        self.searched[key] = m.start() if m else max(begin, len(text) - longest + 1)
        return m

    def next_start(self, pattern: re.Pattern[str], text: str, pos: int) -> int | None:
        """Where the first match of ``pattern`` at or after ``pos`` starts. Asked for
        positions that only grow, it searches each stretch of the text once."""
        begin, found = self.nearest.get(pattern.pattern, (len(text) + 1, None))
        if not (begin <= pos and (found is None or pos <= found)):
            m = pattern.search(text, pos)
            begin, found = pos, m.start() if m else None
            self.nearest[pattern.pattern] = (begin, found)
        return found

    def bracket_end(self, text: str, p: int, final: bool) -> int | None:
        """End of the bracket at ``p``; a stream follows an unclosed one from chunk to chunk."""
        if p in self.memo:
            return self.memo[p]
        if not final and p in self.held:
            end = self.held[p].advance(text)
            if end is not None:
                self.depths[p] = self.held[p].deepest
        else:
            end = bracket_end(text, p, self.memo, self.depths)
            if end is None and not final:
                self.held[p] = OpenBracket(p)
                self.held[p].advance(text)
        self.memo[p] = end
        return end

    def rebase(self, by: int) -> None:
        """The text lost its first ``by`` characters, all decided: forget the positions learnt
        (they are learnt again, from the text kept, at most once per loss)."""
        self.searched.clear()
        self.held.clear()
        if self.blob is not None:
            self.blob.shift(by)
            if self.blob.end is not None and self.blob.end <= 0:
                self.blob = None
        if self.dropping is not None:
            self.dropping -= by


def _past_limit(
    text: str, p: int, decided: int | None, state: ScanState, final: bool, margin: int
) -> bool | None:
    """Whether the construct at ``p`` is past the hold limit: not decided by the text up to
    ``p + limit``. ``decided`` is where it becomes decidable (None: not yet); ``margin``
    is how much further the text must go to show that nothing decides it sooner. None:
    the text does not tell yet."""
    if final or state.limit is None:
        return False
    window = p + state.limit
    if decided is not None and decided <= window:
        return False
    return True if len(text) >= window + margin else None


def _could_grow(text: str, end: int) -> bool:
    """Whether ``<tool_call`` ending at ``end`` may still become a whole tag."""
    rest = text[end : end + _TAG_WAIT + 1]
    return rest == "" or (rest[0].isspace() and len(rest) <= _TAG_WAIT and not re.search("[<>]", rest))


def _block_end(text: str, p: int, start: int, final: bool, state: ScanState) -> tuple[Any, ...]:
    """(inner end, block end) of a tag block opened at ``p``, its body from ``start``; an
    unclosed one runs to the end; ("drop", from) past the hold limit."""
    m = state.search(_STRAY, text, ("stray", start), start, _STRAY_LONGEST)
    past = _past_limit(text, p, m.start() + 1 if m else None, state, final, _STRAY_LONGEST)
    if past:
        return ("drop", m.start() if m else state.searched[("stray", start)])
    if past is None and m is not None:
        return _HOLD  # a tag just past the limit: wait until it is clear what it is
    if m is None:
        return _HOLD if not final else (len(text), len(text))
    if c := _CLOSE.match(text, m.start()):
        return m.start(), c.end()
    if not final and text[m.start() + 1] == "/" and _could_grow(text, m.end()):
        return _HOLD
    return m.start(), m.start()  # a new <tool_call> also ends the one before


def calls_in(inner: str, known: Collection[str]) -> list[tuple[str, dict[str, Any]]]:
    """Calls inside a tag block or fence, whatever markup the model nested there."""
    cleaned = MARKUP.sub(" ", inner)
    return [(c.name, c.arguments) for c in scan(cleaned, known, True)[1]]


# Handlers for what _START finds at p. Each returns _HOLD (more text could change the
# answer), ("skip", pos) (prose or data: keep it), ("cut", end, calls), for a fence
# that holds no call ("fence", end, inner, closed), or, past the hold limit, ("blob",)
# or ("drop", from).


def _tag(text: str, p: int, final: bool, known: Collection[str], state: ScanState) -> tuple[Any, ...]:
    """A ``<``: a whole tag block, a stray tag, or prose such as ``3 < 4``."""
    if m := _OPEN.match(text, p):
        block = _block_end(text, p, m.end(), final, state)
        if block is _HOLD or block[0] == "drop":
            return block
        return ("cut", block[1], calls_in(text[m.end() : block[0]], known))
    if m := _CLOSE.match(text, p):
        return ("cut", m.end(), [])
    if m := _STRAY.match(text, p):
        return _HOLD if not final and _could_grow(text, m.end()) else ("cut", m.end(), [])
    rest = text[p : p + 16].lower()
    prefixes = ("<tool_call", "</tool_call", "<tool_response", "</tool_response", "<tools", "</tools")
    if not final and len(rest) < 16 and any(t.startswith(rest) for t in prefixes):
        return _HOLD
    return ("skip", p + 1)


def _fence(text: str, p: int, final: bool, known: Collection[str], state: ScanState) -> tuple[Any, ...]:
    """A code fence: cut when a json (or plain) fence holds a call, else kept as is."""
    if state.closing_fence:
        state.closing_fence = False
        return ("cut", p + 3, [])  # the end of a fence decided at the hold limit
    lang = LANG.match(text, p + 3)
    body = lang.end() if lang else p + 3
    m = state.search(_FENCE, text, ("fence", p), body, 3)
    close = m.start() if m else -1
    end = close + 3 if m else len(text)
    past = _past_limit(text, p, close + 1 if m else None, state, final, _STRAY_LONGEST)
    if past:  # decided as a fence that ends at the limit, not inside a tag
        end = p + state.limit  # type: ignore[operator]
        # The tag the limit falls inside, if any (the window may hold another before it).
        window = _STRAY.finditer(text, max(body, end - _STRAY_LONGEST + 1), end + _STRAY_LONGEST)
        close, end = -1, next((t.start() for t in window if t.start() < end < t.end()), end)
        state.closing_fence = True
    elif (close < 0 and not final) or past is None:
        return _HOLD
    inner = text[body:close] if close >= 0 else text[body:end]
    found = calls_in(inner, known) if (lang.group().lower() if lang else "") in _CALL_LANGS else []
    return ("cut", end, found) if found else ("fence", end, inner, close >= 0)


def _bracket(text: str, p: int, final: bool, known: Collection[str], state: ScanState) -> tuple[Any, ...]:
    """A ``{"`` or ``[{`` that may start a call object or a list of them."""
    nxt = state.search(_NON_WS, text, ("ws", p), p + 1, 1)
    opens = nxt is not None and nxt.group() == ('"' if text[p] == "{" else "{")
    end = state.bracket_end(text, p, final) if opens else None
    if _past_limit(text, p, (end if opens else nxt.end()) if nxt else None, state, final, 1):
        return ("blob",)
    if not opens:
        return ("skip", p + 1) if nxt is not None or final else _HOLD
    if end is None:
        return _HOLD if not final else ("skip", p + 1)
    # Skipping a whole object is safe only when no markup hides inside its strings (a
    # match that starts inside ends inside: no markup holds a bracket).
    markup = state.next_start(MARKUP, text, p)
    whole = ("skip", p + 1 if markup is not None and markup < end else end)
    name = state.next_start(_NAME_KEY, text, p)
    if name is None or name >= end or state.depths[p] > _DEEPEST_CALL:
        return whole  # every call object has a "name" key, and is not nested deep
    try:
        value, vend = _DECODER.raw_decode(text, p)
    except RecursionError:
        return whole
    except ValueError:
        return ("skip", p + 1)  # an inner bracket may still hold a valid call
    found = calls_from(value, known)
    return ("cut", vend, found) if found else whole


_HANDLERS = {"<": _tag, "`": _fence, "{": _bracket, "[": _bracket}


def _tail_ticks(text: str, pos: int) -> int:
    """Backticks (up to three) at the end of ``text``, after ``pos``."""
    n = 0
    while n < 3 and len(text) - n - 1 >= pos and text[len(text) - n - 1] == "`":
        n += 1
    return n


def scan(
    text: str, known: Collection[str], final: bool, state: ScanState | None = None, start: int = 0
) -> tuple[list[Event], list[TextCall], int]:
    """Split ``text[start:]`` into events: ("text", s), ("cut",), ("fence", whole, inner, closed).

    Returns the events, the calls and where scanning stopped. Unless ``final``, it stops
    at the first place that more text could turn into (or out of) a call; a stream
    passes the same ``state`` each time and starts again from there.
    """
    state = state if state is not None else ScanState()
    state.memo, state.depths, state.nearest = {}, {}, {}
    events: list[Event] = []
    calls: list[TextCall] = []
    pos = keep = stop = start
    blob_end = None
    if state.blob is not None:
        blob_end = state.blob.advance(text)
    while True:
        if state.dropping is not None:  # inside a tag block past the limit: find its end
            m = state.search(_STRAY, text, ("drop", 0), state.dropping, _STRAY_LONGEST)
            resume = state.searched.pop(("drop", 0))
            if m is None:
                state.dropping = None if final else resume
                keep = stop = len(text) if final else resume
                break
            state.dropping, pos, keep = None, m.start(), m.start()
        m = _START.search(text, pos)
        if m is None:
            stop = len(text)
            tail = _tail_ticks(text, pos)
            if not final and tail in (1, 2):
                stop -= tail  # one or two backticks may yet become a fence
            break
        p = m.start()
        if text[p] in "{[" and state.blob is not None and (blob_end is None or p < blob_end):
            pos = p + 1  # inside a blob past the limit: plain text
            continue
        act = _HANDLERS[text[p]](text, p, final, known, state)
        if act is _HOLD:
            stop = p
            break
        if act[0] == "blob":
            state.blob = state.held.pop(p, None) or OpenBracket(p)
            blob_end = state.blob.advance(text)
            pos = p + 1
            continue
        if act[0] == "skip":
            pos = act[1]
            continue
        if p > keep:
            events.append(("text", text[keep:p]))
        if act[0] == "drop":
            events.append(("cut",))
            state.dropping = pos = keep = act[1]
            continue
        if act[0] == "cut":
            events.append(("cut",))
            calls.extend(TextCall(name, args, (p, act[1])) for name, args in act[2])
        else:
            events.append(("fence", text[p : act[1]], act[2], act[3]))
        pos = keep = act[1]
    if stop > keep:
        events.append(("text", text[keep:stop]))
    if state.blob is not None and state.blob.end is not None and stop >= state.blob.end:
        state.blob = None
    return events, calls, stop
