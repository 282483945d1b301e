"""The fast path and direct-return tools with the real model behind the Ollama-protocol test server."""

from __future__ import annotations

from pathlib import Path

import pytest

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, LlmConfig, ToolsConfig
from iris_voice.conversation.responder import Assistant, ask

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]


def make(server, tmp_path: Path) -> Assistant:
    llm = LlmConfig(host=server.url, model="qwen2.5-coder:1.5b", temperature=0.0)
    cfg = Config(llm=llm, tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")))
    responder = build_app(cfg).responder
    assert responder.fast is not None
    return responder


async def test_a_follow_up_to_a_fast_answer_keeps_its_context(ollama_server, tmp_path):
    responder = make(ollama_server, tmp_path)
    fast = await ask(responder, "What time is it in Tokyo?")
    assert fast.execution_path == "fast" and fast.rounds == 0
    follow = await ask(responder, "And in Paris?")
    assert follow.execution_path == "native"
    calls = [c for c in follow.tool_calls if c["name"] == "get_current_time" and c["ok"]]
    assert calls and "paris" in str(calls[0]["arguments"]).lower(), follow.to_dict()
    # a sentence tool: spoken as is after one model round
    assert follow.rounds == 1 and follow.to_dict().get("direct_return") is True
    assert follow.reply.endswith("in Paris.") and "Europe/Paris" not in follow.reply


async def test_a_timer_set_by_the_model_is_confirmed_in_one_round(ollama_server, tmp_path):
    responder = make(ollama_server, tmp_path)
    trace = await ask(responder, "Could you start the pasta timer? Eight minutes, please, and thank you.")
    assert trace.execution_path == "native", trace.to_dict()  # not a template sentence
    assert [c["name"] for c in trace.tool_calls] == ["set_timer"], trace.to_dict()
    assert trace.rounds == 1 and trace.reply == trace.tool_calls[0]["result"]
