"""Recover tool calls that a small model wrote as text instead of structured ``tool_calls``.

Ollama only parses a call that opens the reply and is wrapped the way the model's
template says; small models also write calls in ``<tool_call>`` tags mid-reply, in
fenced JSON, or as a bare JSON object. One left-to-right scanner (``callscan``) finds
them all, both for a whole reply (``extract_calls``) and for a stream
(``SpeakableFilter``), so the two agree on what is a call and what may be spoken.
"""

from __future__ import annotations

from collections.abc import Collection

from iris_voice.llm.callscan import HOLD_LIMIT, LANG, MARKUP, Event, ScanState, TextCall, scan

__all__ = ["HOLD_LIMIT", "SpeakableFilter", "TextCall", "extract_calls", "strip_markup"]


class _Joiner:
    """Glues kept text around removed spans; feeding it in pieces gives the same result.

    Whitespace next to a removed span shrinks to one space, newline or blank line, and
    trailing whitespace waits until more text proves it is not before a removed call.
    """

    def __init__(self) -> None:
        self.pending: list[str] = []  # whitespace waiting for what follows it
        self.cut_pending, self.started = False, False

    def text(self, s: str) -> str:
        body = s.strip()
        if not body:
            self.pending.append(s)
            return ""
        lead = s[: len(s) - len(s.lstrip())]
        ws = "".join(self.pending) + lead
        if self.cut_pending:
            lines = ws.count("\n")
            ws = "" if not self.started else "\n\n" if lines > 1 else "\n" if lines else " "
        self.pending, self.cut_pending, self.started = [s[len(s.rstrip()) :]], False, True
        return ws + body

    def finish(self) -> str:
        out = "" if self.cut_pending else "".join(self.pending)
        self.pending = []
        return out

    def apply(self, events: list[Event], strip: bool) -> str:
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


def _markup_events(text: str) -> list[Event]:
    """Text and cuts for every tag and fence marker (an opening fence takes its language)."""
    events: list[Event] = []
    keep, in_fence = 0, False
    while (m := MARKUP.search(text, keep)) is not None:
        end = m.end()
        if m.group() == "```":
            if not in_fence and (lang := LANG.match(text, end)):
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
    events, calls, _ = scan(text, known_names, True)
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
    ``extract_calls`` gives for the whole reply, except past the hold limit: what
    ``hold_limit`` characters do not decide is not a call (see ``callscan``). Each chunk
    costs about its own length: the held text is not scanned again. One filter per reply.
    """

    def __init__(self, known_names: Collection[str], hold_limit: int = HOLD_LIMIT) -> None:
        self._known = frozenset(known_names)
        self._buf = ""  # decided text not yet dropped, then the held text
        self._stop = 0  # where the held text starts in _buf
        self._offset = 0  # where _buf starts in the whole reply
        self._state = ScanState(limit=hold_limit)
        self._joiner = _Joiner()
        self.calls: list[TextCall] = []
        """Calls swallowed so far, with spans into the whole reply."""

    def _run(self, final: bool) -> str:
        events, calls, self._stop = scan(self._buf, self._known, final, self._state, self._stop)
        off = self._offset
        self.calls += [TextCall(c.name, c.arguments, (c.span[0] + off, c.span[1] + off)) for c in calls]
        # Drop the decided head once it is at least half the buffer: what the scan learnt
        # about the held rest is then learnt again, at most once per halving.
        stop = self._stop
        if stop == len(self._buf) or (stop >= 256 and 2 * stop >= len(self._buf)):
            self._buf, self._stop, self._offset = self._buf[stop:], 0, off + stop
            self._state.rebase(stop)
        return self._joiner.apply(events, True)

    def feed(self, delta: str) -> str:
        """Add a chunk of the reply; return the text that is now safe to speak."""
        self._buf += delta
        return self._run(False)

    def flush(self) -> str:
        """The reply has ended: decide everything held back and return the rest."""
        return self._run(True) + self._joiner.finish()
