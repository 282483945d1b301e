"""``OllamaBackend`` against a raw local HTTP server: a kept-alive connection the server
closes as a request goes out is sent again; a server that never answers is an error."""

from __future__ import annotations

import asyncio
import json

import pytest

from iris_voice.config import LlmConfig
from iris_voice.errors import Code, LlmError
from iris_voice.llm.client import OllamaBackend

DONE = {
    "model": "m",
    "created_at": "2026-01-01T00:00:00Z",
    "message": {"role": "assistant", "content": ""},
    "done": True,
    "done_reason": "stop",
    "prompt_eval_count": 7,
    "eval_count": 2,
}


def part(content: str) -> dict:
    return {
        "model": "m",
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": content},
        "done": False,
    }


class FlakyServer:
    """Answers ``/api/chat`` with a two-part stream, after closing the first ``drop``
    connections as soon as their request arrived (no status line, no body)."""

    def __init__(self, drop: int) -> None:
        self.drop = drop
        self.requests = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length"))
        await reader.readexactly(length)
        self.requests += 1
        if self.requests <= self.drop:
            writer.close()  # the idle-timeout race: the request went out, the server hung up
            return
        body = b"".join(json.dumps(p).encode() + b"\n" for p in (part("Hello,"), part(" Sam!"), DONE))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()


async def reply(url: str) -> tuple[str, int]:
    backend = OllamaBackend(LlmConfig(host=url, model="m", request_timeout_s=10, connect_timeout_s=2))
    text, prompt = "", 0
    async for chunk in backend.stream([{"role": "user", "content": "say hello"}], None):
        text += chunk.content
        prompt = chunk.prompt_tokens or prompt
    return text, prompt


async def test_a_connection_closed_before_any_answer_is_tried_once_more():
    async with FlakyServer(drop=1) as url:
        assert await reply(url) == ("Hello, Sam!", 7)


async def test_a_server_that_keeps_closing_is_unreachable_after_the_second_try():
    server = FlakyServer(drop=10)
    async with server as url:
        with pytest.raises(LlmError) as info:
            await reply(url)
    assert info.value.code == Code.LLM_UNREACHABLE
    assert server.requests == 2


class VersionServer:
    """Answers ``GET /api/version`` on kept-alive connections and counts the connections."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests = 0
        self.writers: list[asyncio.StreamWriter] = []

    def hang_up(self) -> None:
        """Close every open connection (the server process died)."""
        for writer in self.writers:
            writer.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        body = json.dumps({"version": "0.9.1"}).encode()
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                self.requests += 1
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                writer.write(head.encode() + b"\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


async def test_the_version_probe_keeps_one_connection_across_calls():
    # ``iris status`` probes the server each time it is asked: a new HTTP client per probe
    # would load the TLS certificates on the event loop every time (~60 ms of CPU).
    counter = VersionServer()
    server = await asyncio.start_server(counter.serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    backend = OllamaBackend(LlmConfig(host=url, model="m", connect_timeout_s=2))
    try:
        versions = [await backend.version() for _ in range(5)]
    finally:
        server.close()
        counter.hang_up()
        await server.wait_closed()
    assert versions == ["0.9.1"] * 5
    assert (counter.requests, counter.connections) == (5, 1)


async def test_the_version_probe_reaches_a_server_restarted_on_the_same_port():
    counter = VersionServer()
    server = await asyncio.start_server(counter.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    backend = OllamaBackend(LlmConfig(host=f"http://127.0.0.1:{port}", model="m", connect_timeout_s=2))
    assert await backend.version() == "0.9.1"
    server.close()
    counter.hang_up()
    await server.wait_closed()
    with pytest.raises(LlmError) as info:
        await backend.version()
    assert info.value.code == Code.LLM_UNREACHABLE
    server = await asyncio.start_server(counter.serve, "127.0.0.1", port)
    try:
        assert await backend.version() == "0.9.1"
    finally:
        server.close()
        counter.hang_up()
        await server.wait_closed()
