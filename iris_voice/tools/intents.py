"""What a tool declares for the intent fast path: sentence intents it answers, as tool calls.

A tool that everyday sentences ask for ("set a pasta timer for eight minutes") lists the
intents of the sentence templates it answers (``Tool.intents``), each with an
interpreter: the matched slots in, an ``Action`` (one call of the tool, and how to phrase
its result) out — or None at the first doubt, so the sentence goes to the language model.
The fast path (``iris_voice.conversation.fastpath``) matches the templates and runs the
action through the registry like any model call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from iris_voice.tools.registry import spoken

Slots = dict[str, Any]
"""Slot values of a matched template: wildcard words as said, list values as listed."""
Phrase = Callable[[str], "str | None"]
"""The reply for a tool's result, or None when the result is not in the shape expected."""

_POLITE = re.compile(r"(?:[\s,]+(?:please|thanks|thank you))+$", re.IGNORECASE)


@dataclass(frozen=True)
class Action:
    """What a matched sentence asks for: one tool call, and how to phrase its result."""

    intent: str
    """The intent's name, e.g. ``HassStartTimer`` or ``IrisCalculate``."""
    tool: str
    """The tool to call."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Its arguments, as the model would pass them."""
    reply: str = "result"
    """A name for the phrasing (``result``: the tool's own sentence): two readings that
    call the same tool but answer differently ("time" vs "date") are different actions."""
    said: str = ""
    """The question in words where the reply repeats it ("23 times 47")."""
    phrase: Phrase | None = field(default=None, compare=False)
    """Phrases the result; None speaks the tool's own sentence (``spoken``). Only tools
    without side effects may phrase a result as None: the turn then goes to the model."""

    @property
    def key(self) -> str:
        """Two readings of a sentence agree when their keys are equal."""
        return json.dumps([self.tool, self.arguments, self.reply, self.said], sort_keys=True)

    def reply_for(self, result: str) -> str | None:
        """The spoken reply for the tool's ``result`` (see ``phrase``)."""
        return self.phrase(result) if self.phrase is not None else spoken(result)


REFERRED = "<referred>"
"""An argument that means "it": the thing the conversation last acted on or spoke of. The
fast path puts the conversation's referent in its place (``Tool.meta["referent"]`` says
what a call speaks of), or leaves the turn to the model when there is none."""
GONE = "<gone>"
"""A call's referent when the call ended the thing it spoke of (a cancel): "it" means nothing now."""

REFERENT: ContextVar[str | None] = ContextVar("referent", default=None)
"""While a turn's calls run: what its conversation last acted on or spoke of (the
``conversation.followup`` referent), for grounding checks — "cancel it" names no timer,
yet means that one."""

IntentHandler = Callable[[str, Slots], "Action | None"]
"""``handler(intent, slots)``: the action a matched sentence asks for, or None on any doubt."""


def words(value: Any) -> str:
    """A wildcard's words without edge punctuation or a trailing "please"."""
    text = " ".join(str(value or "").split()).strip(" .,!?")
    return _POLITE.sub("", text).strip(" .,!?")
