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
