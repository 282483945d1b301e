"""The history's bounds and the server's prompt cache, on the real model: after the oldest
turns are dropped, the idle warm-up reads what is kept, and the next question evaluates only
its own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, LlmConfig, ToolsConfig
from iris_voice.conversation.responder import ask

pytestmark = [pytest.mark.model, pytest.mark.timeout(300)]

FAST_TURNS = (
    "What time is it in Tokyo?",
    "What is twenty three times forty seven?",
    "What time is it in London?",
    "What is seventeen plus twenty five?",
)
QUESTION = "What is the capital of France?"


async def test_after_a_trim_and_an_idle_warm_up_a_question_evaluates_only_its_own_words(
    ollama_server, tmp_path: Path
):
    llm = LlmConfig(host=ollama_server.url, temperature=0.0, history_turns=3)
    cfg = Config(llm=llm, tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")))
    responder = build_app(cfg).responder
    conversation = responder.conversation
    await responder.warmup()  # as at start: system prompt and tools cached
    for text in FAST_TURNS:  # turns the model never saw: cheap to make, and the warm-up reads them
        trace = await ask(responder, text)
        assert trace.execution_path == "fast", trace.to_dict()
        responder.idle()
        await responder.warmer.settle()
    # the fourth turn went past three: the oldest went in one step, down to the newest
    assert conversation.trims == 1 and len(conversation) == 1
    assert responder.warmer.warmups == 4 and responder.warmer.cancelled == 0
    trace = await ask(responder, QUESTION)
    assert trace.execution_path == "native" and "Paris" in trace.reply, trace.to_dict()
    # The question's own turn is ~15 tokens with the chat template's markers; a warm-up that
    # missed the turn's prefix would leave the history (~70 tokens) or, with other tools or
    # another system prompt, ~900 tokens to evaluate.
    assert trace.prompt_tokens <= 30, trace.to_dict()
