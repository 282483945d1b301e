"""The server's prompt cache kept in step with the conversation (``PromptWarmer``), on the
real model: after turns the model never saw, a question evaluates only its own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, LlmConfig, ToolsConfig
from iris_voice.conversation.responder import Assistant, ask

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]

FAST_TURNS = (
    "What time is it in Tokyo?",
    "What is 23 times 47?",
    "Set a pasta timer for eight minutes.",
    "How much time is left on my timers?",
)
QUESTION = "Give me one fun fact about octopuses."


def make(server, tmp_path: Path, warm_cache: bool) -> Assistant:
    llm = LlmConfig(host=server.url, temperature=0.0, warm_cache=warm_cache)
    cfg = Config(llm=llm, tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")))
    return build_app(cfg).responder


async def _after_fast_turns(responder: Assistant) -> int:
    await responder.warmup()  # as at start: system prompt and tools cached
    for text in FAST_TURNS:
        trace = await ask(responder, text)
        assert trace.execution_path == "fast", trace.to_dict()
        responder.idle()  # the reply was spoken; the user is quiet
        await responder.warmer.settle()
    trace = await ask(responder, QUESTION)
    assert trace.execution_path == "native" and trace.reply, trace.to_dict()
    return trace.prompt_tokens


async def test_a_question_after_fast_path_turns_evaluates_only_its_own_words(ollama_server, tmp_path):
    warm = await _after_fast_turns(make(ollama_server, tmp_path / "warm", warm_cache=True))
    cold = await _after_fast_turns(make(ollama_server, tmp_path / "cold", warm_cache=False))
    # The question's own turn is ~25 tokens with the chat template's markers; without the
    # warm-up the four fast-path turns (their calls and results) are evaluated first.
    assert warm <= 40, warm
    assert cold >= warm + 150, (warm, cold)
