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
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from iris_voice.tools.registry import ToolSpec

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
