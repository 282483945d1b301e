"""Log lines that say what happened, whatever a client sent: control characters escaped.

IRIS logs words it did not write — a transcript, a Wyoming client's conversation id, an
event type, a satellite's name. Written raw, a newline in one of them starts a line of its
own ("CRITICAL iris_voice.app.serve: FORGED…" in the journal), and terminal escape codes
recolour or erase what an administrator reads. ``SafeFormatter`` escapes them in every
log record's message, in one place, whoever logged it; tracebacks (IRIS's own) keep their
lines. ``shown`` does the same for a string that is shown elsewhere (``iris status``).
"""

from __future__ import annotations

import logging
import re
from typing import TextIO

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls (newline, carriage return, escape), DEL, and the Unicode line
separators and direction marks that reorder what a terminal shows."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str) -> str:
    """``text`` with every control character written as an escape (``\\n`` → ``\\x0a``)."""
    return _UNSAFE.sub(_escape, text)


class SafeFormatter(logging.Formatter):
    """A ``logging.Formatter`` whose records' messages are one line each (``shown``)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        """The record's line, its message made safe first (the traceback is added after)."""
        record.message = shown(record.message)
        return super().formatMessage(record)


def configure(level: int, stream: TextIO | None = None) -> logging.Handler:
    """Log to ``stream`` (stderr) at ``level``, a line per record: the ``iris`` command's
    logging, for journald and a terminal alike. Replaces the root logger's handlers."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(SafeFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    return handler
