"""A constrained choice: the model picks one of the shown tools, or none, in JSON a grammar keeps.

A 1.5B model calling tools natively may name a tool it was not shown or write arguments
its schema does not allow. Ollama's ``format`` takes a JSON Schema and compiles it to a
grammar the sampler cannot leave (structured outputs; llama.cpp's json-schema-to-grammar),
so a schema whose ``tool`` is one of the shown names (or ``"none"``, with the answer in
words) and whose ``arguments`` follow that tool's own schema makes a wrong name or a
malformed call impossible to write.

Ollama applies ``format`` to the raw reply, so a constrained request carries no ``tools``
(a ``<tool_call>`` block is not JSON) and IRIS reads the call itself: ``read_choice`` on
the whole reply, ``AnswerStream`` to speak an ``answer`` while it is still being written.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from iris_voice.llm.client import ChatChunk
from iris_voice.tools.registry import ToolSpec

log = logging.getLogger(__name__)

NONE = "none"
"""The choice of no tool: the reply is the ``answer``."""


def _arguments(parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameter schema as the grammar needs it: an object, no keys of its own."""
    schema = {"type": "object", "properties": {}, **parameters}
    schema["additionalProperties"] = False
    return schema


def choice_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """The JSON Schema of one choice among ``tools`` or none (``{"tool": …, "arguments": …}``
    or ``{"tool": "none", "answer": …}``); ``tool`` comes first, so it is decided first."""
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": t.name}, "arguments": _arguments(t.parameters)},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    options.append(
        {
            "type": "object",
            "properties": {"tool": {"const": NONE}, "answer": {"type": "string"}},
            "required": ["tool", "answer"],
            "additionalProperties": False,
        }
    )
    return {"anyOf": options}


@dataclass(frozen=True)
class Choice:
    """What a constrained reply chose."""

    tool: str
    """A shown tool's name, or ``NONE``."""
    arguments: dict[str, Any] = field(default_factory=dict)
    answer: str = ""
    """The words, when ``tool`` is ``NONE``."""


def read_choice(text: str, names: Sequence[str]) -> Choice:
    """The choice a whole reply holds; ``ValueError`` when it is not one (a server that
    ignored ``format``, or a reply cut short)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a choice: {exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
        raise ValueError("not a choice: no tool named")
    tool = data["tool"]
    if tool == NONE:
        return Choice(NONE, answer=str(data.get("answer", "")))
    if tool not in names:
        raise ValueError(f"not a choice: {tool!r} was not shown")
    arguments = data.get("arguments")
    return Choice(tool, arguments if isinstance(arguments, dict) else {})


class AnswerStream:
    """The ``answer`` of a constrained reply, decoded while it streams.

    ``feed`` takes the reply's deltas and returns the answer's new characters once the
    reply is known to choose ``NONE``; nothing for a tool call. Escapes cut between deltas
    are held until complete.
    """

    _TOOL = re.compile(r'\s*\{\s*"tool"\s*:\s*"((?:[^"\\]|\\.)*)"')
    _ANSWER = re.compile(r'\s*,\s*"answer"\s*:\s*"')

    def __init__(self) -> None:
        self._text = ""
        self._at: int | None = None  # where the answer's characters start in _text
        self._done = False

    def feed(self, delta: str) -> str:
        """New characters of the answer (empty while undecided, for a tool, or after its end)."""
        self._text += delta
        if self._done:
            return ""
        if self._at is None:
            # The grammar writes ``tool`` first: its value decides whether an answer follows.
            tool = self._TOOL.match(self._text)
            if tool is None:
                self._done = len(self._text) > 64  # no choice at its start: not one to stream
                return ""
            if tool.group(1) != NONE:
                self._done = True
                return ""
            answer = self._ANSWER.match(self._text, tool.end())
            if answer is None:
                return ""
            self._at = answer.end()
        return self._decode()

    def _decode(self) -> str:
        assert self._at is not None
        out: list[str] = []
        i, text = self._at, self._text
        while i < len(text):
            c = text[i]
            if c == '"':
                self._done = True
                i += 1
                break
            if c != "\\":
                out.append(c)
                i += 1
                continue
            size = 6 if text[i + 1 : i + 2] == "u" else 2
            if i + size > len(text):
                break  # an escape cut between deltas: wait for the rest
            out.append(json.loads(f'"{text[i : i + size]}"'))
            i += size
        self._at = i
        return "".join(out)


CHOICE_NOTE = (
    'Reply in JSON: {"tool": "<tool name>", "arguments": {...}} to call a tool, or '
    '{"tool": "none", "answer": "<what to say>"} when no tool is needed.'
)
"""How a constrained round is told to write its choice (after the turn's tools)."""


class NotAChoice:
    """Marks a stream whose reply was no choice: the server ignored ``format``."""

    seen = False


async def chosen(
    stream: AsyncIterator[ChatChunk], names: Sequence[str], missing: NotAChoice | None = None
) -> AsyncIterator[ChatChunk]:
    """A constrained reply's stream as the loop reads any reply: the answer's words as
    content while they are written, a chosen tool as a structured call on the last chunk.

    A reply that is no choice (a server that ignored ``format``: plain words, or a call in
    the model's own syntax) is passed on as it was written, at its end, and ``missing``
    is marked so the loop stops asking for choices.
    """
    answer = AnswerStream()
    text, spoken = "", ""
    async for chunk in stream:
        text += chunk.content
        words = answer.feed(chunk.content) if chunk.content else ""
        spoken += words
        if not chunk.done:
            if words:
                yield ChatChunk(content=words, thinking=chunk.thinking)
            continue
        try:
            choice = read_choice(text, names)
        except ValueError as exc:
            log.info("the reply is no choice (%s): read as written", exc)
            if missing is not None and not text.lstrip().startswith("{"):
                missing.seen = True  # not a choice cut short: no grammar held the reply
            rest, calls = ("" if spoken else text), chunk.tool_calls
        else:
            rest = words if choice.tool == NONE else ""
            calls = ((choice.tool, choice.arguments),) if choice.tool != NONE else chunk.tool_calls
        yield replace(chunk, content=rest, tool_calls=calls)
