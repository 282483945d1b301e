"""``iris serve`` and a client that stops reading: its writes are bounded, so a stuck
client costs its own connection and nothing else (not a turn, not the other clients)."""

from __future__ import annotations

import asyncio
import json
import socket

from wyoming.client import AsyncTcpClient
from wyoming.info import Describe
from wyoming.tts import Synthesize

from iris_voice.wyoming import server as serve
from tests.unit.test_serve import read_until, serving


async def test_a_client_that_never_reads_is_dropped_after_the_write_timeout(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(serve, "WRITE_TIMEOUT_S", 0.5)
    caplog.set_level("INFO", logger="iris_voice.app")
    async with serving(tmp_path) as (svc, port, app):
        # 600 s of audio (19 MB) for one sentence: more than loopback's buffers hold
        app.engines.tts.seconds = 600.0
        stuck = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
        stuck.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(stuck, ("127.0.0.1", port))
            line = Synthesize(text="A very long sentence.").event().to_dict()
            await asyncio.get_running_loop().sock_sendall(stuck, (json.dumps(line) + "\n").encode())
            for _ in range(200):  # it asked, and now it reads nothing
                if svc.clients:
                    break
                await asyncio.sleep(0.02)
            assert svc.clients, "the client was never served"
            async with asyncio.timeout(10):
                while svc.clients:
                    await asyncio.sleep(0.05)
            # the others are still served
            async with AsyncTcpClient("127.0.0.1", port) as other:
                await other.write_event(Describe().event())
                assert (await read_until(other, "info"))[-1].type == "info"
        finally:
            stuck.close()
    assert any("read nothing for 0.5 s" in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records
    ]
