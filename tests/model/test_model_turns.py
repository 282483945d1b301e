"""Whole turns with the real model (Qwen2.5-Coder-1.5B) behind the Ollama-protocol test server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytz

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, IntentsConfig, LlmConfig, ToolsConfig
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.timers.store import TimerStore

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]

MODEL = "qwen2.5-coder:1.5b"


def make_loop(server, tmp_path: Path, model: str = MODEL, **llm) -> tuple[Assistant, Path]:
    """The model alone (no fast path): these questions are for it."""
    db = tmp_path / "timers.db"
    llm_cfg = LlmConfig(host=server.url, model=model, temperature=0.0, **llm)
    tools = ToolsConfig(timezone="UTC", timers_db=str(db))
    cfg = Config(llm=llm_cfg, tools=tools, intents=IntentsConfig(enabled=False))
    return build_app(cfg).responder, db


def hours_spoken(reply: str) -> set[int]:
    """Hours mentioned as "3:05", "15:05", "3 PM" or "3 o'clock"."""
    found = {int(h) for h in re.findall(r"\b(\d{1,2}):\d{2}", reply)}
    found |= {int(h) for h in re.findall(r"\b(\d{1,2})\s*(?:[ap]\.?m\.?|o'clock)", reply, re.I)}
    return found


async def test_time_in_tokyo(ollama_server, tmp_path):
    loop, _ = make_loop(ollama_server, tmp_path)
    trace = await ask(loop, "What time is it in Tokyo?")
    calls = [c for c in trace.tool_calls if c["name"] == "get_current_time" and c["ok"]]
    assert calls, trace.to_dict()
    assert "Asia/Tokyo" in calls[0]["result"]
    tokyo = pytz.timezone("Asia/Tokyo")
    now = datetime.now(UTC)
    expected = set()
    for delta in (-2, 0, 2):  # the hour may turn over during the turn
        h = (now + timedelta(minutes=delta)).astimezone(tokyo).hour
        expected |= {h, h % 12 or 12}
    assert hours_spoken(trace.reply) & expected, trace.reply


async def test_calculator(ollama_server, tmp_path):
    loop, _ = make_loop(ollama_server, tmp_path)
    trace = await ask(loop, "What is 23 times 47?")
    assert any(c["name"] == "calculator" and c["ok"] for c in trace.tool_calls), trace.to_dict()
    assert "1081" in trace.reply.replace(",", "")
    assert trace.execution_path == "native" and trace.rounds >= 2
    assert trace.prompt_tokens > 0 and trace.completion_tokens > 0 and trace.first_token_ms


async def test_pasta_timer_is_stored(ollama_server, tmp_path):
    loop, db = make_loop(ollama_server, tmp_path)
    trace = await ask(loop, "Set a pasta timer for five minutes.")
    assert any(c["name"] == "set_timer" and c["ok"] for c in trace.tool_calls), trace.to_dict()
    pending = TimerStore(db).pending()
    assert len(pending) == 1
    timer = pending[0]
    assert "pasta" in timer.label.lower()
    assert timer.duration == pytest.approx(300)


async def test_one_change_asked_ends_the_real_models_reply_at_its_call(ollama_server, tmp_path):
    # The real model through the test server, which sends each call as soon as it is
    # complete (as Ollama does): IRIS closes the reply there, whatever the model would add.
    loop, db = make_loop(ollama_server, tmp_path)
    trace = await ask(loop, "Set a tea timer for three minutes.")
    assert [c["name"] for c in trace.tool_calls] == ["set_timer"], trace.to_dict()
    assert trace.extra.get("cut") is True and trace.rounds == 1, trace.to_dict()
    assert [t.label for t in TimerStore(db).pending()] == ["tea"]


async def test_plain_chat_calls_no_tool(ollama_server, tmp_path):
    loop, _ = make_loop(ollama_server, tmp_path)
    trace = await ask(loop, "Tell me a short fun fact about octopuses.")
    assert trace.tool_calls == [], trace.to_dict()
    assert len(trace.reply) > 10 and "<tool_call>" not in trace.reply


async def test_model_without_tool_support_uses_text_mode(ollama_server, tmp_path):
    loop, _ = make_loop(ollama_server, tmp_path, model="qwen-notools")
    trace = await ask(loop, "What is 23 times 47?")
    assert trace.execution_path == "text"
    assert any(c["name"] == "calculator" and c["ok"] for c in trace.tool_calls), trace.to_dict()
    assert "1081" in trace.reply.replace(",", "")
    assert "<tool_call>" not in trace.reply and "{" not in trace.reply


def run_cli(server, tmp_path, *args, host=None):
    env = {**os.environ, "OLLAMA_HOST": host or server.url, "XDG_STATE_HOME": str(tmp_path)}
    env.pop("IRIS_CONFIG", None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "cfg")
    return subprocess.run(
        [sys.executable, "-m", "iris_voice.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_cli_ask_json(ollama_server, tmp_path):
    proc = run_cli(ollama_server, tmp_path, "ask", "--json", "What is 12 plus 30?")
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(proc.stdout)
    for key in ("text", "reply", "tool_calls", "execution_path", "rounds", "tokens", "timings_ms"):
        assert key in trace
    assert set(trace["tokens"]) >= {"prompt", "completion"}
    assert set(trace["timings_ms"]) >= {"first_token", "total"}
    for call in trace["tool_calls"]:
        assert set(call) >= {"name", "arguments", "ok", "result", "duration_ms"}
    assert "42" in trace["reply"]


def test_cli_doctor(ollama_server, tmp_path):
    ok = run_cli(ollama_server, tmp_path, "doctor")
    assert ok.returncode == 0, ok.stdout
    assert "tool calling: native" in ok.stdout
    dead = run_cli(ollama_server, tmp_path, "doctor", host="http://127.0.0.1:9")
    assert dead.returncode != 0
    assert "cannot reach the Ollama server at http://127.0.0.1:9" in dead.stdout


def test_cli_ask_with_dead_server_says_what_to_do(ollama_server, tmp_path):
    proc = run_cli(ollama_server, tmp_path, "ask", "hello", host="http://127.0.0.1:9")
    assert proc.returncode == 69
    assert "llm-unreachable" in proc.stderr and "ollama serve" in proc.stderr


@pytest.mark.parametrize("keep_alive", ["-1", "0", "45m"])
async def test_every_documented_keep_alive_is_accepted(ollama_server, tmp_path, keep_alive):
    """``-1`` (forever) and ``0`` are numbers to Ollama; as strings it rejects "-1"."""
    loop, _ = make_loop(ollama_server, tmp_path, keep_alive=keep_alive)
    await loop.warmup()
