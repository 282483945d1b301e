"""Match a transcript against the sentence templates with hassil, precision first.

hassil yields every way the text fits a template (a wildcard may swallow different
words). Each reading is interpreted and checked by the intent's handler, which the tool
that answers the intent declares (``Tool.intents``); readings that fail a check are not
readings at all. Of the rest, the best by hassil's own measure —
fewest wildcards, then most literal words matched — must all ask for the same thing;
if two of them disagree, or nothing fits, the answer is None and the model takes over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hassil import Intents, RecognizeResult, recognize_all

from iris_voice.conversation.fastpath.templates import load_intents
from iris_voice.tools.intents import Action, IntentHandler

log = logging.getLogger(__name__)

MAX_CHARS = 200
"""Longer transcripts are not everyday commands; they skip matching altogether."""


@dataclass(frozen=True)
class Match:
    """A sentence understood without the model."""

    action: Action
    """The tool call it asks for."""
    ms: float
    """Time spent matching."""


def _score(result: RecognizeResult) -> tuple[int, int]:
    """hassil's ranking: fewer wildcards first, then more literal text matched."""
    wildcards = sum(1 for e in result.entities_list if e.is_wildcard)
    return wildcards, -result.text_chunks_matched


def _letters(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def _slots(result: RecognizeResult, text: str) -> dict[str, Any]:
    """Slot values; a wildcard keeps the words as said ("Paris, France"), not normalised."""
    slots: dict[str, Any] = {}
    for name, entity in result.entities.items():
        slots[name] = entity.text if entity.is_wildcard else entity.value
        if entity.is_wildcard and entity.text_span is not None:
            start, end = entity.text_span
            # hassil's spans can be off when it rewrote number words elsewhere in the
            # sentence; the span is used only when it holds the same words
            if _letters(text[start:end]) == _letters(entity.text):
                slots[name] = text[start:end].strip()
    return slots


class IntentMatcher:
    """Compiled templates (built once: about 5 ms) and the precision-first matching rule."""

    def __init__(
        self, handlers: Mapping[str, IntentHandler], intents: Intents | None = None, language: str = "en"
    ) -> None:
        self.handlers = dict(handlers)
        """Intent name → the interpreter its tool declares (``ToolRegistry.intents()``)."""
        self.intents = intents if intents is not None else load_intents(self.handlers, language)

    def readings(self, text: str) -> list[tuple[tuple[int, int], Action]]:
        """Every checked reading of ``text`` with its score (lower is better)."""
        found = []
        for result in recognize_all(text, self.intents):
            handler = self.handlers.get(result.intent.name)
            action = handler(result.intent.name, _slots(result, text)) if handler else None
            if action is not None:
                found.append((_score(result), action))
        return found

    def match(self, text: str) -> Match | None:
        """The one action ``text`` asks for, or None (no template fits, or any doubt)."""
        start = time.perf_counter()
        text = " ".join(text.split())
        found = self.readings(text) if 0 < len(text) <= MAX_CHARS else []
        ms = round((time.perf_counter() - start) * 1000, 2)
        if not found:
            return None
        best = min(score for score, _ in found)
        top = {action.key: action for score, action in found if score == best}
        if len(top) > 1:
            log.info("fast path: %r is ambiguous (%s); asking the model", text, list(top))
            return None
        action = next(iter(top.values()))
        log.debug("fast path: %r → %s %s in %.1f ms", text, action.tool, action.arguments, ms)
        return Match(action, ms)
