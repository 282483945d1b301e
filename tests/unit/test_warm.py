"""The prompt-cache warm-up: sent when IRIS is idle and the conversation moved on, never
in a turn's way."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from iris_voice.config import LlmConfig
from iris_voice.conversation.responder import ask
from iris_voice.conversation.warm import warm_steps
from iris_voice.errors import Code, LlmError
from iris_voice.llm.client import ChatChunk
from tests.support.fakes import ScriptedBackend, builtin_registry, chat_assistant


async def test_idle_after_a_turn_warms_the_cache_with_the_conversation():
    backend = ScriptedBackend("Octopuses have three hearts.")
    assistant = chat_assistant(backend, builtin_registry())
    await ask(assistant, "Tell me about octopuses.")
    assistant.idle()
    await assistant.warmer.settle()
    (warm,) = backend.warmups
    msgs = warm["messages"]
    # the system prompt, the whole conversation so far, then a stand-in question
    assert msgs[0]["role"] == "system"
    assert msgs[1:-1] == assistant.conversation.messages()
    assert [m["role"] for m in msgs[1:-1]] == ["user", "assistant"]
    assert msgs[-1]["role"] == "user"
    assert warm["options"] == {"num_predict": 1}
    assert warm["tools"] == backend.requests[0]["tools"]  # the same prefix the turn had
    # nothing changed since: a second idle sends nothing
    assistant.idle()
    await assistant.warmer.settle()
    assert len(backend.warmups) == 1


async def test_a_start_up_warm_up_counts_and_a_reset_warms_again():
    backend = ScriptedBackend("Hello.")
    assistant = chat_assistant(backend, builtin_registry())
    await assistant.warmup()
    assistant.idle()
    await assistant.warmer.settle()
    assert len(backend.warmups) == 1  # start-up only
    await ask(assistant, "Hi there.")
    assistant.conversation.reset()  # iris forget
    assistant.idle()
    await assistant.warmer.settle()
    assert len(backend.warmups) == 2
    assert [m["role"] for m in backend.warmups[-1]["messages"]] == ["system", "user"]


async def test_warm_cache_off_sends_no_warm_up():
    backend = ScriptedBackend("Fine.")
    assistant = chat_assistant(backend, builtin_registry(), LlmConfig(warm_cache=False))
    assistant.warmer.enabled = False
    await ask(assistant, "How are you?")
    assistant.idle()
    await assistant.warmer.settle()
    assert backend.warmups == []


class SlowWarmups(ScriptedBackend):
    """Warm-ups hang until closed (a long prompt being evaluated); turns answer at once."""

    def __init__(self, *replies: Any) -> None:
        super().__init__(*replies)
        self.warm_started = asyncio.Event()
        self.warm_closed = asyncio.Event()

    async def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        options: dict[str, Any] | None = None,
    ) -> AsyncIterator[ChatChunk]:
        if (options or {}).get("num_predict") != 1:
            async for chunk in super().stream(messages, tools, options):
                yield chunk
            return
        self.warm_started.set()
        try:
            await asyncio.sleep(3600)
            yield ChatChunk(done=True)
        finally:
            self.warm_closed.set()  # the request's stream was closed: the server stops evaluating


async def test_a_turn_cancels_a_running_warm_up_and_does_not_wait_for_it():
    backend = SlowWarmups("First answer.", "Second answer.")
    assistant = chat_assistant(backend, builtin_registry())
    await ask(assistant, "First question.")
    assistant.idle()
    await asyncio.wait_for(backend.warm_started.wait(), 2)
    assert assistant.warmer.busy
    trace = await asyncio.wait_for(ask(assistant, "Second question."), 2)
    assert trace.reply == "Second answer."
    await asyncio.wait_for(backend.warm_closed.wait(), 2)
    assert not assistant.warmer.busy and assistant.warmer.cancelled == 1
    # the cancelled warm-up did not count: the next idle warms again
    assistant.idle()
    assert assistant.warmer.busy


class DeadServer(ScriptedBackend):
    async def stream(self, messages, tools, options=None):
        raise LlmError(Code.LLM_UNREACHABLE, "cannot reach the Ollama server")
        yield  # pragma: no cover


async def test_a_failed_warm_up_is_only_logged(caplog):
    caplog.set_level(logging.INFO)
    backend = DeadServer()
    assistant = chat_assistant(backend, builtin_registry())
    assistant.conversation.add([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}])
    assistant.idle()
    await assistant.warmer.settle()
    assert not assistant.warmer.busy and assistant.warmer.warmups == 0
    assert "prompt warm-up failed" in caplog.text


async def test_the_voice_pipeline_warms_the_cache_once_a_reply_is_over():
    from tests.support.fakes_audio import FakeStt, ScriptSource
    from tests.unit.test_pipeline import QUESTION, Harness

    backend = ScriptedBackend("It is noon in Tokyo.")
    h = Harness(backend, FakeStt("Hey Jarvis, what time is it?"))
    await h.run(ScriptSource(QUESTION))
    await h.chat.warmer.settle()
    (warm,) = backend.warmups  # after the turn, not during it
    assert warm["messages"][1:-1] == h.chat.conversation.messages()
    assert h.pipeline.turns[-1]["reply"] == "It is noon in Tokyo."


def _turn(i: int, words: int = 40) -> list[dict[str, str]]:
    text = " ".join(f"word{i}-{n}" for n in range(words))
    return [{"role": "user", "content": text}, {"role": "assistant", "content": text}]


def test_warm_steps_start_where_the_cache_ends_and_add_about_a_step_each():
    history = [m for i in range(6) for m in _turn(i, words=50)]  # ~120 estimated tokens a message
    assert warm_steps(history, history[:10]) == [11, 12]  # one new turn of two long messages
    ends = warm_steps(history, [])  # a trimmed history: nothing cached matches
    assert ends[-1] == 12 and len(ends) > 3 and ends == sorted(set(ends))
    assert warm_steps(history[:4], history[1:5]) == [1, 2, 3, 4]  # differs from the first message


async def test_a_long_change_is_warmed_in_steps_and_a_turn_keeps_what_was_done():
    backend = ScriptedBackend("Fine.")
    assistant = chat_assistant(backend, builtin_registry())
    for i in range(4):
        assistant.conversation.add(_turn(i))
    assistant.idle()
    await assistant.warmer.settle()
    sizes = [len(w["messages"]) for w in backend.warmups]
    assert len(sizes) >= 3 and sizes == sorted(sizes)  # growing prefixes of one conversation
    assert backend.warmups[-1]["messages"][1:-1] == assistant.conversation.messages()
    assistant.conversation.add(_turn(9, words=5))  # a short new turn: one more request
    assistant.idle()
    await assistant.warmer.settle()
    assert len(backend.warmups) == len(sizes) + 1
