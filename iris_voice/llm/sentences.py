"""Split a streamed reply into sentences, so speech can start before the model ends.

A sentence ends at ``.``, ``!``, ``?`` or ``…`` followed by whitespace, or at a line
break. Decimal points (``3.5``), times (``3:05``), common abbreviations and initials
do not end a sentence. The splitter only ever looks back a few characters, so it is
cheap to call on every token.
"""

from __future__ import annotations

import re

# Words that take a period without ending a sentence ("Dr. Smith", "e.g. this").
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "approx",
    "a.m", "p.m", "no", "mt", "ft", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "u.s", "u.k",
}  # fmt: skip
_END = re.compile(r"([.!?…]+)([\"')\]]*)(\s+)|(\n+)")


def _is_boundary(text: str, end: int, punct: str, after: str) -> bool:
    """Decide whether the punctuation ending at ``end`` closes a sentence."""
    if punct != ".":
        return True
    word = re.search(r"([A-Za-z.]+)$", text[: end - 1])
    if word:
        w = word.group(1).lower().rstrip(".")
        if w in _ABBREVIATIONS:
            return False
        if len(word.group(1)) == 1 and word.group(1).isupper():  # an initial: "J. R. R. Tolkien"
            return False
    # "3. " in a list is still a boundary, but lower-case continuation usually is not.
    return not (after and after[0].islower())


class SentenceSplitter:
    """Incremental sentence splitter: ``feed`` deltas, get finished sentences back."""

    def __init__(self, min_chars: int = 2) -> None:
        self._buf = ""
        self._min = min_chars

    def feed(self, delta: str) -> list[str]:
        """Add text; return the sentences it completed (stripped, non-empty)."""
        self._buf += delta
        out: list[str] = []
        start = 0
        for m in _END.finditer(self._buf):
            if m.group(4) is not None:
                cut = m.end()
            else:
                after = self._buf[m.end() : m.end() + 1]
                if not after:  # need to see what follows the space before deciding
                    break
                if not _is_boundary(self._buf, m.start(1) + 1, m.group(1)[-1], after):
                    continue
                cut = m.end()
            piece = self._buf[start:cut].strip()
            if len(piece) >= self._min:
                out.append(piece)
                start = cut
        self._buf = self._buf[start:]
        return out

    def flush(self) -> str | None:
        """The unfinished rest at the end of the stream, if any."""
        rest, self._buf = self._buf.strip(), ""
        return rest or None


def split_sentences(text: str) -> list[str]:
    """All sentences of a finished text."""
    s = SentenceSplitter()
    out = s.feed(text)
    tail = s.flush()
    return out + ([tail] if tail else [])
