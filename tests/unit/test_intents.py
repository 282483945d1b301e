"""The intent matcher: each intent in several phrasings, numbers as words and digits, near misses."""

from __future__ import annotations

import pytest

from iris_voice.conversation.fastpath import IntentMatcher
from iris_voice.conversation.fastpath.templates import home_assistant_templates, iris_templates
from iris_voice.tools.intents import REFERRED
from iris_voice.tools.spoken import number, seconds
from tests.support.fakes import builtin_registry

HA_INTENTS = {
    "HassGetCurrentTime", "HassGetCurrentDate", "HassStartTimer", "HassCancelTimer",
    "HassCancelAllTimers", "HassIncreaseTimer", "HassDecreaseTimer", "HassPauseTimer",
    "HassUnpauseTimer", "HassTimerStatus",
}  # fmt: skip
"""The Home Assistant intents IRIS's built-in tools declare."""


@pytest.fixture(scope="module")
def matcher() -> IntentMatcher:
    return IntentMatcher(builtin_registry().intents())


def test_the_tools_declare_every_intent_of_the_templates() -> None:
    declared = set(builtin_registry().intents())
    follow_ups = {
        f"Iris{v}It" for v in ("Cancel", "Pause", "Resume", "TimeLeft", "Adjust", "Trim", "SetLength")
    }
    own = {"IrisGetTimeIn", "IrisGetDateTomorrow", "IrisCalculate", "IrisSetReminder", "IrisConvert"}
    own |= {"IrisHolidayDate"}
    assert declared == HA_INTENTS | own | follow_ups
    assert set(iris_templates("en")["intents"]) <= declared  # no template without a tool


def test_a_disabled_tool_takes_its_sentences_along() -> None:
    tools = builtin_registry().filtered(disabled=["calculator"])
    m = IntentMatcher(tools.intents())
    assert m.match("what is twenty three times forty seven") is None
    assert m.match("set a pasta timer for eight minutes") is not None


def reading(matcher: IntentMatcher, text: str) -> tuple[str, str, dict] | None:
    m = matcher.match(text)
    return None if m is None else (m.action.intent, m.action.tool, m.action.arguments)


T, D = "HassGetCurrentTime", "HassGetCurrentDate"
CASES = [
    # time here
    ("what time is it", (T, "get_current_time", {})),
    ("What time is it right now?", (T, "get_current_time", {})),
    ("what's the time", (T, "get_current_time", {})),
    ("Tell me the time, please.", (T, "get_current_time", {})),
    ("do you know what time it is", (T, "get_current_time", {})),
    # time in a place (IRIS's templates)
    ("what time is it in Tokyo", ("IrisGetTimeIn", "get_current_time", {"timezone": "Tokyo"})),
    (
        "What's the time in New York right now?",
        ("IrisGetTimeIn", "get_current_time", {"timezone": "New York"}),
    ),
    (
        "what time is it in Paris, France?",
        ("IrisGetTimeIn", "get_current_time", {"timezone": "Paris, France"}),
    ),
    ("current time in the UK", ("IrisGetTimeIn", "get_current_time", {"timezone": "the UK"})),
    ("Current time in Paris please", ("IrisGetTimeIn", "get_current_time", {"timezone": "Paris"})),
    # date
    ("what's the date", (D, "get_current_time", {})),
    ("what is today's date", (D, "get_current_time", {})),
    ("What day is it today?", (D, "get_current_time", {})),
    ("Which day of the week is it?", (D, "get_current_time", {})),
    ("What year is it?", (D, "get_current_time", {})),
    ("what month is it now", (D, "get_current_time", {})),
    ("What day is it tomorrow?", ("IrisGetDateTomorrow", "get_current_time", {})),
    ("what's tomorrow's date", ("IrisGetDateTomorrow", "get_current_time", {})),
    ("What day of the week is tomorrow?", ("IrisGetDateTomorrow", "get_current_time", {})),
    # start a timer: Home Assistant's templates and IRIS's
    ("set a timer for 8 minutes", ("HassStartTimer", "set_timer", {"duration": "480 seconds"})),
    ("set a timer for eight minutes", ("HassStartTimer", "set_timer", {"duration": "480 seconds"})),
    (
        "start a timer for one hour and thirty minutes",
        ("HassStartTimer", "set_timer", {"duration": "5400 seconds"}),
    ),
    ("set a timer for an hour and a half", ("HassStartTimer", "set_timer", {"duration": "5400 seconds"})),
    ("timer for 90 seconds", ("HassStartTimer", "set_timer", {"duration": "90 seconds"})),
    (
        "set a pasta timer for eight minutes",
        ("HassStartTimer", "set_timer", {"duration": "480 seconds", "label": "pasta"}),
    ),
    (
        "Start a 5 minute timer for the eggs.",
        ("HassStartTimer", "set_timer", {"duration": "300 seconds", "label": "eggs"}),
    ),
    (
        "set a timer for twenty five minutes called green tea",
        ("HassStartTimer", "set_timer", {"duration": "1500 seconds", "label": "green tea"}),
    ),
    # cancel
    ("cancel the pasta timer", ("HassCancelTimer", "cancel_timer", {"which": "pasta"})),
    ("stop my timer", ("HassCancelTimer", "cancel_timer", {"which": ""})),
    ("cancel the 10 minute timer", ("HassCancelTimer", "cancel_timer", {"which": "600 seconds"})),
    ("cancel all timers", ("HassCancelAllTimers", "cancel_timer", {"which": "all timers"})),
    ("stop all of my timers", ("HassCancelAllTimers", "cancel_timer", {"which": "all timers"})),
    ("Cancel all the timers, please.", ("HassCancelAllTimers", "cancel_timer", {"which": "all timers"})),
    # add and remove time
    (
        "add 2 minutes to the pasta timer",
        ("HassIncreaseTimer", "adjust_timer", {"duration": "120 seconds", "which": "pasta"}),
    ),
    (
        "add two minutes to the pasta timer",
        ("HassIncreaseTimer", "adjust_timer", {"duration": "120 seconds", "which": "pasta"}),
    ),
    (
        "increase the timer by thirty seconds",
        ("HassIncreaseTimer", "adjust_timer", {"duration": "30 seconds"}),
    ),
    ("take 1 minute off the timer", ("HassDecreaseTimer", "adjust_timer", {"duration": "-60 seconds"})),
    (
        "remove five minutes from the roast timer",
        ("HassDecreaseTimer", "adjust_timer", {"duration": "-300 seconds", "which": "roast"}),
    ),
    ("decrease my timer by 10 seconds", ("HassDecreaseTimer", "adjust_timer", {"duration": "-10 seconds"})),
    # pause and resume
    ("pause the timer", ("HassPauseTimer", "pause_timer", {})),
    ("pause the pasta timer", ("HassPauseTimer", "pause_timer", {"which": "pasta"})),
    ("Pause my five minute timer.", ("HassPauseTimer", "pause_timer", {"which": "300 seconds"})),
    ("resume the timer", ("HassUnpauseTimer", "resume_timer", {})),
    ("continue the pasta timer", ("HassUnpauseTimer", "resume_timer", {"which": "pasta"})),
    ("resume my timer please", ("HassUnpauseTimer", "resume_timer", {})),
    ("unpause the pasta timer", ("HassUnpauseTimer", "resume_timer", {"which": "pasta"})),
    ("unpause my timer", ("HassUnpauseTimer", "resume_timer", {})),
    # a timer named without the word ("the bread one"), or by its place ("the first one")
    ("Pause the bread one.", ("HassPauseTimer", "pause_timer", {"which": "bread"})),
    ("Stop the first one.", ("HassCancelTimer", "cancel_timer", {"which": "first"})),
    ("start the bread one again", ("HassUnpauseTimer", "resume_timer", {"which": "bread"})),
    (
        "Take three minutes off the first one.",
        ("HassDecreaseTimer", "adjust_timer", {"duration": "-180 seconds", "which": "first"}),
    ),
    ("how long is left on the rice one", ("HassTimerStatus", "list_timers", {"which": "rice"})),
    (
        "Take five minutes off that one.",
        ("HassDecreaseTimer", "adjust_timer", {"duration": "-300 seconds", "which": REFERRED}),
    ),
    ("pause that timer", ("HassPauseTimer", "pause_timer", {"which": REFERRED})),
    ("How much time is on the bread one?", ("HassTimerStatus", "list_timers", {"which": "bread"})),
    ("how long is left on the other one", ("HassTimerStatus", "list_timers", {})),
    (
        "And another one for twenty-five minutes for the roast.",
        ("HassStartTimer", "set_timer", {"duration": "1500 seconds", "label": "roast"}),
    ),
    # status
    ("how long is left on the pasta timer", ("HassTimerStatus", "list_timers", {"which": "pasta"})),
    ("how much time is left on my timer", ("HassTimerStatus", "list_timers", {})),
    ("timer status", ("HassTimerStatus", "list_timers", {})),
    ("status of my timers", ("HassTimerStatus", "list_timers", {})),
    ("Which timers are running?", ("HassTimerStatus", "list_timers", {})),
    ("How many timers do I have?", ("HassTimerStatus", "list_timers", {})),
    # arithmetic, digits and words
    ("what is 23 times 47", ("IrisCalculate", "calculator", {"expression": "23 * 47"})),
    ("what is twenty three times forty seven", ("IrisCalculate", "calculator", {"expression": "23 * 47"})),
    ("What's 3.5 times 4?", ("IrisCalculate", "calculator", {"expression": "3.5 * 4"})),
    ("square root of 144", ("IrisCalculate", "calculator", {"expression": "sqrt(144)"})),
    (
        "what's the square root of one hundred forty four",
        ("IrisCalculate", "calculator", {"expression": "sqrt(144)"}),
    ),
    ("15 percent of 80", ("IrisCalculate", "calculator", {"expression": "15% of 80"})),
    ("what is 15% of 80?", ("IrisCalculate", "calculator", {"expression": "15% of 80"})),
    ("how much is fifteen percent of eighty", ("IrisCalculate", "calculator", {"expression": "15% of 80"})),
    ("what's 1,250 divided by 5", ("IrisCalculate", "calculator", {"expression": "1250 / 5"})),
    ("calculate 17 minus 58", ("IrisCalculate", "calculator", {"expression": "17 - 58"})),
    ("what is two to the power of ten", ("IrisCalculate", "calculator", {"expression": "2 ** 10"})),
    ("what is a hundred plus one", ("IrisCalculate", "calculator", {"expression": "100 + 1"})),
    ("twelve squared", ("IrisCalculate", "calculator", {"expression": "12 ** 2"})),
    # reminders
    (
        "remind me to call mom in 2 hours",
        ("IrisSetReminder", "set_reminder", {"when": "in 2 hours", "message": "call mom"}),
    ),
    (
        "Remind me to call mom in two hours.",
        ("IrisSetReminder", "set_reminder", {"when": "in 2 hours", "message": "call mom"}),
    ),
    (
        "remind me at 7 pm to take out the trash",
        ("IrisSetReminder", "set_reminder", {"when": "at 7 pm", "message": "take out the trash"}),
    ),
    (
        "remind me to put the cake in the oven in ten minutes",
        ("IrisSetReminder", "set_reminder", {"when": "in 10 minutes", "message": "put the cake in the oven"}),
    ),
    (
        "remind me to stretch tomorrow at 9",
        ("IrisSetReminder", "set_reminder", {"when": "tomorrow at 9", "message": "stretch"}),
    ),
    (
        "in an hour and a half remind me to check the laundry",
        (
            "IrisSetReminder",
            "set_reminder",
            {"when": "in an hour and a half", "message": "check the laundry"},
        ),
    ),
]

NEAR_MISSES = [
    "what time did the movie start",
    "set the table",
    "how long is the Nile",
    "what's the time complexity of quicksort",
    "remind me what we talked about",
    "what time is it in the movie",  # not a place
    "what time is it in Narnia",
    "what time zone is Tokyo in",
    "what is the meaning of life",
    "set a timer",  # how long? the model asks
    "remind me to call mom",  # when?
    "remind me about the meeting",
    "pause the music",
    "cancel the one",  # names no timer
    "stop the ten minute one",  # a duration the name slot cannot hold: the model reads it
    "cancel my subscription",
    "what is 2 times 3 times 4",  # two readings
    "what is four times the speed of sound",
    "how much time do I need to boil an egg",
    "what's the date of the next full moon",
    "what month is Thanksgiving in",  # a date to know, not today's
    "what is the day after tomorrow",
    "what day is it tomorrow in Tokyo",  # tomorrow's date is here only
    "set a timer for a while",
    "add milk to the shopping list",
    "add 2 minutes to the pasta",  # not said to be a timer
    "turn off the lights in 5 minutes",  # a Home Assistant delayed command, not ours
    "set the kitchen timer for 5 minutes and 3 seconds and then some",
    "what's the weather in Tokyo",
    "tell me a joke about timers",
    "time flies",
    "what is the square root of a banana",
    "remind me in a bit to call mom",
    "remind me to call mom at work",  # "work" is not a time
    "remind me to tell you the time in Tokyo in 5 minutes and what's 2 times 3",
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_everyday_commands_are_understood(matcher: IntentMatcher, text: str, expected: tuple) -> None:
    assert reading(matcher, text) == expected


def test_every_intent_has_at_least_three_phrasings() -> None:
    counts: dict[str, int] = {}
    for _, (intent, _tool, _args) in CASES:
        counts[intent] = counts.get(intent, 0) + 1
    expected = set(HA_INTENTS) | {"IrisGetTimeIn", "IrisGetDateTomorrow", "IrisCalculate", "IrisSetReminder"}
    assert set(counts) == expected
    assert min(counts.values()) >= 3, counts


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_go_to_the_model(matcher: IntentMatcher, text: str) -> None:
    assert matcher.match(text) is None, reading(matcher, text)


def test_home_assistant_templates_come_from_the_package() -> None:
    ha = home_assistant_templates(HA_INTENTS | {"HassTurnOn"}, "en")
    assert set(ha["intents"]) == HA_INTENTS  # HassTurnOn needs devices: nothing of it is usable
    sentences = [s for d in ha["intents"]["HassTimerStatus"]["data"] for s in d["sentences"]]
    assert "timer[s] status" in sentences
    # the parts about Home Assistant's areas and delayed commands are left out
    every = [s for i in ha["intents"].values() for d in i["data"] for s in d["sentences"]]
    assert not any("{area}" in s or "timer_command" in s for s in every)
    assert "please" in ha["skip_words"]
    own = iris_templates("en")
    assert set(own["intents"]) >= {"IrisGetTimeIn", "IrisCalculate", "IrisSetReminder"}
    assert not set(own["intents"]["HassStartTimer"]["data"][0]) - {"sentences"}


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("twenty three", "23"),
        ("23", "23"),
        ("three point five", "3.5"),
        ("1,250", "1250"),
        ("one thousand two hundred fifty", "1250"),
        ("a hundred", "100"),
        ("minus five", "-5"),
        ("zero", "0"),
        ("twenty three apples", None),
        ("the speed of sound", None),
        ("3 times 4", None),
        ("", None),
    ],
)
def test_spoken_numbers(said: str, value: str | None) -> None:
    assert number(said) == value


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("eight minutes", 480),
        ("an hour and a half", 5400),
        ("one hundred twenty minutes", 7200),
        ("twenty five seconds", 25),
        ("half an hour", 1800),
        ("a while", None),
        ("8 days", None),
    ],
)
def test_spoken_durations(said: str, value: float | None) -> None:
    assert seconds(said) == value


def test_long_transcripts_are_not_matched(matcher: IntentMatcher) -> None:
    assert matcher.match("what time is it " + "really " * 40) is None
    assert matcher.match("") is None


@pytest.mark.parametrize(
    ("today", "tomorrow"),
    [
        ("Thursday, December 3, 2026", "Tomorrow is Friday, December 4, 2026."),
        ("Thursday, December 31, 2026", "Tomorrow is Friday, January 1, 2027."),
        ("Sunday, February 28, 2027", "Tomorrow is Monday, March 1, 2027."),
    ],
)
def test_tomorrow_is_said_from_the_clocks_date(matcher: IntentMatcher, today: str, tomorrow: str) -> None:
    action = matcher.match("What day is it tomorrow?").action
    assert action.reply_for(f"It is 9:05 PM on {today} in Berlin (Europe/Berlin, UTC+01:00).") == tomorrow
    assert action.key != matcher.match("What day is it today?").action.key
