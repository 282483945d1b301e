"""Boost mode with the real model (Qwen2.5-Coder-1.5B) as planner and executor.

The planner is the same 1.5B model as the executor (nothing stronger is available
offline): served by the Ollama-protocol test server, and by llama-cpp-python's
OpenAI-compatible server for the OpenAI backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iris_voice.app.assembly import build_app
from iris_voice.config import BoostConfig, Config, LlmConfig, ToolsConfig
from iris_voice.conversation.boost import Boost, planner_backend
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.llm.client import OllamaBackend
from iris_voice.llm.openai_client import OpenAIBackend
from tests.support.fakes import ScriptedBackend

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.timeout(900)]
PATIENT_S = 300.0
"""The model's and the planner's timeouts here (the defaults, 120 s and 30 s, are for a
desktop, not for two shared cores running several tests at once)."""

MODEL = "qwen2.5-coder:1.5b"


class Counting:
    """The real executor backend, counting the requests it is sent."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.name = backend.name
        self.calls = 0

    def stream(self, messages, tools, options=None):
        self.calls += 1
        return self.backend.stream(messages, tools, options)


def make(server, tmp_path: Path, planner=None) -> tuple[Assistant, Counting]:
    cfg = Config(
        # generous deadlines: on a busy machine the small model answers late, not never
        llm=LlmConfig(host=server.url, model=MODEL, temperature=0.0, request_timeout_s=PATIENT_S),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        boost=BoostConfig(enabled=True, temperature=0.0, timeout_s=PATIENT_S),
    )
    registry = build_app(cfg).registry
    executor = Counting(OllamaBackend(cfg.llm))
    chat = ChatLoop(executor, registry, cfg.llm)
    return Assistant(chat, boost=Boost(chat, planner or planner_backend(cfg), cfg.boost)), executor


async def test_summary_answers_without_the_executor(ollama_server, tmp_path):
    loop, executor = make(ollama_server, tmp_path)
    trace = await ask(loop, "Who wrote Romeo and Juliet?")
    boost = trace.extra["boost"]
    assert boost["final"] == "summary", trace.to_dict()
    assert [lp["type"] for lp in boost["loops"]] == ["summary"]
    assert executor.calls == 0 and trace.tool_calls == []
    assert "shakespeare" in trace.reply.lower()
    assert trace.execution_path == "boost" and trace.first_sentence_ms


async def test_guidance_gets_the_tool_called(ollama_server, tmp_path):
    loop, executor = make(ollama_server, tmp_path)
    trace = await ask(loop, "What is 23 times 47?")
    boost = trace.extra["boost"]
    assert boost["final"] == "guidance", trace.to_dict()
    assert boost["loops"][0]["type"] == "guidance" and "calculator" in boost["loops"][0]["guidance"]
    assert any(c["name"] == "calculator" and c["ok"] and "1081" in c["result"] for c in trace.tool_calls)
    assert "1081" in trace.reply.replace(",", "")
    assert executor.calls >= 2  # the call, then the answer from its result


async def test_garbage_planner_ends_in_a_direct_answer_after_three_loops(ollama_server, tmp_path):
    garbage = ScriptedBackend("I like turtles.", "Bananas are yellow.", "```json\n{}\n```")
    loop, executor = make(ollama_server, tmp_path, planner=garbage)
    trace = await ask(loop, "What is 23 times 47?")
    boost = trace.extra["boost"]
    assert [lp["type"] for lp in boost["loops"]] == ["invalid"] * 3
    assert boost["final"] == "direct" and len(garbage.requests) == 3
    assert any(c["name"] == "calculator" and c["ok"] for c in trace.tool_calls), trace.to_dict()
    assert "1081" in trace.reply.replace(",", "")


async def test_openai_planner_on_llama_cpp_server_guides_a_tool_call(ollama_server, openai_server, tmp_path):
    planner = OpenAIBackend(openai_server.url, "planner", temperature=0.0, timeout_s=240)
    direct = [c.content async for c in planner.stream([{"role": "user", "content": "Say hi."}], None)]
    assert "".join(direct).strip()
    loop, _ = make(ollama_server, tmp_path, planner=planner)
    trace = await ask(loop, "What time is it in Tokyo?")
    boost = trace.extra["boost"]
    assert boost["final"] == "guidance", trace.to_dict()
    assert boost["planner"] == f"planner at {openai_server.url}"
    assert boost["planner_tokens"]["completion"] > 0
    calls = [c for c in trace.tool_calls if c["name"] == "get_current_time" and c["ok"]]
    assert calls and "Asia/Tokyo" in calls[0]["result"], trace.to_dict()


def test_cli_ask_uses_boost_when_enabled(ollama_server, tmp_path):
    conf = tmp_path / "config.toml"
    # the intent fast path is off: it would answer this sum before boost is asked
    conf.write_text(
        f'[llm]\nhost = "{ollama_server.url}"\ntemperature = 0.0\nrequest_timeout_s = {PATIENT_S}\n'
        f"[boost]\nenabled = true\ntimeout_s = {PATIENT_S}\n[intents]\nenabled = false\n"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    env.pop("OLLAMA_HOST", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "iris_voice.cli",
            "--config",
            str(conf),
            "ask",
            "--json",
            "What is 12 plus 30?",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(proc.stdout)
    assert trace["execution_path"] == "boost"
    assert trace["boost"]["used"] and trace["boost"]["loops"], trace
    assert "42" in trace["reply"]
