"""The real model under a constrained choice (the test server compiles ``format`` to a
llama.cpp grammar, as Ollama does), through IRIS's own loop: whatever it is asked, what it
calls is a tool it was shown, with arguments that tool takes."""

from __future__ import annotations

import pytest

from iris_voice.config import LlmConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.history import Bounds, Conversation
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.llm.client import OllamaBackend
from tests.support.fakes import builtin_registry

pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]


@pytest.mark.parametrize(
    "question",
    ["What time is it in Tokyo?", "Set a tea timer for three minutes.", "Open the garage door.", "Hello!"],
)
async def test_a_constrained_turn_calls_only_shown_tools_with_valid_arguments(ollama_server, question):
    registry = builtin_registry()
    cfg = LlmConfig(host=ollama_server.url, choice="always", temperature=0.0, request_timeout_s=600)
    it = Assistant(ChatLoop(OllamaBackend(cfg), registry, cfg), Conversation(Bounds()))
    trace = await ask(it, question)
    print(question, "->", [(c["name"], c["arguments"]) for c in trace.tool_calls], repr(trace.reply))
    assert trace.reply, "nothing was said"
    for call in trace.tool_calls:
        # validation and grounding may refuse a call; a name outside the shown set cannot be written
        assert call["name"] in registry.names(), call
    assert "{" not in trace.reply and '"tool"' not in trace.reply
