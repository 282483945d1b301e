"""Reading JSON-looking text that a model wrote: bracket matching and call objects.

Brackets are matched string-aware (braces inside strings do not count) with regex
searches, never by decoding: ``bracket_end`` for a text in hand, memoised so that a
long run of unclosed brackets costs one walk, and ``OpenBracket`` for a text that
keeps growing, which resumes where it stopped instead of walking the text again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

_OUT = re.compile(r'[{}\[\]"]')  # what matters outside a string
_IN = re.compile(r'["\\]')  # what matters inside one


def bracket_end(text: str, start: int, memo: dict[int, int | None], depths: dict[int, int]) -> int | None:
    """End (exclusive) of the bracket opened at ``start``, or None if it does not close
    in ``text``; ``depths`` gets the nesting depth of every bracket that closed.

    Strings and escapes are respected, so braces inside strings do not count. Every
    bracket met on the way is memoised: a later match from it would walk the same path,
    which keeps a long run of unclosed brackets linear instead of quadratic. A None in
    ``memo`` holds for this ``text`` only: keep one memo per text.
    """
    if start in memo:
        return memo[start]
    stack, inner, pos = [start], [0], start + 1  # inner: the deepest bracket inside each
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
                inner[-1] = max(inner[-1], depths[p])
                pos = memo[p]  # type: ignore[assignment]
            else:
                stack.append(p)
                inner.append(0)
                pos = p + 1
        else:
            closed, depth = stack.pop(), inner.pop() + 1
            memo[closed], depths[closed] = p + 1, depth
            if not stack:
                return p + 1
            inner[-1] = max(inner[-1], depth)
            pos = p + 1
    for p in stack:
        memo[p] = None
    return None


class OpenBracket:
    """One bracket followed to its end across a growing text, from where it last stopped.

    It keeps only the depth of open brackets, whether it is inside a string and where
    it stopped, so each character is read once however many times ``advance`` is called.
    It finds the same end as ``bracket_end``.
    """

    __slots__ = ("depth", "deepest", "in_string", "pos", "end")

    def __init__(self, start: int) -> None:
        self.depth = 1
        self.deepest = 1
        """The nesting depth so far (the bracket's own, once it closed)."""
        self.in_string = False
        self.pos = start + 1
        self.end: int | None = None
        """End (exclusive) once the bracket closed."""

    def advance(self, text: str) -> int | None:
        """Read what ``text`` added since the last call; the end, once it is known."""
        pos = self.pos
        while self.end is None:
            if self.in_string:
                while (s := _IN.search(text, pos)) is not None and text[s.start()] == "\\":
                    pos = s.start() + 2
                if s is None:
                    pos = max(pos, len(text))
                    break
                pos, self.in_string = s.end(), False
            m = _OUT.search(text, pos)
            if m is None:
                pos = max(pos, len(text))
                break
            pos = m.end()
            char = m.group()
            if char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
                self.deepest = max(self.deepest, self.depth)
            else:
                self.depth -= 1
                if self.depth == 0:
                    self.end = pos
        self.pos = pos
        return self.end

    def shift(self, by: int) -> None:
        """The text lost its first ``by`` characters (all of them already read)."""
        self.pos -= by
        if self.end is not None:
            self.end -= by


def _known(name: Any, known: Collection[str]) -> str | None:
    """The tool name a call refers to, or None when it is not a known tool.

    A name under a path the model made up ("data/functions/set_timer", copied from the
    shape of the MCP tools shown) refers to the one known tool of that last part."""
    if not isinstance(name, str):
        return None
    if name not in known and name.startswith("functions."):
        name = name[10:]  # OpenAI-trained models prefix the namespace
    if name in known or not re.search(r"[/.]", name):
        return name if name in known else None
    tail = re.split(r"[/.]", name)[-1]
    if tail in known:
        return tail
    found = [k for k in known if k.rpartition("/")[2] == tail]
    return found[0] if len(found) == 1 else None


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


def as_call(obj: Any, known: Collection[str]) -> tuple[str, dict[str, Any]] | None:
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


def calls_from(value: Any, known: Collection[str]) -> list[tuple[str, dict[str, Any]]]:
    """Calls in a decoded JSON value: one call object or a list of them."""
    items = value if isinstance(value, list) else [value]
    return [c for c in (as_call(v, known) for v in items) if c is not None]
