"""Refusals are not kept in the history: a small model copies them into later turns."""

from __future__ import annotations

from iris_voice.conversation.responder import ask
from iris_voice.tools.registry import CANNOT
from tests.support.fakes import ScriptedBackend, builtin_registry, chat_assistant


async def test_a_refusal_is_not_kept_in_the_history_and_an_answer_is():
    registry = builtin_registry()
    refused = [("set_timer", {"duration": "1 minute", "label": "lamp"})]  # not grounded: refused
    backend = ScriptedBackend(refused, "Sure, turning on the lamp.", "Canberra is the capital.", "Hello!")
    assistant = chat_assistant(backend, registry)
    assert (await ask(assistant, "Turn on the lamp.")).reply == CANNOT  # the words claimed it
    assert assistant.conversation.messages() == []
    await ask(assistant, "What is the capital of Australia?")
    await ask(assistant, "Hi")
    sent = backend.requests[-1]["messages"]
    assert {"role": "assistant", "content": "Canberra is the capital."} in sent
    assert not any(m.get("content") == CANNOT or "lamp" in str(m.get("content")) for m in sent)


async def test_a_reply_after_a_tool_answered_is_kept_even_when_it_says_cannot():
    registry = builtin_registry()
    call = [("get_current_time", {"timezone": "Paris"})]
    backend = ScriptedBackend(call, "Sorry, I can't tell the weather, but it is morning in Paris.")
    assistant = chat_assistant(backend, registry)
    await ask(assistant, "What time is it in Paris?")
    assert assistant.conversation.messages()[0] == {"role": "user", "content": "What time is it in Paris?"}
