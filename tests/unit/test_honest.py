"""Honest words: no reply claims an action no tool performed, none ends mid-sentence."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from iris_voice.config import LlmConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.honest import ClaimGuard, claims, claims_own, recites
from iris_voice.conversation.repairs import ACT_NOTE
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.llm.client import ChatChunk
from iris_voice.tools.registry import CANNOT
from tests.support.fakes import ScriptedBackend, builtin_registry, chat_assistant


@pytest.mark.parametrize(
    ("reply", "request_"),
    [
        # What a 1.5B model said to requests IRIS cannot serve (the out-of-scope sets).
        ("Iris will open the garage door.", "Open the garage door."),
        ("I will move forward ten meters.", "Go forward ten meters."),
        ("I can play some jazz in the kitchen.", "Play some jazz in the kitchen."),
        ("Unlock the back door.", "Unlock the back door."),
        ("I'll set the thermostat to 20 degrees.", "Set the thermostat to 20 degrees."),
        ("Sure, turning the heating up to 21 degrees.", "Turn the heating up."),
        ("Calling your sister now.", "Call my sister."),
        ("I've locked the front door.", "Lock the front door."),
        ("The garage door is now open.", "Open the garage door."),
        ("Your pizza is on its way.", "Order a pizza."),
        ("The volume has been set to 100%.", "Turn the volume up."),
        ("I'm going to send the email to your boss.", "Email my boss."),
        ("Okay, I've just ordered a medium Americano.", "A medium Americano, please."),
        # the request's own verb said done while no tool acted
        ("The back door is unlocked.", "Unlock the back door."),
        ("The email has been sent.", "Send an email to Bob."),
        ("The lights are turned off.", "Please turn off the lights."),
        # a question about the world now, answered with its own words: a guess
        ("It will rain today.", "Will it rain today?"),
        ("It is cold outside.", "Is it cold outside?"),
    ],
)
def test_replies_that_claim_an_action_are_claims(reply, request_):
    assert claims(reply, request_)


@pytest.mark.parametrize(
    ("reply", "request_"),
    [
        ("The capital of Australia is Canberra.", "What is the capital of Australia?"),
        ("A fun fact about koalas: they sleep up to 22 hours a day.", "Tell me a fun fact about koalas."),
        ("I can set timers and reminders, tell the time and calculate.", "What can you do?"),
        ("I can help with that.", "Can you help me?"),
        ("Sorry, I can't do that.", "Open the garage door."),
        ("I can't open doors, but I can set a timer.", "Open the garage door."),
        ("Cooking pasta takes about ten minutes.", "How long does pasta take?"),
        ("The store is open until nine.", "When does the store close?"),
        ("It is 6:35 pm in Tokyo.", "What time is it in Tokyo?"),
        ("Your pasta timer is set for 8 minutes.", "Set a pasta timer for eight minutes."),
        ("The door is locked.", "Is the door locked?"),  # a question asks for no action
        ("The lights were turned off at ten.", "When were the lights turned off?"),
        ("Canberra is the capital of Australia.", "Is Canberra the capital of Australia?"),
        ("I can't check the weather, I have no forecast.", "Will it rain today?"),
        ("Yes, there are seven days in a week.", "Are there seven days in a week?"),
    ],
)
def test_answers_refusals_and_true_abilities_are_not_claims(reply, request_):
    assert not claims(reply, request_)


@pytest.mark.parametrize(
    ("reply", "request_"),
    [
        ("The pasta timer has been cancelled.", "cancelled the pasta timer."),
        ("I've set a timer for 8 minutes.", "Set a timer for eight minutes."),
        ("I'll set a pasta timer for eight minutes.", "set a pasta timer for 8 minutes"),
        ("Timer set for 10 minutes.", "start a 10 minute timer"),
        ("Your reminder has been added.", "remind me to call mum at 7 pm"),
        ("I have deleted all your timers.", "Clear all my timers."),
        ("The tea timer is now cancelled.", "stop the tea timer"),
    ],
)
def test_a_timer_action_said_done_for_a_request_that_asks_for_one_is_an_own_claim(reply, request_):
    assert claims_own(reply, request_) and not claims(reply, request_)


@pytest.mark.parametrize(
    ("reply", "request_"),
    [
        ("Your pasta timer has been set for eight minutes.", "thanks a lot"),  # no change asked
        ("Your pasta timer has three minutes left.", "Cancel the pasta timer?"),
        ("I can't cancel that timer: there is no tea timer.", "Cancel the tea timer."),
        ("Which timer should I cancel?", "Cancel my timer."),
        ("I can set timers and reminders.", "Set a timer."),
        ("You have two timers running.", "Which timers are set?"),
    ],
)
def test_words_about_timers_that_say_nothing_was_done_are_no_own_claims(reply, request_):
    assert not claims_own(reply, request_) and not claims(reply, request_)


def test_a_held_own_claim_is_undone_not_refused_when_no_call_follows():
    guard = ClaimGuard("Cancel the pasta timer.")
    assert guard.feed("The pasta timer has been cancelled.") == []
    assert guard.feed("Enjoy your meal.") == []  # follows the claim: held too
    assert guard.settle(called=False) == [] and guard.refused == []
    assert guard.undone == ["The pasta timer has been cancelled.", "Enjoy your meal."]
    guard = ClaimGuard("Set a timer for 8 minutes.")
    assert guard.feed("I'll set a timer for 8 minutes.") == []
    assert guard.settle(called=True) == ["I'll set a timer for 8 minutes."] and guard.undone == []


def test_the_guard_holds_from_the_first_claim_and_settles_by_whether_a_call_followed():
    guard = ClaimGuard("Open the garage door.")
    assert guard.feed("Sure.") == ["Sure."]
    assert guard.feed("I will open the garage door.") == []
    assert guard.feed("It will be open in a moment.") == []  # follows a claim: held too
    assert guard.settle(called=False) == [CANNOT]
    assert guard.refused == ["I will open the garage door.", "It will be open in a moment."]
    guard = ClaimGuard("Set the thermostat to 20 degrees.")
    assert guard.feed("I'll set the thermostat to 20 degrees.") == []
    assert guard.settle(called=True) == ["I'll set the thermostat to 20 degrees."]
    assert ClaimGuard("Open it.", active=False).feed("I opened it.") == ["I opened it."]


@pytest.mark.parametrize(
    ("request_", "reply"),
    [
        ("Open the garage door.", "Iris will open the garage door."),
        ("Go forward ten meters.", "Okay. I will move forward ten meters. Anything else?"),
        ("Unlock the back door.", "Unlock the back door."),
        ("Play some jazz in the kitchen.", "I can play some jazz in the kitchen."),
        ("Will it rain today?", "It will rain today."),
    ],
)
async def test_a_claimed_action_with_no_tool_is_said_as_cannot_and_only_that_is_remembered(request_, reply):
    registry = builtin_registry()
    assistant = chat_assistant(ScriptedBackend(reply), registry)
    trace = await ask(assistant, request_)
    assert trace.reply in (CANNOT, f"Okay. {CANNOT}")
    assert trace.extra["claimed"]
    # the claim never reaches the model again: the history holds what IRIS said instead
    assert assistant.conversation.messages() == [
        {"role": "user", "content": request_},
        {"role": "assistant", "content": trace.reply},
    ]
    assert (await registry.call("list_timers", {})).result == "No timers are running."


async def test_an_announced_call_is_spoken_and_runs():
    registry = builtin_registry()
    said = "Set a tea timer for three minutes."
    reply = (
        "Sure, I'll set a tea timer for three minutes. "
        '<tool_call>{"name": "set_timer", "arguments": {"duration": "3 minutes", "label": "tea"}}</tool_call>'
    )
    trace = await ask(chat_assistant(ScriptedBackend(reply), registry), said)
    assert trace.reply.startswith("Sure, I'll set a tea timer for three minutes.")
    assert "claimed" not in trace.extra
    assert "tea" in (await registry.call("list_timers", {})).result


async def test_a_claim_before_a_call_to_a_tool_nobody_has_is_refused_once():
    reply = ("I will open the garage door.", [("open_garage_door", {})])
    trace = await ask(chat_assistant(ScriptedBackend(reply), builtin_registry()), "Open the garage door.")
    assert trace.reply == CANNOT and trace.extra["unknown_tools"] == ["open_garage_door"]


async def test_a_clause_spoken_before_withheld_call_syntax_gets_a_closing_sentence():
    # "To have a medium double shot Americano," was spoken as the reply's first clause;
    # the rest named a tool and was withheld: the turn does not stop mid-sentence.
    reply = (
        "To have a medium double shot Americano, you can call the set_timer function"
        " with the duration of the brewing."
    )
    chat = ChatLoop(ScriptedBackend(reply), builtin_registry(), LlmConfig(), first_clause_words=4)
    trace = await ask(Assistant(chat), "Can I have a medium double shot Americano?")
    assert trace.reply == f"To have a medium double shot Americano, {CANNOT}"


class _Gated:
    """A backend that writes its first sentence, then waits for ``go`` before the rest."""

    name = "gated"

    def __init__(self, first: str, rest: str) -> None:
        self.first, self.rest = first, rest
        self.go = asyncio.Event()

    async def stream(self, messages: Any, tools: Any, options: Any = None) -> AsyncIterator[ChatChunk]:
        """One reply in two parts."""
        yield ChatChunk(content=self.first)
        await self.go.wait()
        yield ChatChunk(content=self.rest)
        yield ChatChunk(done=True, prompt_tokens=10, completion_tokens=5, prompt_ms=1.0)


@pytest.mark.parametrize(
    ("first", "spoken_at_once"),
    [("Canberra is the capital of Australia. It", True), ("I will open the garage door. It", False)],
)
async def test_only_a_claim_waits_for_the_round_to_end(first, spoken_at_once):
    # The splitter knows a sentence ended when the next one starts ("It").
    backend = _Gated(first, " is all.")
    assistant = chat_assistant(backend, builtin_registry())
    sentences = assistant.sentences("Open the garage door.")
    got = asyncio.ensure_future(anext(sentences))
    # An answer must come while the model is still held; a claim must not (a busy machine
    # can only make the claim's case later, so its short wait cannot fail by load).
    done, _ = await asyncio.wait({got}, timeout=60 if spoken_at_once else 2)
    assert bool(done) == spoken_at_once
    backend.go.set()
    first_said = await asyncio.wait_for(got, 30)
    assert first_said == (first.removesuffix(" It") if spoken_at_once else CANNOT)
    await sentences.aclose()


def test_a_tool_description_said_back_is_a_recital():
    described = ("List timers and reminders, or how long one has left.", "Start a countdown timer.")
    assert recites("To list timers and reminders, or how long one has left.", described)
    assert not recites("You have one timer: pasta, with 7 minutes left.", described)
    assert not recites("Timers are fun.", described)  # a few of its words are no recital


async def test_a_recited_tool_is_never_said_and_is_called_when_it_only_reads():
    # "How long is left on the pasta timer?" got list_timers' description read out as the
    # answer (the development half of the tool questions). It changes nothing and needs no
    # argument: IRIS calls it as the model named it.
    registry = builtin_registry()
    await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})
    backend = ScriptedBackend("To list timers and reminders, or how long one has left.")
    trace = await ask(chat_assistant(backend, registry), "How long is left on the pasta timer?")
    assert "pasta" in trace.reply and "list timers" not in trace.reply.lower()
    assert [c["name"] for c in trace.tool_calls] == ["list_timers"] and len(backend.requests) == 1


async def test_a_recited_tool_that_needs_arguments_is_asked_for_once():
    registry = builtin_registry()
    backend = ScriptedBackend(
        "Start a countdown timer.", [("set_timer", {"duration": "3 minutes", "label": "tea"})]
    )
    trace = await ask(chat_assistant(backend, registry), "Set a tea timer for 3 minutes.")
    assert trace.reply == "Tea timer set for 3 minutes."
    assert backend.requests[1]["messages"][-1]["content"] == ACT_NOTE


def test_a_recital_that_starts_as_a_clause_is_held_from_its_first_piece():
    described = ("List timers and reminders, or how long one has left.",)
    guard = ClaimGuard("How long is left on the pasta timer?", descriptions=described)
    assert guard.feed("To list timers and reminders,") == []  # only the description's words so far
    assert guard.feed("or how long one has left.") == []
    assert guard.settle(called=False) == [] and guard.undone and guard.recital
    guard = ClaimGuard("What can you do?", descriptions=described)
    assert guard.feed("I list timers and reminders,") == []
    # words of its own: the held clause goes out with it
    assert guard.feed("and I tell the time.") == ["I list timers and reminders,", "and I tell the time."]
    guard = ClaimGuard("What can you do?", descriptions=described)
    assert guard.feed("I list timers and reminders.") == []
    assert guard.settle(called=False) == ["I list timers and reminders."]  # never finished: said


def test_what_a_server_holds_said_before_it_answered_is_a_guess_dropped_when_the_call_follows():
    from iris_voice.conversation.honest import guesses, topic_words

    topic = topic_words(["the shop database: products, prices (SQL)", "remember facts about people"])
    assert topic == (frozenset({"shop", "database"}),)  # a description without a subject names none
    guessed = "The shop database contains the following tables: products, customers, orders."
    assert guesses(guessed, topic) and not guesses("Koalas sleep 22 hours a day.", topic)
    guard = ClaimGuard("What products are in the shop database?", topic=topic)
    assert guard.feed(guessed) == []
    assert guard.settle(called=True) == []  # the result answers; the guess is never heard
    guard = ClaimGuard("Is the shop database big?", topic=topic)
    assert guard.feed("I can't see how big the shop database is.") == []
    assert guard.settle(called=False) == ["I can't see how big the shop database is."]


async def test_a_guess_before_a_call_is_not_spoken_and_the_result_is():
    from iris_voice.tools.mcp.saying import say_result
    from iris_voice.tools.registry import Tool, ToolRegistry, ToolSpec

    async def list_tables() -> str:
        return "[{'name': 'products'}, {'name': 'customers'}]"

    meta = {"mode": "lazy", "server_description": "the shop database: products, prices, customers (SQL)"}
    spec = ToolSpec("data/sqlite/list_tables", "List all tables in the shop database", {"type": "object"})
    registry = ToolRegistry([], hidden=[Tool(spec, list_tables, meta=meta, say=say_result, read_only=True)])
    guessed = "The shop database contains the following tables: products, customers, orders."
    backend = ScriptedBackend((guessed, [("data/sqlite/list_tables", {})]))
    from iris_voice.config import RetrievalConfig
    from iris_voice.conversation.history import Bounds, Conversation

    loop = ChatLoop(backend, registry, LlmConfig(), retrieval=RetrievalConfig(min_score=0.5))
    trace = await ask(Assistant(loop, Conversation(Bounds())), "Which tables are in the shop database?")
    assert trace.extra.get("retrieved") == ["data/sqlite/list_tables"]
    assert trace.reply == "Products and customers.", trace.reply


@pytest.mark.parametrize(
    ("reply", "request_", "claim"),
    [
        ("I'm on my way.", "Text my brother that I'm on my way.", True),  # a run of it said back
        ("Okay, Sam.", "Call me Sam from now on.", False),  # one of its words is no echo
        ("Sure, I'll call you Sam from now on.", "Call me Sam from now on.", False),  # the naming sense
        ("I'll call you a taxi.", "Call me a taxi.", True),  # a taxi is no name
        ("Sure, I can play a word game with you.", "Can you play a word game with me?", False),
        ("I can play some jazz for you.", "Play some jazz.", True),
        (
            "Yes, Sacramento is on the way from San Francisco to Lake Tahoe.",
            "Is Sacramento on the way?",
            False,
        ),
        ("Your taxi is on the way.", "Order me a taxi.", True),
    ],
)
def test_a_short_repeat_is_an_echo_and_a_conversational_sense_is_no_claim(reply, request_, claim):
    assert claims(reply, request_) is claim
