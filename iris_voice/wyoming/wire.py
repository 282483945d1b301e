"""Wyoming events off the wire within IRIS's bounds, and client text made safe to log.

``read_event`` is ``wyoming.event.async_read_event`` with limits: a header line, a data
block and a payload each have a largest size, and every value a client controls is
checked for its type before it is used, so a malformed event is a ``ProtocolViolation``
(an ``error`` to the client) and never an exception the handler did not expect.
``EventLink`` is one connection both ways: bounded reads and serialized writes with a deadline
(the hub's link to a satellite it dialled, a satellite's link to the hub that adopted it).
``printable`` is what any client-chosen string (an event type, a satellite name) goes
through before it reaches the log: one line, bounded, control characters escaped.
"""

from __future__ import annotations

import asyncio
import contextlib

from wyoming.event import Event, async_write_event

from iris_voice.safejson import loads_object

MAX_LINE = 64 * 1024
"""Longest JSON header line (asyncio's stream limit, which ``wyoming`` relies on too)."""
MAX_DATA = 256 * 1024
"""Largest ``data`` block an event may carry (an ``info`` is a few kB)."""
MAX_PAYLOAD = 1024 * 1024
"""Largest payload (an audio chunk is usually 2–8 kB)."""
MAX_TYPE_CHARS = 64
"""Longest event type (Wyoming's longest is ``synthesize-start``-like, under 32)."""
LOG_CHARS = 64
"""Longest client-chosen string written to the log."""
WRITE_TIMEOUT_S = 10.0
"""How long one event may take to send: a peer that stopped reading is gone."""


class ProtocolViolation(Exception):
    """The client sent something that is not a Wyoming event within IRIS's bounds."""


def printable(text: object, limit: int = LOG_CHARS) -> str:
    """``text`` as one bounded log-safe line: control and separator characters escaped
    (a newline cannot forge a log line), cut at ``limit`` characters with the length said."""
    text = str(text)
    cut = text[:limit]
    safe = "".join(
        c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode() for c in cut
    )
    return safe if len(text) <= limit else f"{safe}…({len(text)} chars)"


def _length(header: dict[str, object], key: str) -> int:
    value = header.get(key) or 0
    # bool is an int, a float may be Infinity (OverflowError): only a plain int is a length.
    if type(value) is not int:
        raise ProtocolViolation(f"{key} must be a whole number, not {printable(value, 24)}")
    return value


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """One event, bounded; None at end of stream. Raises ``ProtocolViolation`` for an
    oversized or malformed event."""
    try:
        line = await reader.readline()
    except ValueError as exc:  # asyncio's limit: a header line longer than MAX_LINE
        raise ProtocolViolation(f"header line too long ({exc})") from None
    if not line:
        return None
    try:
        header = loads_object(line)
    except ValueError as exc:
        raise ProtocolViolation(f"not a Wyoming event: {printable(exc)}") from None
    kind, data = header.get("type"), header.get("data") or {}
    if not isinstance(kind, str) or not kind or len(kind) > MAX_TYPE_CHARS or not isinstance(data, dict):
        raise ProtocolViolation("an event needs a short string type and an object of data")
    data_length, payload_length = _length(header, "data_length"), _length(header, "payload_length")
    if not 0 <= data_length <= MAX_DATA or not 0 <= payload_length <= MAX_PAYLOAD:
        sizes = f"data {data_length} / payload {payload_length} bytes"
        raise ProtocolViolation(f"{printable(kind)}: {sizes} is over the limit")
    if data_length:
        try:
            more = loads_object(await reader.readexactly(data_length))
        except ValueError as exc:
            raise ProtocolViolation(
                f"{printable(kind)}: data is not a JSON object: {printable(exc)}"
            ) from None
        data = {**data, **more}
    payload = await reader.readexactly(payload_length) if payload_length else None
    return Event(type=kind, data=data, payload=payload)


class EventLink:
    """One Wyoming connection, with ``AsyncTcpClient``'s interface: ``read_event`` within
    the bounds above (a malformed event is a ``ConnectionError``), ``write_event``
    serialized and within ``WRITE_TIMEOUT_S``, ``disconnect``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "local"
        self.host: str | None = peer[0] if isinstance(peer, tuple) else None
        self._lock = asyncio.Lock()

    async def write_event(self, event: Event) -> None:
        """Send one event (writes from several tasks go one at a time)."""
        async with self._lock, asyncio.timeout(WRITE_TIMEOUT_S):
            await async_write_event(event, self.writer)

    async def read_event(self) -> Event | None:
        """The next event, bounded; None at the end."""
        try:
            return await read_event(self.reader)
        except ProtocolViolation as exc:
            raise ConnectionError(f"a bad event: {exc}") from None

    async def disconnect(self) -> None:
        """Close the connection."""
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()
