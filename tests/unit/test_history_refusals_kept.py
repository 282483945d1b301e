"""A refusal is kept in the history like any reply.

Keeping refusals out (so a small model could not copy them) was measured on a conversation
mixing requests IRIS must refuse with ones it must serve: with them kept, the must-refuse
side went 15 -> 6 wrong of 44 and the must-serve side stayed at 7 (docs/benchmarks.md).
"""

from __future__ import annotations

from iris_voice.conversation.responder import ask
from iris_voice.tools.registry import CANNOT
from tests.support.fakes import ScriptedBackend, builtin_registry, chat_assistant


async def test_a_refusal_is_kept_and_the_next_turn_reads_it():
    registry = builtin_registry()
    backend = ScriptedBackend("Sure, turning on the lamp.", "Canberra is the capital.")
    assistant = chat_assistant(backend, registry)
    assert (await ask(assistant, "Turn on the lamp.")).reply == CANNOT  # the words claimed it
    assert assistant.conversation.messages()[-1] == {"role": "assistant", "content": CANNOT}
    await ask(assistant, "What is the capital of Australia?")
    sent = backend.requests[-1]["messages"]
    user = [m["content"] for m in sent if m["role"] == "user"]
    assert user[-2:] == ["Turn on the lamp.", "What is the capital of Australia?"]
    assert {"role": "assistant", "content": CANNOT} in sent


async def test_a_reply_after_a_tool_answered_is_kept_even_when_it_says_cannot():
    registry = builtin_registry()
    call = [("get_current_time", {"timezone": "Paris"})]
    backend = ScriptedBackend(call, "Sorry, I can't tell the weather, but it is morning in Paris.")
    assistant = chat_assistant(backend, registry)
    await ask(assistant, "What time is it in Paris?")
    assert assistant.conversation.messages()[0] == {"role": "user", "content": "What time is it in Paris?"}
