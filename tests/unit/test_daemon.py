"""The daemon's lifecycle with fake engines and audio: READY, the control socket, a dead
model server at start, MCP servers owned by the daemon, and a clean stop."""

from __future__ import annotations

import asyncio
import socket

from iris_voice.app.assembly import Engines
from iris_voice.app.control import request
from iris_voice.app.daemon import NOT_REACHABLE_AT_START, Daemon
from iris_voice.config import Config, LlmConfig, McpConfig, ToolsConfig
from tests.support.fakes_audio import (
    SILENCE,
    FakeSink,
    FakeStt,
    FakeTts,
    FakeVad,
    FakeWake,
    ScriptSource,
    frames,
)
from tests.support.mcp_servers import time_server
from tools.testbed.servers import free_port


async def _started(daemon: Daemon, notify: socket.socket, timeout: float = 60) -> asyncio.Task:
    task = asyncio.create_task(daemon.run())
    loop = asyncio.get_running_loop()
    message = await asyncio.wait_for(loop.sock_recv(notify, 4096), timeout)
    assert message.startswith(b"READY=1"), message
    return task


def _daemon(tmp_path, monkeypatch, **cfg) -> tuple[Daemon, socket.socket, FakeTts]:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    notify.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: the model server is down
    config = Config(
        llm=LlmConfig(host=dead, connect_timeout_s=0.5),
        tools=ToolsConfig(timers_db=str(tmp_path / "timers.db")),
        **cfg,
    )
    tts = FakeTts()
    engines = Engines(FakeStt(), tts, FakeVad(), FakeWake())
    source = ScriptSource(frames(SILENCE, 1.0), tail_s=600)
    return Daemon(config, engines, source, FakeSink(speed=50)), notify, tts


async def test_model_server_down_at_start_is_said_once_and_ready_comes_anyway(tmp_path, monkeypatch):
    daemon, notify, tts = _daemon(tmp_path, monkeypatch)
    task = await _started(daemon, notify)
    sock = tmp_path / "run" / "iris" / "control.sock"
    status = await asyncio.to_thread(request, "status", 10.0, sock)
    assert status["llm"]["reachable"] is False and "cannot reach" in status["llm"]["error"]
    for _ in range(100):
        if NOT_REACHABLE_AT_START in tts.spoken:
            break
        await asyncio.sleep(0.05)
    # the late cue is synthesized once at start-up (not played), then the one sentence said
    assert tts.spoken == [Config().tts.late_cue, NOT_REACHABLE_AT_START]
    assert daemon.speaker.cue is not None and daemon.speaker.cue.ready
    daemon.request_stop()
    assert await asyncio.wait_for(task, 5) == 0
    assert not sock.exists()
    assert b"STOPPING=1" in notify.recv(4096)


async def test_status_reports_how_late_the_event_loop_runs(tmp_path, monkeypatch):
    daemon, notify, _ = _daemon(tmp_path, monkeypatch)
    task = await _started(daemon, notify)
    await asyncio.sleep(0.3)  # a few of the monitor's 50 ms wake-ups
    sock = tmp_path / "run" / "iris" / "control.sock"
    lag = (await asyncio.to_thread(request, "status", 10.0, sock))["loop_lag_ms"]
    daemon.request_stop()
    assert await asyncio.wait_for(task, 5) == 0
    assert lag["interval_ms"] == 50 and lag["samples"] >= 3
    assert lag["last_minute"]["samples"] == lag["samples"]
    assert 0 <= lag["p99"] <= lag["max"]


async def test_the_daemon_owns_its_mcp_servers(tmp_path, monkeypatch):
    daemon, notify, _ = _daemon(tmp_path, monkeypatch, mcp=McpConfig(servers=[time_server()]))
    task = await _started(daemon, notify)
    assert await daemon.app.mcp.wait_ready(30)
    # lazy with retrieval on (the default): hidden, callable by name, not listed every turn
    assert "time/get_current_time" not in daemon.app.registry.names()
    result = await daemon.app.registry.call("time/get_current_time", {"timezone": "Europe/Paris"})
    assert result.ok and "Europe/Paris" in result.result
    daemon.request_stop()
    assert await asyncio.wait_for(task, 10) == 0
    assert all(c.state == "stopped" for c in daemon.app.mcp.connections.values())
