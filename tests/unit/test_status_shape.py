"""One runner, one status: the desktop daemon, ``iris serve`` and ``iris satellite`` each
start through ``app.runner`` (READY, the control socket, STOPPING, a clean stop) and answer
``status`` with the same keys (``app.status.FIELDS``)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from iris_voice.app.assembly import Engines
from iris_voice.app.control import request
from iris_voice.app.daemon import Daemon
from iris_voice.app.headless import Hub
from iris_voice.app.satellite_mode import SatelliteMode
from iris_voice.app.status import FIELDS, status
from iris_voice.config import Config, LlmConfig, SatelliteConfig, ServeConfig, ToolsConfig
from tests.support.fakes import ScriptedBackend
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
from tools.testbed.servers import free_port


def _config(tmp_path, **sections) -> Config:
    return Config(
        llm=LlmConfig(host=f"http://127.0.0.1:{free_port()}", connect_timeout_s=0.5),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        **sections,
    )


def _desktop(tmp_path):
    engines = Engines(FakeStt(), FakeTts(), FakeVad(), FakeWake())
    return Daemon(
        _config(tmp_path), engines, ScriptSource(frames(SILENCE, 1.0), tail_s=600), FakeSink(speed=50)
    )


def _serve(tmp_path):
    cfg = _config(tmp_path, serve=ServeConfig(uri=f"tcp://127.0.0.1:{free_port()}"))
    return Hub(cfg, Engines(FakeStt(), FakeTts(), FakeVad(), None), ScriptedBackend())


def _satellite(tmp_path):
    cfg = _config(tmp_path, satellite=SatelliteConfig(name="porch", hub=f"tcp://127.0.0.1:{free_port()}"))
    source, sink = ScriptSource(frames(SILENCE, 1.0), tail_s=600), FakeSink(speed=50)
    engines = Engines(None, None, FakeVad(), FakeWake())  # type: ignore[arg-type]  # listen-only
    return SatelliteMode(cfg, source=source, sink=sink, engines=engines)


@pytest.mark.parametrize("make", [_desktop, _serve, _satellite], ids=["desktop", "serve", "satellite"])
async def test_every_mode_runs_through_the_runner_and_answers_status_in_one_shape(
    tmp_path, monkeypatch, make
):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    notify.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    mode = make(tmp_path)
    task = asyncio.create_task(mode.run())
    ready = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(notify, 4096), 60)
    assert ready.startswith(b"READY=1"), ready
    sock = tmp_path / "run" / "iris" / "control.sock"
    answer = await asyncio.to_thread(request, "status", 10.0, sock)
    mode.request_stop()
    assert await asyncio.wait_for(task, 30) == 0
    assert b"STOPPING=1" in notify.recv(4096)
    assert not sock.exists()
    answer.pop("ok")
    assert list(answer) == list(FIELDS), set(answer) ^ set(FIELDS)
    assert answer["mode"] == make.__name__.strip("_")
    assert answer["loop_lag_ms"] is not None  # the runner's monitor, in every mode


def test_a_status_key_that_is_not_documented_is_refused():
    with pytest.raises(ValueError, match="not in FIELDS"):
        status("desktop", 0.0, colour="blue")
