"""Unit conversions: the tool's sums, its errors, and the everyday sentences the fast path
answers with it (and those it leaves alone)."""

from __future__ import annotations

import pytest

from iris_voice.config import RetrievalConfig
from iris_voice.conversation.fastpath import IntentMatcher
from iris_voice.conversation.toolpick import ToolPicker
from iris_voice.errors import ToolError
from iris_voice.tools.builtin.units import amount_said, convert_units
from tests.support.fakes import builtin_registry


@pytest.mark.parametrize(
    ("value", "src", "dst", "said"),
    [
        (1, "pound", "ounces", "1 pound is 16 ounces."),
        (20, "celsius", "fahrenheit", "20 degrees Celsius is 68 degrees Fahrenheit."),
        (350, "degrees Fahrenheit", "celsius", "350 degrees Fahrenheit is 176.7 degrees Celsius."),
        (-40, "F", "C", "-40 degrees Fahrenheit is -40 degrees Celsius."),
        (0, "celsius", "kelvin", "0 degrees Celsius is 273.2 kelvins."),
        (5, "miles", "km", "5 miles is 8.05 kilometers."),
        (1, "mile", "feet", "1 mile is 5,280 feet."),
        (1, "cup", "ml", "1 cup is 236.6 milliliters."),
        (1, "gallon", "cups", "1 gallon is 16 cups."),
        (1, "tablespoon", "teaspoons", "1 tablespoon is 3 teaspoons."),
        (1, "teaspoon", "cups", "1 teaspoon is 0.0208 cups."),
        (100, "km/h", "mph", "100 kilometers per hour is 62.14 miles per hour."),
        (1, "day", "seconds", "1 day is 86,400 seconds."),
        (2.5, "kilos", "pounds", "2.5 kilograms is 5.51 pounds."),
    ],
)
def test_conversions(value, src, dst, said):
    assert convert_units(value, src, dst) == said


def test_a_unit_unknown_or_of_another_kind_is_a_clear_error():
    with pytest.raises(ToolError, match="unknown unit 'furlongs'"):
        convert_units(1, "furlongs", "meters")
    with pytest.raises(ToolError, match=r"cannot convert kilograms \(mass\) to miles \(length\)"):
        convert_units(1, "kg", "miles")


def test_an_amount_is_one_number_and_one_unit():
    assert amount_said("twenty five miles") == (25.0, "mi")
    assert amount_said("a pound") == (1.0, "lb")
    assert amount_said("20 degrees Celsius") == (20.0, "c")
    assert amount_said("1.5 liters") == (1.5, "l")
    assert amount_said("the time") is None
    assert amount_said("an hour and a half") is None  # a duration, not one number and a unit
    assert amount_said("five") is None


@pytest.fixture(scope="module")
def matcher() -> IntentMatcher:
    return IntentMatcher(builtin_registry().intents())


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ("How many ounces in a pound?", {"value": 1.0, "from_unit": "pounds", "to_unit": "ounces"}),
        ("What is 20 degrees Celsius in Fahrenheit?",
         {"value": 20.0, "from_unit": "degrees Celsius", "to_unit": "degrees Fahrenheit"}),
        ("Convert five miles to kilometers.", {"value": 5.0, "from_unit": "miles", "to_unit": "kilometers"}),
        ("how many seconds are there in a day", {"value": 1.0, "from_unit": "days", "to_unit": "seconds"}),
        ("what's 2 hours in minutes", {"value": 2.0, "from_unit": "hours", "to_unit": "minutes"}),
        ("how many grams are in an ounce", {"value": 1.0, "from_unit": "ounces", "to_unit": "grams"}),
    ],
)  # fmt: skip
def test_everyday_conversions_take_the_fast_path(matcher, text, arguments):
    found = matcher.match(text)
    assert found is not None and found.action.tool == "convert_units", text
    assert found.action.arguments == arguments


@pytest.mark.parametrize(
    "text",
    [
        "What time is it in Tokyo?",  # the clock's
        "remind me in 5 minutes to call mom",  # a reminder's
        "How many minutes are left on the pasta timer?",  # a timer's question
        "how many people live in tokyo",  # no unit at all
        "how many miles in a mile",  # nothing to convert
        "what is five kilograms in miles",  # two kinds of measure: the model may explain
        "And in Kelvin?",  # a follow-up with no amount: the model has the conversation
    ],
)
def test_sentences_that_are_no_conversion_are_left_alone(matcher, text):
    found = matcher.match(text)
    assert found is None or found.action.tool != "convert_units", (text, found)


def test_the_converter_is_shown_only_on_the_turns_that_need_it():
    picker = ToolPicker(builtin_registry(), RetrievalConfig())
    assert "convert_units" not in [t.name for t in picker.listed()]  # the cached prompt is as it was
    assert [t.name for t in picker.pick("How many tablespoons are in a quarter cup?", [])] == [
        "convert_units"
    ]


@pytest.mark.parametrize(
    "text",
    ["Pour me a cup of tea.", "How many minutes should I steam broccoli?", "I like my weather in Celsius."],
)
def test_a_unit_named_without_a_conversion_asked_does_not_show_the_converter(text):
    picker = ToolPicker(builtin_registry(), RetrievalConfig())
    assert "convert_units" not in [t.name for t in picker.pick(text, [])]
