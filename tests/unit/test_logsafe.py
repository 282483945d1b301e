"""What a client sends cannot forge a log line: control characters in a record's message
are escaped; IRIS's own tracebacks keep their lines."""

from __future__ import annotations

import io
import logging

import pytest

from iris_voice.logsafe import configure, shown

FORGED = "01HQ\nCRITICAL iris_voice.app.serve: FORGED\x1b[2J\r\u2028\u202egnp.exe"


@pytest.fixture
def log_lines():
    """The root logger as the ``iris`` command sets it up, into a buffer; restored after."""
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    buf = io.StringIO()
    configure(logging.INFO, buf)
    yield buf
    root.handlers[:] = saved
    root.setLevel(level)


def test_a_client_string_stays_on_its_line(log_lines):
    logging.getLogger("iris_voice.wyoming.parts").info(
        "wyoming handle for %s (%s): %r", "10.0.0.5:4242", FORGED, "hi"
    )
    lines = log_lines.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        "INFO iris_voice.wyoming.parts: wyoming handle for 10.0.0.5:4242 (01HQ\\x0aCRITICAL"
    )
    assert "\x1b" not in lines[0] and "\u202e" not in lines[0] and "\\x1b[2J" in lines[0]


def test_a_traceback_keeps_its_lines(log_lines):
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        logging.getLogger("iris_voice").exception("turn failed for %s", "a\nb")
    out = log_lines.getvalue()
    first, *rest = out.splitlines()
    assert first == "ERROR iris_voice: turn failed for a\\x0ab"
    assert rest[0] == "Traceback (most recent call last):" and any("ValueError" in line for line in rest)


def test_shown_escapes_only_control_characters():
    assert shown("Grüße, 東京! 3\t4") == "Grüße, 東京! 3\\x094"
    assert shown("\x00\x7f\x9b") == "\\x00\\x7f\\x9b"
