"""The reply policy: each rule switchable, each decision in the turn's trace."""

from __future__ import annotations

import pytest

from iris_voice.config import REPLY_RULES, Config, LlmConfig, ReplyConfig, parse
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.policy import GUARDS, ReplyPolicy, fired
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.errors import ConfigError
from iris_voice.tools.registry import CANNOT
from tests.support.fakes import ScriptedBackend, builtin_registry


def _assistant(*replies, off: tuple[str, ...] = ()) -> tuple[Assistant, ScriptedBackend]:
    backend = ScriptedBackend(*replies)
    chat = ChatLoop(backend, builtin_registry(), LlmConfig(), policy=ReplyPolicy(frozenset(off)))
    return Assistant(chat), backend


def test_every_rule_is_named_with_what_it_guards_against() -> None:
    assert tuple(GUARDS) == REPLY_RULES and len(GUARDS) <= 12
    assert all(len(why) > 20 for why in GUARDS.values())
    with pytest.raises(ValueError, match="unknown reply rules"):
        ReplyPolicy(frozenset({"nonsense"}))


def test_a_rule_switched_off_in_the_config_is_named_and_an_unknown_one_is_an_error() -> None:
    assert Config(reply=ReplyConfig(off=["claims"])).reply.off == ["claims"]
    with pytest.raises(ConfigError, match=r"reply\.off.*unknown rule 'claim'"):
        parse({"reply": {"off": ["claim"]}})


async def test_a_claimed_action_on_the_world_is_refused_and_recorded() -> None:
    responder, backend = _assistant("I'll turn on the kitchen lights.")
    trace = await ask(responder, "Turn on the kitchen lights.")
    assert trace.reply == CANNOT and len(backend.requests) == 1
    assert {
        "rule": "claims",
        "action": "replaced",
        "text": "I'll turn on the kitchen lights.",
        "said": CANNOT,
    } in (trace.to_dict()["policy"])
    # a refusal is kept in the history like any reply: a conversation mixing both sides
    # went 22 -> 13 wrong without the rule that kept it out (docs/benchmarks.md)
    assert responder.conversation.turns[0][-1]["content"] == CANNOT


@pytest.mark.parametrize(
    "said",
    ["Sure, I'll call you Sam from now on.", "Sure, I can play a word game with you. You start!"],
)
async def test_an_action_in_the_conversation_is_no_claim_and_is_kept(said: str) -> None:
    responder, _ = _assistant(said)
    trace = await ask(responder, "Call me Sam from now on.")
    assert trace.reply == said and "policy" not in trace.to_dict()
    assert responder.conversation.turns[0][-1]["content"] == said


async def test_with_claims_off_a_claim_is_spoken_as_written() -> None:
    responder, backend = _assistant("I'll turn on the kitchen lights.", off=("claims",))
    trace = await ask(responder, "Turn on the kitchen lights.")
    assert trace.reply == "I'll turn on the kitchen lights." and len(backend.requests) == 1
    assert "policy" not in trace.to_dict()


async def test_call_syntax_is_dropped_and_recorded_unless_the_rule_is_off() -> None:
    said = 'The answer is 4. {"name": "nothing_here"}'
    responder, _ = _assistant(said)
    trace = await ask(responder, "What is two plus two, roughly?")
    assert trace.reply.startswith("The answer is 4.") and "nothing_here" not in trace.reply
    assert fired(trace.to_dict())[0] == "syntax"
    responder, _ = _assistant(said, off=("syntax",))
    assert "nothing_here" in (await ask(responder, "What is two plus two, roughly?")).reply


async def test_a_side_effect_the_request_is_not_about_is_not_run_and_the_model_answers_in_words() -> None:
    call = [("set_reminder", {"when": "in 1 minute", "message": "Call me Sam from now on"})]
    responder, backend = _assistant(call, "Okay, Sam.")
    trace = await ask(responder, "Call me Sam from now on.")
    assert trace.reply == "Okay, Sam."
    assert not trace.tool_calls[0]["ok"] and "Not run" in trace.tool_calls[0]["result"]
    assert "grounding" in fired(trace.to_dict())
    assert backend.requests[1]["messages"][-1]["role"] == "user"  # asked for words, after the result
    assert responder.conversation.turns[0][-1]["content"] == "Okay, Sam."  # the wish is remembered


async def test_a_timer_said_cancelled_with_no_call_is_not_claimed_whatever_the_request_said() -> None:
    responder, backend = _assistant("Timer canceled.", "Timer canceled.")
    trace = await ask(responder, "cancel it")
    assert trace.reply != "Timer canceled." and "nothing was changed" in trace.reply
    assert [d["action"] for d in trace.to_dict()["policy"] if d["rule"] == "own_claims"] == [
        "asked again",
        "replaced",
    ]
    assert len(backend.requests) == 2


async def test_calls_only_to_tools_nobody_has_are_refused_or_with_the_rule_off_go_back_to_the_model() -> None:
    responder, backend = _assistant([("open_garage_door", {})])
    trace = await ask(responder, "Open the garage door.")
    assert (
        trace.reply == CANNOT and fired(trace.to_dict())[0] == "unknown_tool" and len(backend.requests) == 1
    )
    responder, backend = _assistant(
        [("open_garage_door", {})], "I have no way to open doors, sorry.", off=("unknown_tool",)
    )
    trace = await ask(responder, "Open the garage door.")
    assert (
        trace.reply == "I have no way to open doors, sorry."
        and "unknown tool" in trace.tool_calls[0]["result"]
    )
    assert "unknown_tool" not in fired(trace.to_dict())


async def test_a_clause_cut_off_by_call_syntax_gets_closing_words_unless_the_rule_is_off() -> None:
    said = 'To open the garage door, {"name": "open_garage_door", "arguments": {}}'
    responder, _ = _assistant(said)
    trace = await ask(responder, "Open the garage door.")
    assert trace.reply.endswith(CANNOT) and "closing" in fired(trace.to_dict())
    responder, _ = _assistant(said, off=("closing",))
    trace = await ask(responder, "Open the garage door.")
    assert CANNOT not in trace.reply and "closing" not in fired(trace.to_dict())


@pytest.mark.parametrize(
    ("words", "reply"),
    [
        ("I will rewind the film.", CANNOT),  # "rewind" is on no list of verbs: the reach for a tool tells
        ("Starting the mower now.", CANNOT),
        ("Sure thing, Sam!", "Sure thing, Sam!"),
        ("I will call you Sam from now on.", "I will call you Sam from now on."),
    ],
)
async def test_after_a_call_the_request_is_not_about_any_action_claimed_is_a_claim(words, reply) -> None:
    call = [("cancel_timer", {"which": "pasta"})]
    responder, backend = _assistant(call, words)
    trace = await ask(responder, "Rewind the film." if "film" in words else "Call me Sam from now on.")
    assert trace.reply == reply and "grounding" in fired(trace.to_dict())
