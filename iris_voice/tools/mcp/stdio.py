"""The stdio transport for MCP servers, reading at most ``MAX_MESSAGE_BYTES`` of any one message.

The SDK's ``stdio_client`` (mcp 1.30) keeps a server's line in one growing string
(``buffer + chunk`` for every 64 KB read, so quadratic copying) and parses it whole,
however long: one 20 MB tool answer cost IRIS 267 MB of peak RSS before the answer was
cut to 4,000 characters. This transport is the same protocol (newline-delimited JSON-RPC
on the process's stdin/stdout, its stderr to ``errlog``, the process in its own group,
the same shutdown) with one difference: a message longer than ``MAX_MESSAGE_BYTES`` is
never assembled. IRIS keeps its first and last bytes only, and when they show it is the
answer to a request, answers that request with a JSON-RPC error saying the answer was
too large, so the call fails at once instead of sitting out its timeout.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters, types
from mcp.client.stdio import PROCESS_TERMINATION_TIMEOUT, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from iris_voice.tools.mcp.results import clip

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 4 << 20
"""Longest message read from a server (4 MiB). A tool answer reaches the model as at most
4,000 characters, but an image (named, not shown) or a long tool list may be big. Reading
a 4 MB message whole costs ~27 MB of peak RSS (measured: the parsing makes copies)."""
_EDGE = 512  # bytes kept from each end of an oversized message: enough to find its id
_ID = r'(-?\d{1,18}|"[^"\\]{0,64}")'
_HEAD = re.compile(
    rb'\A\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*' + _ID.encode() + rb'\s*,\s*"(?:result|error)"'
)
_HEAD_FIRST = re.compile(rb'\A\s*\{\s*"(?:result|error)"\s*:')  # the TypeScript SDK's order: id at the end
_TAIL = re.compile(rb'"id"\s*:\s*' + _ID.encode() + rb"\s*\}\s*\Z")


def _response_id(head: bytes, tail: bytes) -> int | str | None:
    """The id of an oversized JSON-RPC response from its first and last bytes, or None."""
    found = _HEAD.match(head) or (_TAIL.search(tail) if _HEAD_FIRST.match(head) else None)
    if found is None:
        return None
    raw = found.group(1).decode("utf-8", "replace")
    return raw[1:-1] if raw.startswith('"') else int(raw)


class LineReader:
    """Split a byte stream into JSON-RPC messages, holding at most ``limit`` bytes of one line."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit
        """Longest line assembled and parsed."""
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""  # set once the line is over the limit: its first bytes...
        self._tail = b""  # ...and its last ones; the middle is dropped as it arrives

    def feed(self, chunk: bytes) -> list[SessionMessage | Exception]:
        """The messages completed by ``chunk``, each parsed (or the error why not)."""
        out: list[SessionMessage | Exception] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._add(chunk[start:end])
            out += self._finish()
            start = end + 1
        if start < len(chunk):
            self._add(chunk[start:])
        return out

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._head:
            self._tail = (self._tail + piece)[-_EDGE:]
            return
        self._parts.append(piece)
        if self._size > self.limit:
            whole = b"".join(self._parts)
            self._head, self._tail, self._parts = whole[:_EDGE], whole[-_EDGE:], []

    def _finish(self) -> list[SessionMessage | Exception]:
        size, head, tail = self._size, self._head, self._tail
        line = b"".join(self._parts)
        self._parts, self._size, self._head, self._tail = [], 0, b"", b""
        if head:
            return [self._too_large(size, head, tail)]
        if not line.strip():
            return []
        try:
            return [SessionMessage(types.JSONRPCMessage.model_validate_json(line))]
        except Exception as exc:  # not JSON-RPC: the session hands it to IRIS's message hook
            return [
                ValueError(
                    f"unreadable message ({clip(str(exc), 200)}): {clip(line.decode('utf-8', 'replace'))}"
                )
            ]

    def _too_large(self, size: int, head: bytes, tail: bytes) -> SessionMessage | Exception:
        why = f"the server's answer is too large ({size:,} bytes; IRIS reads at most {self.limit:,})"
        request = _response_id(head, tail)
        log.warning(
            "MCP: dropped a %d-byte message (over %d): %s",
            size,
            self.limit,
            clip(head.decode("utf-8", "replace")),
        )
        if request is None:
            return ValueError(why)
        error = types.JSONRPCError(
            jsonrpc="2.0", id=request, error=types.ErrorData(code=types.INTERNAL_ERROR, message=why)
        )
        return SessionMessage(types.JSONRPCMessage(error))


@asynccontextmanager
async def stdio_client(
    server: StdioServerParameters, errlog: TextIO, limit: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Start ``server`` and yield (read stream, write stream), as the SDK's ``stdio_client`` does."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    env = get_default_environment() | (server.env or {})
    try:
        process = await anyio.open_process(
            [server.command, *server.args], env=env, stderr=errlog, cwd=server.cwd, start_new_session=True
        )
    except OSError:
        for stream in (read_stream, read_writer, write_stream, write_reader):
            await stream.aclose()
        raise

    async def read() -> None:
        assert process.stdout is not None  # opened with a pipe
        lines = LineReader(limit)
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    for message in lines.feed(chunk):
                        await read_writer.send(message)
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_none=True)
                    await process.stdin.send((text + "\n").encode())
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group, process:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            # The MCP stdio shutdown: close the server's stdin, wait, then SIGTERM/SIGKILL its group.
            if process.stdin:
                try:
                    await process.stdin.aclose()
                except Exception:
                    pass  # already closed
            try:
                with anyio.fail_after(PROCESS_TERMINATION_TIMEOUT):
                    await process.wait()
            except TimeoutError:
                await terminate_posix_process_tree(process)
            except ProcessLookupError:
                pass
            for stream in (read_stream, write_stream, read_writer, write_reader):
                await stream.aclose()
