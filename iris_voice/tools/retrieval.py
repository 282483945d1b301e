"""Tool retrieval: rank every tool for a request with BM25 over what each tool says of itself.

A 1.5B model picks the right tool among ten; among sixty it guesses. ``ToolIndex`` indexes
every tool of a registry — listed and hidden (lazy MCP tools) — by its name split into
words, its description, its MCP category and the server's configured description, its
parameters' names and descriptions, and the trigger words it declares; ``rank`` scores a
request against them with Okapi BM25.

Lexical, and chosen by measurement (``tools/bench/retrieval.py`` prints recall@k): on the
question set the tools' own words and the servers' descriptions carry the meaning, and
BM25 over ~60 short documents takes well under a millisecond in pure Python. The
packaged embedding models on PyPI were no option: one ships only PyTorch weights (for
sentence-transformers), the other no weights at all, and nothing may be fetched at run time.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from iris_voice.tools.registry import Tool

_STOP = frozenset(
    "a an and any are as at be by can could do does for from get give got had has have how i if "
    "in into is it its me my of on or please tell than that the their then there these this to "
    "us was we what when where which who will with would you your yours".split()
)
_K1, _B = 1.2, 0.75  # Okapi BM25's usual constants
_NAME_WEIGHT = 2  # a word of the tool's own name counts twice: it is what the tool is


_UNSTEMMED = frozenset({"times"})  # "23 times 47" is arithmetic, not the time


def _stem(word: str) -> str:
    """A light suffix stripper: "timers" → "timer", "commits" → "commit", "remembered" → "remember"."""
    if word in _UNSTEMMED:
        return word
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            stem = word[: -len(suffix)] + keep
            # "shopping" → "shop", but "called" → "call": a doubled l, s or z stays
            if suffix in ("ing", "ed") and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]
            return stem
    return word


def words(text: str) -> list[str]:
    """The index terms of ``text``: lower-case words (camelCase and snake_case split), no
    stop words, stemmed."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return [_stem(w) for w in re.findall(r"[a-z0-9]{2,}", text.lower()) if w not in _STOP]


def document(tool: Tool) -> list[str]:
    """What a tool says of itself, as index terms."""
    spec = tool.spec
    name = spec.name.replace("/", " ").replace("_", " ")
    # The server's description is the user's own words for what its tools are about: twice.
    server = str(tool.meta.get("server_description", ""))
    parts = [spec.description, server, server]
    props = spec.parameters.get("properties") if isinstance(spec.parameters, dict) else None
    for pname, schema in (props or {}).items() if isinstance(props, dict) else ():
        parts.append(pname.replace("_", " "))
        if isinstance(schema, dict) and isinstance(schema.get("description"), str):
            parts.append(_first_sentence(schema["description"]))
    # Declared trigger words are regex alternations ("timers?|remind\w*"): keep their letters.
    parts += [" ".join(re.findall(r"[a-z]{2,}", re.sub(r"\\\w", " ", w))) for w in tool.words]
    return words(name) * _NAME_WEIGHT + words(" ".join(parts))


def _first_sentence(text: str) -> str:
    """A parameter's first sentence: its examples ("Accepts: ISO 8601 format (e.g., …),
    relative dates …") would make the tool's document long and its own words count less."""
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip(), maxsplit=1)[0]


@dataclass(frozen=True)
class Scored:
    """One tool's score for a request."""

    name: str
    """The tool's name."""
    score: float
    """BM25 score (0 when no word matches)."""


class ToolIndex:
    """BM25 over a fixed set of tools (build a new one when the tools change)."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self.names: list[str] = []
        """The indexed tools' names, in index order."""
        self._docs: list[Counter[str]] = []
        self._lengths: list[int] = []
        for tool in tools:
            terms = document(tool)
            self.names.append(tool.name)
            self._docs.append(Counter(terms))
            self._lengths.append(len(terms))
        n = len(self._docs)
        self._avg = sum(self._lengths) / n if n else 0.0
        df = Counter(term for doc in self._docs for term in doc)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def __len__(self) -> int:
        return len(self.names)

    def terms(self, name: str) -> set[str]:
        """The index terms of the tool called ``name`` (empty for a tool not indexed)."""
        return set(self._docs[self.names.index(name)]) if name in self.names else set()

    def rank(self, request: str) -> list[Scored]:
        """Every indexed tool, best first, scored against ``request``."""
        query = set(words(request))
        scored = []
        for name, doc, length in zip(self.names, self._docs, self._lengths, strict=True):
            score = 0.0
            for term in query & doc.keys():
                tf = doc[term]
                norm = _K1 * (1 - _B + _B * length / self._avg)
                score += self._idf[term] * tf * (_K1 + 1) / (tf + norm)
            scored.append(Scored(name, round(score, 3)))
        return sorted(scored, key=lambda s: -s.score)

    def top(self, request: str, k: int, min_score: float, ratio: float = 0.0) -> list[Scored]:
        """At most ``k`` best tools scoring at least ``min_score`` and ``ratio`` of the best."""
        ranked = self.rank(request)
        best = ranked[0].score if ranked else 0.0
        return [s for s in ranked[:k] if s.score >= min_score and s.score >= ratio * best]
