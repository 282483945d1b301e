"""``iris serve``'s ``handle`` with the real model behind the Ollama-protocol test server, spoken
to by the ``wyoming`` package's client: a question only the model (with its calculator)
answers, and the same answer streamed sentence by sentence."""

from __future__ import annotations

import asyncio

import pytest
from wyoming.asr import Transcript
from wyoming.client import AsyncTcpClient
from wyoming.event import Event

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, IntentsConfig, LlmConfig, ServeConfig, ToolsConfig
from iris_voice.events import TurnFinished
from iris_voice.wyoming.parts import service_parts
from iris_voice.wyoming.server import WyomingService
from tools.testbed.servers import free_port

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]


async def _ask(port: int, transcript: Transcript) -> list[Event]:
    streaming = (transcript.context or {}).get("handled_streaming")
    last = {"not-handled", "error", "handled-stop" if streaming else "handled"}
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(transcript.event())
        seen = []
        async with asyncio.timeout(240):
            while True:
                event = await client.read_event()
                assert event is not None, [e.type for e in seen]
                seen.append(event)
                if event.type in last:
                    return seen


async def test_handle_asks_the_model_and_its_calculator(ollama_server, tmp_path):
    port = free_port()
    cfg = Config(
        llm=LlmConfig(host=ollama_server.url, model="qwen2.5-coder:1.5b", temperature=0.0),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        intents=IntentsConfig(enabled=False),  # no fast path: this one is the model's
        serve=ServeConfig(uri=f"tcp://127.0.0.1:{port}"),
    )
    app = build_app(cfg)
    turns: list[TurnFinished] = []
    app.bus.subscribe(lambda e: turns.append(e) if isinstance(e, TurnFinished) else None)
    svc = WyomingService(cfg.serve, service_parts(app))
    await svc.start()
    try:
        plain = await _ask(port, Transcript(text="What is 23 times 47?"))
        streamed = await _ask(
            port, Transcript(text="And what is 12 times 12?", context={"handled_streaming": True})
        )
    finally:
        await svc.stop()
        await app.close()
    assert plain[-1].type == "handled", plain
    assert "1081" in plain[-1].data["text"].replace(",", "")
    calls = [c for c in turns[0].trace["tool_calls"] if c["name"] == "calculator" and c["ok"]]
    assert calls, turns[0].trace
    types = [e.type for e in streamed]
    assert types[0] == "handled-start" and types[-2:] == ["handled", "handled-stop"], types
    chunks = [e.data["text"] for e in streamed if e.type == "handled-chunk"]
    assert chunks and " ".join(chunks) == streamed[-2].data["text"]
    assert "144" in streamed[-2].data["text"]
