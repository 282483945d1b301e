"""Side effects only when the user's words ask for them: IRIS's grounding check, and what
is never spoken (call syntax, tool names)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from iris_voice.conversation.repairs import LIMIT_NOTE, WORDS_NOTE, unspeakable
from iris_voice.conversation.responder import ask
from iris_voice.conversation.turn import FALLBACK_REPLY
from iris_voice.tools.builtin.clock import UNASKED
from iris_voice.tools.builtin.grounding import said_durations, said_moments
from iris_voice.tools.registry import CANNOT, NOT_ASKED, NOT_WANTED, OTHER_CHANGE
from tests.support.fakes import ScriptedBackend, builtin_registry, chat_assistant

NOW = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)


def test_durations_said_are_found_in_words_and_digits():
    assert said_durations("Please set a timer for twelve minutes for the eggs.") == {720.0}
    assert said_durations("Give the pasta timer two more minutes.") == {120.0}
    assert 5400.0 in said_durations("set a timer for an hour and a half")
    assert said_durations("Turn the heating up to 22 degrees.") == set()  # a number is no duration
    assert said_durations("Turn on the lamp.") == set()


def test_moments_said_are_found_and_bare_numbers_are_not_moments():
    at_six = datetime(2026, 11, 24, 18, 0, tzinfo=UTC).timestamp()
    assert said_moments("Remind me to water the plants at 6 pm.", NOW) == {at_six}
    in_two = datetime(2026, 11, 24, 12, 0, tzinfo=UTC).timestamp()
    assert said_moments("Remind me to call mom in 2 hours.", NOW) == {in_two}
    assert said_moments("Call my sister.", NOW) == set()
    assert said_moments("Set the thermostat to 20 degrees", NOW) == set()


@pytest.mark.parametrize(
    ("request_", "name", "args", "said"),
    [
        ("Turn on the lamp.", "set_timer", {"duration": "1 minute", "label": "lamp"}, CANNOT),
        (
            "Set a timer for the eggs.",
            "set_timer",
            {"duration": "5 minutes"},
            "How long should the timer run?",
        ),
        ("Call my sister.", "set_reminder", {"when": "in 1 hour", "message": "call your sister"}, CANNOT),
        ("Hi ESP, turn off dining room.", "cancel_timer", {"which": "pasta"}, CANNOT),
        ("Hi ESP, turn off dining room.", "cancel_timer", {"which": "all"}, CANNOT),
        ("Turn off the dining room.", "cancel_timer", {"which": "dining room"}, CANNOT),
        ("Make the lamp brighter.", "adjust_timer", {"duration": "2 minutes", "which": "pasta"}, CANNOT),
        ("Pause the music.", "pause_timer", {"which": "music"}, CANNOT),
        ("Read me the first one.", "cancel_timer", {"which": "second"}, CANNOT),  # not the place said
        ("Pause the pasta alarm.", "pause_timer", {"which": "tea"}, "Which timer do you mean?"),
        ("Turn the heating up to twenty one degrees.", "set_timer", {"duration": "21 minutes"}, CANNOT),
        ("Book a table for two tonight.", "set_timer", {"duration": "2 hours", "label": "table"}, CANNOT),
        ("Book a table for two tonight.", "set_reminder", {"when": "8 pm", "message": "table"}, CANNOT),
        # a time IRIS cannot read, for a request that never spoke of time: no usage hint said
        ("Walk ten paces to the left.", "set_timer", {"duration": "10 paces"}, CANNOT),
        (
            "Book a cabin in the mountains for next month.",
            "set_reminder",
            {"when": "in 1 month", "message": "cabin"},
            CANNOT,
        ),
    ],
)
async def test_a_call_the_words_do_not_ask_for_is_refused_and_nothing_changes(request_, name, args, said):
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    before = (await registry.call("list_timers", {})).result
    result = await registry.call(name, args, request=request_)
    assert not result.ok
    if said == CANNOT:  # a tool the request is not about: nothing said for it, the model answers
        assert result.refusal == "" and result.result == f"Error: not run: {NOT_WANTED}"
    else:  # the tool's own question
        assert result.refusal == said and result.result.startswith("Error: not done")
    assert (await registry.call("list_timers", {})).result == before


@pytest.mark.parametrize(
    ("request_", "name", "args"),
    [
        ("Set a tea timer for three minutes.", "set_timer", {"duration": "3 minutes", "label": "tea"}),
        ("Start a timer for one hour.", "set_timer", {"duration": "60 minutes"}),
        ("Remind me to call mom in 2 hours.", "set_reminder", {"when": "in 2 hours", "message": "call mom"}),
        ("Remind me at 7 pm to take out the trash", "set_reminder", {"when": "19:00", "message": "trash"}),
        ("Cancel the pasta timer.", "cancel_timer", {"which": "pasta"}),
        ("Cancel the pasta.", "cancel_timer", {"which": "pasta"}),  # names a running timer
        ("Stop all my timers", "cancel_timer", {"which": "all"}),
        (
            "Give the pasta timer two more minutes.",
            "adjust_timer",
            {"duration": "2 minutes", "which": "pasta"},
        ),
        ("Pause the timer.", "pause_timer", {}),
        ("Stop the first one.", "cancel_timer", {"which": "first"}),  # its place among those running
    ],
)
async def test_a_call_grounded_in_the_words_runs(request_, name, args):
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    result = await registry.call(name, args, request=request_)
    assert result.ok and not result.refusal, result.result


@pytest.mark.parametrize(
    ("request_", "duration", "label", "said"),
    [
        ("Start a timer for one hour.", "1 hour", "breakfast", "Timer set for 1 hour."),
        ("Put a 45 second timer on.", "45 seconds", "pasta", "Timer set for 45 seconds."),
        (
            "Set a timer for twelve minutes for the eggs.",
            "12 minutes",
            "the eggs timer",
            "Eggs timer set for 12 minutes.",
        ),
        (
            "Set a timer for the roast for 2 hours.",
            "2 hours",
            "roast chicken",
            "Roast timer set for 2 hours.",
        ),
    ],
)
async def test_a_timer_name_keeps_only_the_words_said(request_, duration, label, said):
    registry = builtin_registry()
    result = await registry.call("set_timer", {"duration": duration, "label": label}, request=request_)
    assert result.ok and result.result == said, result.result
    assert ("breakfast" in (await registry.call("list_timers", {})).result) is False


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        ("Give me two and a half minutes for the tea.", "Tea timer set for 2 minutes 30 seconds."),
        ("Set a timer for three minutes for the rice, please.", "Rice timer set for 3 minutes."),
        ("Start an egg timer for four minutes.", "Egg timer set for 4 minutes."),
        # no name said: none is made up
        ("Set a five minute timer.", "Timer set for 5 minutes."),
        ("Set a timer for the next ten minutes.", "Timer set for 10 minutes."),
    ],
)
async def test_a_name_said_and_left_out_of_the_call_is_filled_in(request_, said):
    registry = builtin_registry()
    duration = said.split(" for ", 1)[1].rstrip(".")
    result = await registry.call("set_timer", {"duration": duration, "label": None}, request=request_)
    assert result.ok and result.result == said, result.result


@pytest.mark.parametrize(
    ("request_", "name", "args"),
    [
        ("Pause it, the phone is ringing.", "cancel_timer", {"which": "it"}),
        ("Could you freeze the pasta timer for a bit?", "cancel_timer", {"which": "pasta"}),
        ("Start the pasta timer again.", "cancel_timer", {"which": "pasta"}),
        ("Cancel the pasta timer.", "pause_timer", {"which": "pasta"}),
        ("Carry on with the pasta timer.", "pause_timer", {"which": "pasta"}),
        ("Hold the pasta timer.", "resume_timer", {"which": "pasta"}),
    ],
)
async def test_a_call_making_another_action_than_the_one_said_is_not_run(request_, name, args):
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    before = (await registry.call("list_timers", {})).result
    result = await registry.call(name, args, request=request_)
    # the model reads why (no refusal spoken) and may make the call that was asked for
    assert not result.ok and not result.refusal and result.result == f"Error: not run: {OTHER_CHANGE}"
    assert (await registry.call("list_timers", {})).result == before


@pytest.mark.parametrize(
    ("request_", "name"),
    [
        ("Pause the pasta timer.", "pause_timer"),
        ("Hold it, pause the pasta timer.", "pause_timer"),
        ("Resume the pasta timer.", "resume_timer"),
        ("Stop the pasta timer.", "cancel_timer"),
        ("Never mind the pasta timer, I won't start it again.", "cancel_timer"),  # its own word said too
    ],
)
async def test_the_action_said_runs(request_, name):
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    if name == "resume_timer":
        assert (await registry.call("pause_timer", {"which": "pasta"})).ok
    result = await registry.call(name, {"which": "pasta"}, request=request_)
    assert result.ok and not result.refusal, result.result


async def test_without_a_request_the_check_does_not_apply():
    # The fast path's calls come from sentence templates: grounded by construction.
    assert (await builtin_registry().call("set_timer", {"duration": "1 minute", "label": "lamp"})).ok


@pytest.mark.parametrize(
    ("words", "reply"),
    [("I can't turn on lamps.", "I can't turn on lamps."), ("Sure, turning on the lamp now.", CANNOT)],
)
async def test_a_refused_call_the_request_is_not_about_is_answered_in_words_and_judged(words, reply):
    registry = builtin_registry()
    backend = ScriptedBackend([("set_timer", {"duration": "1 minute", "label": "lamp"})], words)
    trace = await ask(chat_assistant(backend, registry), "Turn on the lamp.")
    assert trace.reply == reply  # the model's words, and a claimed action is still no action
    assert backend.requests[1]["messages"][-1]["content"] == WORDS_NOTE
    assert [d["rule"] for d in trace.extra["policy"]][0] == "grounding"
    assert (await registry.call("list_timers", {})).result == "No timers are running."


async def test_a_refused_call_the_request_is_about_says_the_tools_question():
    registry = builtin_registry()
    backend = ScriptedBackend([("set_timer", {"duration": "5 minutes", "label": "eggs"})])
    trace = await ask(chat_assistant(backend, registry), "Set a timer for the eggs.")
    assert trace.reply == "How long should the timer run?" and trace.extra["refused"] == "set_timer"
    assert len(backend.requests) == 1  # no second round


@pytest.mark.parametrize(
    ("request_", "args", "runs"),
    [
        ("Who wrote Pride and Prejudice?", {"timezone": "London"}, False),
        ("How many legs does a spider have?", {}, False),
        ("What time is it in Paris?", {"timezone": "Paris"}, True),
        ("and in mumbai?", {"timezone": "Asia/Kolkata"}, True),  # a follow-up names the place
        ("What's the date today?", {}, True),
        ("Is it past 8:30 in Tokyo?", {"timezone": "Asia/Tokyo"}, True),
        ("Is it 8 am in Lima yet?", {"timezone": "Asia/Tokyo"}, True),
        ("I am curious, who wrote Hamlet?", {"timezone": "London"}, False),  # "am" is no time
    ],
)
async def test_the_clock_runs_only_for_a_question_about_the_time_or_the_place_named(request_, args, runs):
    result = await builtin_registry().call("get_current_time", args, request=request_)
    assert result.ok is runs and not result.refusal  # never refused aloud: it changes nothing
    assert runs or result.result == f"Error: not run: {UNASKED}"


async def test_an_unasked_clock_call_goes_back_to_the_model_which_answers_in_words():
    backend = ScriptedBackend([("get_current_time", {"timezone": "London"})], "Jane Austen wrote it.")
    trace = await ask(chat_assistant(backend, builtin_registry()), "Who wrote Pride and Prejudice?")
    assert trace.reply == "Jane Austen wrote it."
    assert len(backend.requests) == 2 and not trace.tool_calls[0]["ok"]
    sent = backend.requests[1]["messages"][-1]
    assert sent["role"] == "tool" and UNASKED in sent["content"]


@pytest.mark.parametrize(
    ("request_", "name", "args"),
    [
        ("Who wrote Pride and Prejudice?", "set_reminder", {"when": "in 2 hours", "message": "read it"}),
        ("What is the capital of Peru?", "set_timer", {"duration": "1 minute", "label": "peru"}),
        ("How do you say thanks in Spanish?", "cancel_timer", {"which": "all"}),
    ],
)
async def test_a_call_with_side_effects_for_a_question_goes_back_to_the_model(request_, name, args):
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    before = (await registry.call("list_timers", {})).result
    backend = ScriptedBackend([(name, args)], "An answer in words.")
    trace = await ask(chat_assistant(backend, registry), request_)
    # nothing ran, nothing was refused aloud: the model read why and answered in words
    assert trace.reply == "An answer in words." and "refused" not in trace.extra
    assert len(backend.requests) == 2 and not trace.tool_calls[0]["ok"]
    sent = backend.requests[1]["messages"][-1]
    assert sent["role"] == "tool" and NOT_ASKED in sent["content"]
    assert (await registry.call("list_timers", {})).result == before


@pytest.mark.parametrize(
    "reply",
    [
        '{{"name": "open_garage_door"}}',
        '{{"name": "lock_door", "arguments": {"which": "front"}}}}',
        "Sure. I will call the set_timer function for that.",
        "<tools></tools>",
    ],
)
async def test_call_syntax_and_tool_names_are_never_spoken(reply):
    backend = ScriptedBackend(reply)
    trace = await ask(chat_assistant(backend, builtin_registry()), "Open the garage door.")
    assert not unspeakable(trace.reply, []), trace.reply
    assert "{" not in trace.reply and "_" not in trace.reply
    # What was withheld gets its closing sentence: the reply never stops at "Sure."
    assert trace.reply in (CANNOT, f"Sure. {CANNOT}", FALLBACK_REPLY)


async def test_a_call_to_a_tool_nobody_has_ends_the_turn_with_cannot():
    backend = ScriptedBackend([("lock_door", {"which": "front"})])
    trace = await ask(chat_assistant(backend, builtin_registry()), "Lock the front door.")
    assert trace.reply == CANNOT and trace.extra["unknown_tools"] == ["lock_door"]
    assert len(backend.requests) == 1


def test_unspeakable_leaves_plain_sentences_alone():
    assert not unspeakable("It is 3:05 PM in Tokyo.", ["time/get_current_time"])
    assert not unspeakable("Twenty-three times forty-seven is 1,081.", [])
    assert unspeakable("I used time/get_current_time for that.", ["time/get_current_time"])


def test_second_is_the_unit_not_the_ordinal():
    assert said_durations("Put a 45 second timer on.") == {45.0}
    assert 90.0 in said_durations("one minute and thirty seconds")


@pytest.mark.parametrize(
    ("request_", "name", "args"),
    [
        # the user names the tea timer: "last" (here the pasta one) is a guess
        ("Get rid of the tea timer.", "cancel_timer", {"which": "last"}),
    ],
)
async def test_a_guess_beside_what_the_user_named_is_refused(request_, name, args):
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "3 minutes", "label": "tea"})).ok
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    result = await registry.call(name, args, request=request_)
    assert not result.ok and result.refusal, result.result


async def test_raw_json_from_a_tool_is_not_spoken_when_the_model_says_nothing():
    from iris_voice.tools.registry import ToolRegistry, tool_from_function

    def open_nodes(names: list[str]) -> str:
        """Open nodes of a knowledge graph."""
        return '{"entities": [], "relations": []}'

    registry = ToolRegistry([tool_from_function(open_nodes)])
    # JSON after the result, and JSON again when asked once more (without tools) for words
    backend = ScriptedBackend(
        [("open_nodes", {"names": ["garage door"]})], '{"entities": []}', '{"entities": []}'
    )
    trace = await ask(chat_assistant(backend, registry), "Open the garage door.")
    assert trace.reply == CANNOT, trace.reply
    assert len(backend.requests) == 3 and backend.requests[2]["messages"][-1]["content"] == LIMIT_NOTE


def test_a_copied_tool_error_is_not_spoken():
    assert unspeakable("Error: Access denied - path outside allowed directories.", [])


@pytest.mark.parametrize(
    ("request_", "duration", "left"),
    [
        ("Give the pasta timer two more minutes.", "-2 minutes", "10 minutes"),  # "more" adds
        ("Give the pasta timer two more minutes.", "2 minutes", "10 minutes"),
        ("Take two minutes off the pasta timer.", "2 minutes", "6 minutes"),  # "off" takes off
        ("Change the pasta timer by minus two minutes.", "-2 minutes", "6 minutes"),
    ],
)
async def test_a_change_runs_the_way_the_words_say(request_, duration, left):
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    args = {"duration": duration, "which": "pasta"}
    result = await registry.call("adjust_timer", args, request=request_)
    assert result.ok and not result.refusal and left in result.result, result.result


@pytest.mark.parametrize(
    ("request_", "when", "said"),
    [
        ("Remind me to water the plants at 6 pm.", "in 6 hours", "at 6 pm"),
        ("Remind me to water the plants at 6 pm.", "18:00", "at 6 pm"),  # right already
        ("Remind me to call mom tomorrow at 9.", "at 9", "tomorrow at 9"),  # not tonight's 9
        ("Remind me to call mom in 2 hours.", "at 2", "in 2 hours"),
    ],
)
async def test_a_reminder_is_set_for_the_moment_the_words_name(request_, when, said):
    result = await builtin_registry().call("set_reminder", {"when": when, "message": "x"}, request=request_)
    # the same reminder as one set with the user's own words (on a registry of its own)
    right = await builtin_registry().call("set_reminder", {"when": said, "message": "x"}, request=request_)
    assert result.ok and right.ok and result.result == right.result, (result.result, right.result)


@pytest.mark.parametrize(
    ("request_", "when"),
    [
        ("Book a table for two tonight.", "8 pm"),  # no reminder asked for: refused, not mended
        ("Remind me at 5 pm to call in 2 hours.", "in 6 hours"),  # two moments: which is asked
        ("Remind me to call mom.", "in 1 hour"),
    ],
)
async def test_a_reminder_time_nobody_said_is_not_mended_into_one(request_, when):
    result = await builtin_registry().call("set_reminder", {"when": when, "message": "x"}, request=request_)
    assert not result.ok and (result.refusal or NOT_WANTED in result.result)


@pytest.mark.parametrize(
    ("request_", "name", "args"),
    [
        ("Set a timer for a little while.", "set_timer", {"duration": "a little while"}),
        ("Remind me to stretch in a bit.", "set_reminder", {"when": "in a bit", "message": "stretch"}),
    ],
)
async def test_a_time_the_tool_cannot_read_in_a_request_about_time_is_the_tools_to_explain(
    request_, name, args
):
    result = await builtin_registry().call(name, args, request=request_)
    assert not result.ok and not result.refusal and not result.result.startswith("Error: not")


async def test_a_request_to_set_timers_cancels_none():
    # "Set a pasta timer … and a tea timer …": the 1.5B model set both, listed them and
    # cancelled the pasta timer in the same round. The cancel is not run (nothing said of it);
    # the model reads why and the turn goes on with what was set.
    registry = builtin_registry()
    request_ = "Set a pasta timer for 8 minutes and a tea timer for 3 minutes."
    calls = [
        ("set_timer", {"duration": "8 minutes", "label": "pasta"}),
        ("set_timer", {"duration": "3 minutes", "label": "tea"}),
        ("cancel_timer", {"which": "pasta"}),
    ]
    backend = ScriptedBackend(calls, "Pasta and tea timers set.")
    trace = await ask(chat_assistant(backend, registry), request_)
    assert trace.reply == "Pasta and tea timers set." and "refused" not in trace.extra
    assert [c["ok"] for c in trace.tool_calls] == [True, True, False]
    assert OTHER_CHANGE in backend.requests[1]["messages"][-1]["content"]
    left = (await registry.call("list_timers", {})).result
    assert "pasta" in left and "tea" in left


@pytest.mark.parametrize(
    "request_",
    ["Start a tea timer and stop the pasta one.", "Cancel the pasta timer.", "Set it aside, cancel pasta."],
)
async def test_a_cancel_the_words_ask_for_runs(request_):
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    result = await registry.call("cancel_timer", {"which": "pasta"}, request=request_)
    assert result.ok and "pasta" in result.result.lower(), result.result


async def test_a_call_of_another_action_is_sent_back_and_recorded_in_the_trace():
    registry = builtin_registry()
    assert (await registry.call("set_timer", {"duration": "8 minutes", "label": "pasta"})).ok
    backend = ScriptedBackend([("cancel_timer", {"which": "pasta"})], [("pause_timer", {"which": "pasta"})])
    trace = await ask(chat_assistant(backend, registry), "Hold the pasta timer, the phone is ringing.")
    assert [(c["name"], c["ok"]) for c in trace.tool_calls] == [
        ("cancel_timer", False),
        ("pause_timer", True),
    ]
    assert OTHER_CHANGE in backend.requests[1]["messages"][-1]["content"]  # the model read why
    decisions = trace.to_dict()["policy"]
    assert {"rule": "grounding", "action": "not run", "text": "cancel_timer({'which': 'pasta'})"} in decisions
    assert "paused" in (await registry.call("list_timers", {})).result.lower()
