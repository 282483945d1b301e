"""The HTTP client for streamable-HTTP MCP servers, reading at most ``MAX_MESSAGE_BYTES`` of a message.

The SDK reads a JSON answer whole (``response.aread()``) and an SSE event whole, however
long. This client wraps httpx's transport so that no more than the limit of one message
is ever read: a JSON answer announced as longer, or an SSE event that grows past it, is
replaced by a JSON-RPC error for the request it answers (the request's id is in the
POST body), so the call fails at once saying the answer was too large. A JSON answer
without a length that grows too long ends in a read error instead, and its call in
its timeout. Timeouts are the SDK's own defaults (30 s, 300 s to read a stream).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
from mcp import types

from iris_voice.tools.mcp.stdio import MAX_MESSAGE_BYTES

log = logging.getLogger(__name__)

_TIMEOUT = httpx.Timeout(30.0, read=300.0)  # the SDK's create_mcp_http_client defaults (mcp 1.30)


def _request_id(request: httpx.Request) -> Any:
    """The JSON-RPC id of the request being POSTed, or None (a notification, a GET)."""
    try:
        body = json.loads(request.content)
    except Exception:  # not JSON, or a streamed body
        return None
    return body.get("id") if isinstance(body, dict) and "method" in body else None


def _error(request_id: Any, why: str) -> bytes:
    """A JSON-RPC error answering ``request_id``."""
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": types.INTERNAL_ERROR, "message": why}}
    return json.dumps(error).encode()


class _CappedStream(httpx.AsyncByteStream):
    """A response body that stops at ``limit`` bytes of one message (an SSE event, or the body)."""

    def __init__(self, inner: httpx.AsyncByteStream, limit: int, request_id: Any, sse: bool) -> None:
        self._inner, self._limit, self._request_id, self._sse = inner, limit, request_id, sse

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            end = max(chunk.rfind(b"\n\n"), chunk.rfind(b"\r\n\r\n")) if self._sse else -1
            size = len(chunk) - end if end >= 0 else size + len(chunk)  # an SSE event ended: count anew
            if size > self._limit:
                why = (
                    f"the server's answer is too large (over {self._limit:,} bytes; IRIS reads at most that)"
                )
                log.warning("MCP over HTTP: %s", why)
                if not self._sse or self._request_id is None:
                    raise httpx.ReadError(why)
                # End the event being read (the SDK drops it as unreadable), then answer the request.
                yield b"\n\nevent: message\ndata: " + _error(self._request_id, why) + b"\n\n"
                return
            yield chunk

    async def aclose(self) -> None:
        """Close the underlying stream."""
        await self._inner.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx's transport, with every response body read through ``_CappedStream``."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.limit = limit
        """Longest message read."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; answer for the server when its JSON answer is announced too long."""
        response = await self._inner.handle_async_request(request)
        request_id = _request_id(request)
        kind = response.headers.get("content-type", "")
        length = response.headers.get("content-length", "")
        if "json" in kind and length.isdigit() and int(length) > self.limit and request_id is not None:
            await response.aclose()
            why = (
                f"the server's answer is too large ({int(length):,} bytes; IRIS reads at most {self.limit:,})"
            )
            log.warning("MCP over HTTP: %s", why)
            body = _error(request_id, why)
            return httpx.Response(200, headers={"content-type": "application/json"}, content=body)
        assert isinstance(response.stream, httpx.AsyncByteStream)  # always, from an async transport
        stream = _CappedStream(response.stream, self.limit, request_id, "event-stream" in kind)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._inner.aclose()


def http_client(limit: int = MAX_MESSAGE_BYTES) -> httpx.AsyncClient:
    """An httpx client as the SDK would make it (its timeouts), reading at most ``limit`` of a message."""
    # Redirects stay off, as in the SDK: its transport follows them within the origin itself.
    return httpx.AsyncClient(timeout=_TIMEOUT, transport=CappedTransport(limit), follow_redirects=False)
