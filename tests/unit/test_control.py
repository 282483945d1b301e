"""The control socket, the single-instance lock and sd_notify."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import stat
import subprocess
import sys

import pytest

from iris_voice.app.commands import percentile
from iris_voice.app.control import ControlServer, daemon_running, request
from iris_voice.app.runtime import InstanceLock, runtime_dir, sd_notify
from iris_voice.errors import IrisError


@pytest.fixture
def runtime(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return tmp_path / "iris"


async def test_commands_round_trip_and_errors_are_answers(runtime):
    async def status(req):
        return {"state": "idle", "echo": req.get("x")}

    async def broken(req):
        raise RuntimeError("boom")

    server = ControlServer({"status": status, "broken": broken, "ping": status})
    await server.start()
    try:
        assert stat.S_IMODE(os.stat(runtime / "control.sock").st_mode) == 0o600
        ask = lambda cmd, **kw: asyncio.to_thread(request, cmd, 5.0, None, **kw)  # noqa: E731
        assert await ask("status", x=3) == {"ok": True, "state": "idle", "echo": 3}
        assert await ask("broken") == {"ok": False, "error": "RuntimeError: boom"}
        unknown = await ask("dance")
        assert not unknown["ok"] and "unknown command 'dance'" in unknown["error"]
        assert await asyncio.to_thread(daemon_running)
    finally:
        await server.close()
    assert not (runtime / "control.sock").exists()
    with pytest.raises(IrisError) as err:
        request("status")
    assert err.value.code == "daemon-not-running"


async def test_garbage_lines_get_an_error_not_a_crash(runtime):
    async def ping(req):
        return {}

    server = ControlServer({"ping": ping})
    await server.start()
    try:
        reader, writer = await asyncio.open_unix_connection(str(runtime / "control.sock"))
        writer.write(b'not json\n[1, 2]\n{"cmd": "ping"}\n')
        await writer.drain()
        lines = [await reader.readline() for _ in range(3)]
        writer.close()
        assert b"bad request" in lines[0] and b"bad request" in lines[1]
        assert lines[2].strip() == b'{"ok": true}'
    finally:
        await server.close()


@pytest.mark.parametrize(
    "result",
    [{"x": float("nan")}, {"x": float("inf")}, {"x": b"raw"}, {"x": {1, 2}}, {"x": object()}, [1, 2]],
    ids=["nan", "inf", "bytes", "set", "object", "not-a-dict"],
)
async def test_an_answer_json_cannot_hold_is_an_error_reply_and_one_log_line(runtime, caplog, result):
    """A handler result JSON cannot encode (strictly: NaN and infinity are not JSON) gets the
    client an error with a code, not a closed connection; the connection keeps working."""

    async def broken(req):
        return result

    async def ping(req):
        return {}

    caplog.set_level(logging.DEBUG, "iris_voice")
    server = ControlServer({"broken": broken, "ping": ping})
    await server.start()
    try:
        reader, writer = await asyncio.open_unix_connection(str(runtime / "control.sock"))
        writer.write(b'{"cmd": "broken"}\n{"cmd": "ping"}\n')
        await writer.drain()
        answer = json.loads(await asyncio.wait_for(reader.readline(), 30))
        assert await asyncio.wait_for(reader.readline(), 30) == b'{"ok": true}\n'
        writer.close()
    finally:
        await server.close()
    assert answer["ok"] is False and answer["code"] == "daemon-error", answer
    assert answer["error"].startswith("IRIS could not encode its answer to 'broken' as JSON ("), answer
    records = [
        r for r in caplog.records if r.name == "iris_voice.app.control" and r.levelno >= logging.WARNING
    ]
    assert len(records) == 1 and records[0].exc_info is None, [r.getMessage() for r in records]
    assert "control command broken answered with what is not JSON" in records[0].getMessage()


def test_a_second_instance_is_refused_and_a_dead_one_leaves_no_lock(runtime):
    lock = InstanceLock()
    lock.acquire()
    code = "from iris_voice.app.runtime import InstanceLock\nInstanceLock().acquire()"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert other.returncode != 0 and f"already running for this user (pid {os.getpid()}" in other.stderr
    lock.release()
    # a holder killed with SIGKILL: the kernel drops the flock, the next daemon starts
    holder = subprocess.Popen([sys.executable, "-c", code + "\nimport time; time.sleep(60)"], env=os.environ)
    try:
        for _ in range(100):
            if (runtime / "lock").exists() and (runtime / "lock").read_text().strip() == str(holder.pid):
                break
            subprocess.run(["sleep", "0.05"])
        holder.kill()
        holder.wait()
        InstanceLock().acquire()
    finally:
        holder.kill()


def test_sd_notify_sends_one_datagram(monkeypatch, tmp_path):
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(str(path))
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        assert sd_notify("READY=1")
        assert s.recv(100) == b"READY=1"
    monkeypatch.delenv("NOTIFY_SOCKET")
    assert not sd_notify("READY=1")


def test_runtime_dir_is_private(runtime):
    assert stat.S_IMODE(os.stat(runtime_dir()).st_mode) == 0o700


def test_percentiles():
    assert percentile([], 50) is None
    assert percentile([100.0], 95) == 100.0
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5, abs=0.6)
    assert percentile(values, 95) == pytest.approx(95, abs=1.1)


def test_status_text_prints_stage_milliseconds_and_the_partial_count_apart(monkeypatch, capsys):
    """``iris status`` lists each turn's stages in ms; the count of partial decodes is no ms."""
    import argparse

    from iris_voice.cli import voice as cli_voice
    from iris_voice.config import Config

    answer = {
        "ok": True,
        "state": "idle",
        "muted": False,
        "activation": "wake_word",
        "uptime_s": 12.0,
        "pid": 42,
        "version": "0.0",
        "models": {"stt": "tiny.en", "tts": "amy", "wake": "hey_jarvis", "llm": "qwen"},
        "llm": {"host": "http://127.0.0.1:11434", "reachable": True, "error": None},
        "first_audio_ms": {"p50": 800, "p95": 1200, "n": 1},
        "loop_lag_ms": {
            "interval_ms": 50,
            "samples": 240,
            "p99": 1.2,
            "max": 310.5,
            "last_minute": {"p99": 0.9, "max": 4.0, "samples": 240},
        },
        "turns": [
            {
                "text": "what time is it",
                "transcript": "What time is it?",
                "reply": "It is 3:05 PM.",
                "timings_ms": {"vad_hangover": 400.2, "stt": 120.0, "stt_partials": 3, "stt_tail": 95.4},
            }
        ],
    }
    monkeypatch.setattr(cli_voice, "request", lambda cmd, timeout, **f: answer)
    assert cli_voice.cmd_status(argparse.Namespace(json=False), Config()) == 0
    lines = capsys.readouterr().out.splitlines()
    line = lines[-1]
    assert "loop lag: p99 1.2 ms, max 310.5 ms since start; last minute p99 0.9 ms, max 4.0 ms" in lines
    assert "[vad_hangover 400, stt 120, stt_tail 95 ms, 3 partial decodes]" in line, line
