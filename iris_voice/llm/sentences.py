"""Split a streamed reply into sentences, so speech can start before the model ends.

A sentence ends at a run of ``.``, ``!``, ``?`` or ``…`` (closing quotes and brackets
may follow) followed by whitespace, or at a line break. A period does not end a
sentence after a common abbreviation ("Dr.", "e.g."), after an initial ("J. R. R.") or
before a lower-case word ("3. item", "approx. five"), and never inside a number or a
time (``3.5``, ``3:05``: no whitespace follows). A candidate end is decided by the first
character after its whitespace, so the splitter waits for that character.

The splitter is incremental: it keeps a scan position and a small state (which part of
a candidate end it is in), so across all ``feed`` calls every character is examined a
bounded number of times, and the only look-back is the few characters of the word
before a period. Text that never reaches a sentence end is not held for ever: a
sentence longer than ``max_chars`` is cut at its last clause break (``,`` ``;`` ``:``
or a dash, then whitespace) in the second half of the limit, else at its last
whitespace, else at the limit itself. So the buffer stays bounded and speech goes on.

Each candidate end is decided in one place (``_ends_sentence``) and every cut goes
through ``_cut``.

A reply's first piece may be its first clause (``first_clause_words``): the synthesizer
can start on "Octopuses have three hearts," while the model is still writing the rest,
so the first audio no longer waits for a whole sentence. A clause ends at ``,`` ``;``
``:`` or a dash followed by whitespace, once it has that many words, and only where no
number, time, date or name is split: never before a word that starts with a digit
("November 23, 2026", "2, 3 and 5") or a capital ("Paris, France"; a weekday's comma before
its date is the exception: "Today is Tuesday, November 24"), and never inside a
number or a time (``1,000`` and ``3:05`` have no whitespace after the mark). Only the
first ``CLAUSE_MAX_CHARS`` characters are searched, so the look stays bounded.
"""

from __future__ import annotations

import re

# Words that take a period without ending a sentence ("Dr. Smith", "e.g. this").
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "approx",
    "a.m", "p.m", "no", "mt", "ft", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "u.s", "u.k",
}  # fmt: skip
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.")
# One more than the longest abbreviation: a word that fills the whole window is longer
# than any abbreviation, so nothing further back can matter.
_LOOKBACK = max(map(len, _ABBREVIATIONS)) + 1
_CLAUSE = frozenset(",;:—–")

MAX_SENTENCE = 300
"""Characters a sentence may reach before it is cut anyway. English sentences rarely
pass ~250 characters, so ordinary replies are never cut early; at the ~100 characters
a second a small local model writes, a run-on waits at most ~3 s before it is spoken."""

_NEXT = re.compile(r"[.!?…\n]")  # the next character that may end a sentence
_NEXT_OR_CLAUSE = re.compile(r"[.!?…\n,;:—–]")  # …or a first clause

CLAUSE_MAX_CHARS = 120
"""A first clause is looked for only this far into a reply: past it, sentences as usual."""
_RUN = re.compile(r"[.!?…]*")
_CLOSERS = re.compile(r"[\"')\]]*")
_SPACE = re.compile(r"[^\S\n]*")  # whitespace up to a line break, which is a cut of its own
_NON_SPACE = re.compile(r"\S")

# Where the scanner is: plain text, a run of end punctuation, the quotes/brackets after
# it, or the whitespace after those (a candidate end, decided by the next character);
# or the whitespace after a clause mark (a candidate first-clause end, decided the same way).
_TEXT, _RUN_PHASE, _CLOSERS_PHASE, _SPACE_PHASE, _CLAUSE_PHASE = range(5)


def _word_before(window: str) -> str | None:
    """The letters-and-dots word that ends ``window``; None when it may be longer."""
    i = len(window)
    while i > 0 and window[i - 1] in _WORD_CHARS:
        i -= 1
    return None if i == 0 and len(window) == _LOOKBACK else window[i:]


def _keeps_period(word: str | None) -> bool:
    """Whether a period after ``word`` belongs to it: an abbreviation or an initial."""
    if not word:
        return False
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())


def _ends_sentence(last: str, keeps_period: bool, after: str) -> bool:
    """The decision for one candidate end: its last punctuation mark, whether the word
    before the run keeps a period (``_keeps_period``), and the first character after
    the whitespace. ``!``, ``?`` and ``…`` always end a sentence; a period does unless
    its word keeps it or a lower-case word follows ("3. item" in a list still does)."""
    if last != ".":
        return True
    return not keeps_period and not after.islower()


_DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())


def _ends_clause(before: str | None, after: str) -> bool:
    """Whether a clause mark followed by whitespace ends a first clause, by the word before
    it and the first character of the next word: not before a number ("23, 2026") or a
    name ("Paris, France"); but a weekday's comma before its date is a clause's end
    ("Today is Tuesday, November 24": the date is whole on the other side)."""
    if after.isdigit():
        return False
    return not after.isupper() or (before or "").lower() in _DAYS


def _forced_cut(text: str, start: int, limit: int) -> int:
    """Where a sentence that began at ``start`` is cut when it reached ``limit`` characters
    without an end: after the last clause break that leaves at least half the limit, else
    after the last whitespace, else at the limit. Only ``text[start:start + limit]`` is read."""
    end = start + limit
    for j in range(end - 1, start + limit // 2 - 1, -1):
        if text[j].isspace():
            prev = text[j - 1] if j > start else ""
            if prev in _CLAUSE or (prev == "-" and j - 2 >= start and text[j - 2].isspace()):
                return j + 1
    for j in range(end - 1, start - 1, -1):
        if text[j].isspace():
            return j + 1
    return end


class SentenceSplitter:
    """Incremental sentence splitter: ``feed`` deltas, get finished sentences back.

    A piece shorter than ``min_chars`` (after stripping) is not handed out alone: it
    joins the next one. With ``first_clause_words`` the first piece may be a clause (see
    the module notes). ``examined`` counts the characters the scanner has looked at
    (for tests of its cost).
    """

    def __init__(
        self, min_chars: int = 2, max_chars: int = MAX_SENTENCE, first_clause_words: int = 0
    ) -> None:
        self._min = min_chars
        self._max = max_chars
        self._clause_words = first_clause_words
        self.examined = 0
        """Characters examined so far (each scan step adds the span it read)."""
        self._reset()

    def _reset(self) -> None:
        self._buf = ""  # text from just before the current sentence on
        self._prev = ""  # up to _LOOKBACK characters that came before _buf
        self._start = 0  # where the current sentence begins in _buf (a non-space, or the end)
        self._seen = 0  # the last cut considered: _buf[_start:_seen] is empty or too short
        self._pos = 0  # the next character to examine
        self._phase = _TEXT
        self._last = ""  # the last mark of the current punctuation run
        self._keeps = False  # the word before the current run keeps its period
        self._pieces = 0  # pieces handed out: a first clause is only ever the first
        self._clause_at = 0  # where a candidate first clause ends (just after its mark)

    def feed(self, delta: str) -> list[str]:
        """Add text; return the sentences it completed (stripped, non-empty)."""
        self._buf += delta
        out: list[str] = []
        self._scan(out)
        self._settle()
        while len(self._buf) - self._start > self._max:
            self._force(out)
        self._trim()
        return out

    def flush(self) -> str | None:
        """The unfinished rest at the end of the stream, if any; the splitter starts over."""
        rest = self._buf[self._start :].strip()
        self._reset()
        return rest or None

    # -- finding candidate ends ------------------------------------------------------------

    def _scan(self, out: list[str]) -> None:
        """Advance the scan position to the end of the buffer, cutting where sentences end."""
        buf, n, pos = self._buf, len(self._buf), self._pos
        while pos < n:
            phase = self._phase
            if phase == _TEXT:
                m = (_NEXT_OR_CLAUSE if self._clause_open(pos) else _NEXT).search(buf, pos)
                if m is None:
                    self.examined += n - pos
                    pos = n
                    break
                i = m.start()
                self.examined += i - pos + 1
                if buf[i] == "\n":
                    pos = i + 1
                    self._cut(pos, out)
                    continue
                if buf[i] in _CLAUSE:
                    if self._clause_open(i):  # the mark itself must be early enough too
                        self._clause_at, self._phase = i + 1, _CLAUSE_PHASE
                    pos = i + 1
                    continue
                self._keeps = _keeps_period(_word_before(self._window(i)))
                self._phase, pos = _RUN_PHASE, i
                continue
            if phase == _CLAUSE_PHASE:
                pos = self._clause_space(buf, pos, out)
                continue
            pattern = _RUN if phase == _RUN_PHASE else _CLOSERS if phase == _CLOSERS_PHASE else _SPACE
            end = pattern.match(buf, pos).end()
            self.examined += end - pos + (end < n)
            if phase == _RUN_PHASE and end > pos:
                self._last = buf[end - 1]
            pos = end
            if pos == n:
                break  # the run, the quotes or the whitespace may go on in the next delta
            char = buf[pos]
            if phase == _RUN_PHASE:
                self._phase = _CLOSERS_PHASE
            elif phase == _CLOSERS_PHASE:
                self._phase = _SPACE_PHASE if char.isspace() else _TEXT
            elif char == "\n":
                pos += 1  # a line break inside the whitespace: a cut, then more whitespace
                self._cut(pos, out)
            else:
                self._phase = _TEXT
                if _ends_sentence(self._last, self._keeps, char):
                    self._cut(pos, out)
        self._pos = pos

    def _clause_open(self, pos: int) -> bool:
        """A first clause may still end before ``pos``: nothing handed out yet, and within
        the first ``CLAUSE_MAX_CHARS`` characters of the reply."""
        return bool(self._clause_words) and self._pieces == 0 and pos - self._start <= CLAUSE_MAX_CHARS

    def _clause_space(self, buf: str, pos: int, out: list[str]) -> int:
        """After a clause mark: skip its whitespace, then decide by the next character;
        the new scan position (the end of the buffer while undecided)."""
        end = _SPACE.match(buf, pos).end()
        self.examined += end - pos + (end < len(buf))
        if end == len(buf):
            return end  # the whitespace may go on, or there was none yet: wait
        at = self._clause_at
        if end == at or buf[end] == "\n":
            self._phase = _TEXT  # "1,000", "3:05": no whitespace; a line break cuts anyway
            return end
        self._phase = _TEXT
        before = buf[self._start : at - 1].split()  # bounded: within CLAUSE_MAX_CHARS
        if len(before) >= self._clause_words and _ends_clause(before[-1], buf[end]):
            self._cut(at, out)
        return end

    def _window(self, i: int) -> str:
        """The ``_LOOKBACK`` characters before ``_buf[i]``, reaching into the text already cut."""
        if i >= _LOOKBACK:
            return self._buf[i - _LOOKBACK : i]
        return (self._prev + self._buf[:i])[-_LOOKBACK:]

    # -- cutting -----------------------------------------------------------------------------

    def _settle(self) -> None:
        """Move the sentence start past whitespace: a sentence starts at a word."""
        m = _NON_SPACE.search(self._buf, self._start)
        new = m.start() if m else len(self._buf)
        self.examined += new - self._start
        self._start = new

    def _cut(self, cut: int, out: list[str]) -> None:
        """A sentence may end at ``cut``: hand it out unless it is too short (then it
        joins the next one); first force cuts if it grew past the limit."""
        self._settle()
        while cut - self._start > self._max:
            self._force(out)
        if cut <= self._start:
            self._seen = max(self._seen, cut)
            return
        new_from = max(self._start, self._seen)
        self.examined += cut - new_from
        if self._start < self._seen and not _NON_SPACE.search(self._buf, new_from, cut):
            self._seen = cut  # only whitespace since a piece too short to say: still too short
            return
        piece = self._buf[self._start : cut].rstrip()
        self._seen = cut
        if len(piece) >= self._min:
            out.append(piece)
            self._pieces += 1
            self._start = cut
            self._settle()

    def _force(self, out: list[str]) -> None:
        """Cut a sentence that reached the limit without an end (see ``_forced_cut``)."""
        cut = _forced_cut(self._buf, self._start, self._max)
        self.examined += self._max
        piece = self._buf[self._start : cut].strip()
        if piece:
            out.append(piece)
            self._pieces += 1
        self._start = cut
        self._settle()

    def _trim(self) -> None:
        """Drop the text already handed out, keeping the look-back window."""
        drop = min(self._start, self._pos)
        if drop < _LOOKBACK * 4:
            return
        self._prev = (self._prev + self._buf[drop - _LOOKBACK : drop])[-_LOOKBACK:]
        self._buf = self._buf[drop:]
        self._start -= drop
        self._seen = max(0, self._seen - drop)
        self._pos -= drop


def split_sentences(text: str, first_clause_words: int = 0) -> list[str]:
    """All sentences of a finished text (the first maybe a clause: ``SentenceSplitter``)."""
    s = SentenceSplitter(first_clause_words=first_clause_words)
    out = s.feed(text)
    tail = s.flush()
    return out + ([tail] if tail else [])
