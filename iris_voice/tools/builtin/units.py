"""Unit conversions people ask for every day: "how many ounces in a pound", "20 celsius in fahrenheit".

A small model gets these wrong as often as arithmetic (its "In Fahrenheit" answers were
a guess), and they need no model at all: the fast path matches the sentence, this tool
does the sum from one table. Lengths, masses, volumes (US kitchen measures), temperatures,
speeds and spans of time; a unit it does not know, or two that measure different things,
is a clear error. The tool is shown to the model only on the turns retrieval picks it for
(``on_demand``), so the prompt of every other turn stays as it was.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated

from pydantic import Field

from iris_voice.errors import ToolError
from iris_voice.tools.builtin.context import ToolContext
from iris_voice.tools.intents import Action, Slots
from iris_voice.tools.registry import Tool, tool_from_function
from iris_voice.tools.spoken import number

# unit → (what it measures, its size in the measure's base unit, singular, plural)
_UNITS: dict[str, tuple[str, float, str, str]] = {
    "mm": ("length", 0.001, "millimeter", "millimeters"),
    "cm": ("length", 0.01, "centimeter", "centimeters"),
    "m": ("length", 1.0, "meter", "meters"),
    "km": ("length", 1000.0, "kilometer", "kilometers"),
    "in": ("length", 0.0254, "inch", "inches"),
    "ft": ("length", 0.3048, "foot", "feet"),
    "yd": ("length", 0.9144, "yard", "yards"),
    "mi": ("length", 1609.344, "mile", "miles"),
    "g": ("mass", 0.001, "gram", "grams"),
    "kg": ("mass", 1.0, "kilogram", "kilograms"),
    "oz": ("mass", 0.028349523125, "ounce", "ounces"),
    "lb": ("mass", 0.45359237, "pound", "pounds"),
    "st": ("mass", 6.35029318, "stone", "stone"),
    "ml": ("volume", 0.001, "milliliter", "milliliters"),
    "l": ("volume", 1.0, "liter", "liters"),
    "tsp": ("volume", 0.00492892159375, "teaspoon", "teaspoons"),
    "tbsp": ("volume", 0.01478676478125, "tablespoon", "tablespoons"),
    "floz": ("volume", 0.0295735295625, "fluid ounce", "fluid ounces"),
    "cup": ("volume", 0.2365882365, "cup", "cups"),
    "pt": ("volume", 0.473176473, "pint", "pints"),
    "qt": ("volume", 0.946352946, "quart", "quarts"),
    "gal": ("volume", 3.785411784, "gallon", "gallons"),
    "s": ("time", 1.0, "second", "seconds"),
    "min": ("time", 60.0, "minute", "minutes"),
    "h": ("time", 3600.0, "hour", "hours"),
    "d": ("time", 86400.0, "day", "days"),
    "wk": ("time", 604800.0, "week", "weeks"),
    "kmh": ("speed", 1 / 3.6, "kilometer per hour", "kilometers per hour"),
    "mph": ("speed", 0.44704, "mile per hour", "miles per hour"),
    "mps": ("speed", 1.0, "meter per second", "meters per second"),
    "kn": ("speed", 0.514444, "knot", "knots"),
    "c": ("temperature", 0.0, "degree Celsius", "degrees Celsius"),
    "f": ("temperature", 0.0, "degree Fahrenheit", "degrees Fahrenheit"),
    "k": ("temperature", 0.0, "kelvin", "kelvins"),
}
_ALIASES = {
    "mm": "millimetre millimetres",
    "cm": "centimetre centimetres",
    "m": "metre metres",
    "km": "kilometre kilometres",
    "g": "gramme grammes",
    "c": "celsius centigrade °c",
    "f": "fahrenheit °f",
    "k": "kelvin kelvins",
    "in": "inch inches",
    "ft": "foot feet",
    "mi": "mile miles",
    "oz": "ounce ounces",
    "lb": "pound pounds lbs",
    "kg": "kilo kilos",
    "st": "stone stones",
    "l": "liter liters litre litres",
    "ml": "milliliter milliliters millilitre millilitres",
    "tsp": "teaspoon teaspoons",
    "tbsp": "tablespoon tablespoons",
    "floz": "fluid ounce|fluid ounces|fl oz",
    "gal": "gallon gallons",
    "pt": "pint pints",
    "qt": "quart quarts",
    "cup": "cup cups",
    "kmh": "kilometer per hour|kilometers per hour|kilometre per hour|kilometres per hour|km/h|kph",
    "mph": "mile per hour|miles per hour",
    "mps": "meter per second|meters per second|metre per second|metres per second|m/s",
    "kn": "knot knots",
    "min": "minute minutes mins",
    "h": "hour hours hr hrs",
    "d": "day days",
    "wk": "week weeks",
    "s": "second seconds sec secs",
}


def _names() -> dict[str, str]:
    """Every way a unit is written or said → its key."""
    out = {key: key for key in _UNITS}
    for key, (_kind, _size, one, many) in _UNITS.items():
        out[one.lower()] = out[many.lower()] = key
    for key, said in _ALIASES.items():
        for name in said.split("|") if "|" in said else said.split():
            out[name.lower()] = key
    return out


NAMES = _names()
_DEGREES = re.compile(r"^(?:degrees?|deg)\s+", re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)


def unit_key(said: str) -> str | None:
    """The unit ``said`` names ("Degrees Fahrenheit", "feet", "km"), or None."""
    text = _ARTICLE.sub("", " ".join(said.lower().strip(" .?!,").split()))
    return NAMES.get(_DEGREES.sub("", text)) or NAMES.get(text)


def _kelvin(value: float, key: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[key]


def _from_kelvin(value: float, key: str) -> float:
    return {"c": value - 273.15, "f": (value - 273.15) * 9 / 5 + 32, "k": value}[key]


def _shown(value: float) -> str:
    """A spoken amount: whole numbers as such ("16"), else to a sensible precision
    ("160.9", "8.05", "0.0338")."""
    size = abs(value)
    if abs(value - round(value)) < 1e-6 * max(1.0, size):
        return f"{round(value):,}"
    if size < 1:
        text = f"{value:.3g}"
        return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text
    places = 0 if size >= 1000 else 1 if size >= 100 else 2
    exact = Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)  # 273.15 → 273.2
    text = f"{exact:,f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _named(value: float, key: str) -> str:
    one, many = _UNITS[key][2], _UNITS[key][3]
    return f"{_shown(value)} {one if abs(value) == 1 else many}"


def convert_units(
    value: Annotated[float, Field(description="The amount to convert, e.g. 5")],
    from_unit: Annotated[str, Field(description='The unit it is in, e.g. "miles", "celsius", "cups"')],
    to_unit: Annotated[str, Field(description='The unit wanted, e.g. "kilometers", "fahrenheit"')],
) -> str:
    """Convert an amount between units of length, weight, volume, temperature, speed or time."""
    src, dst = unit_key(from_unit), unit_key(to_unit)
    if src is None or dst is None:
        said = from_unit if src is None else to_unit
        raise ToolError(
            f"unknown unit {said!r}: use a unit of length, weight, volume, temperature, speed or time"
        )
    kind, other = _UNITS[src][0], _UNITS[dst][0]
    if kind != other:
        raise ToolError(f"cannot convert {_UNITS[src][3]} ({kind}) to {_UNITS[dst][3]} ({other})")
    if kind == "temperature":
        result = _from_kelvin(_kelvin(value, src), dst)
    else:
        result = value * _UNITS[src][1] / _UNITS[dst][1]
    return f"{_named(value, src)} is {_named(result, dst)}."


_ONE = re.compile(r"^(?:a|an|one)\s+", re.IGNORECASE)


def amount_said(text: str) -> tuple[float, str] | None:
    """The number and the unit of "five miles", "a pound", "20 degrees celsius", or None."""
    words = " ".join(text.strip(" .?!,").split())
    if _ONE.match(words):
        key = unit_key(_ONE.sub("", words))
        return (1.0, key) if key else None
    parts = words.split(" ")
    for cut in range(1, len(parts)):  # "twenty five | miles", "twenty | five miles"…: the one that reads
        said, key = number(" ".join(parts[:cut])), unit_key(" ".join(parts[cut:]))
        if said is not None and key is not None:
            return float(said), key
    return None


def _convert(intent: str, slots: Slots) -> Action | None:
    """IrisConvert: "how many ounces in a pound", "what is 20 celsius in fahrenheit"."""
    found = amount_said(str(slots.get("amount", "")))
    dst = unit_key(str(slots.get("to_unit", "")))
    if found is None or dst is None:
        return None
    value, src = found
    if src == dst or _UNITS[src][0] != _UNITS[dst][0]:
        return None
    args = {"value": value, "from_unit": _UNITS[src][3], "to_unit": _UNITS[dst][3]}
    return Action(intent, "convert_units", args)


WORDS = (
    r"convert|conversion|celsius|fahrenheit|kelvin|inch(?:es)?|feet|foot|yards?|miles?|kilomet(?:er|re)s?"
    r"|centimet(?:er|re)s?|ounces?|pounds?|grams?|kilograms?|kilos?|liters?|litres?|gallons?|pints?"
    r"|quarts?|cups?|teaspoons?|tablespoons?|mph|knots?",
)
"""Words that suggest a conversion (boost's "may need a tool" check)."""
ASKS = r"convert\w*|conversion|how many \w+(?: \w+)? (?:are |is )?(?:there )?in"
"""Words that make a request ask for one: only then does retrieval show the tool ("I like
temperatures in Celsius", "make me a cup of coffee" and "how many minutes do I boil an egg"
name units and ask for none)."""

ORDER = 25
"""Place in the prompt, when shown: after the calculator, before the clock."""


def provide(ctx: ToolContext) -> list[Tool]:
    """The unit converter (shown on demand; the fast path answers the everyday sentences)."""
    return [
        tool_from_function(
            convert_units,
            direct_return=True,
            words=WORDS,
            asks=ASKS,
            intents={"IrisConvert": _convert},
            read_only=True,
            on_demand=True,
        )
    ]
