"""The calculator tool: arithmetic a small model gets wrong, evaluated safely.

Expressions are parsed with :mod:`ast` and walked over a whitelist (never ``eval``).
Every operation that could run away — a huge power, a big factorial — is checked
*before* it is computed and every intermediate value is kept within 10^100, so any
input is answered or refused with a ``ToolError`` within milliseconds.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated

from iris_voice.errors import ToolError
from iris_voice.tools.builtin.context import ToolContext
from iris_voice.tools.intents import Action, Slots
from iris_voice.tools.registry import Tool, tool_from_function
from iris_voice.tools.spoken import NUMBER_WORDS, number

Number = int | float

MAX_LENGTH = 200
MAX_NODES = 400
MAX_DEPTH = 100
LIMIT = 1e100  # a float bound: 10**100 itself still passes, the float 1e100 too
ALLOWED = (
    "numbers, + - * / // % ^ ( ), 'N% of M', sqrt sin cos tan log ln exp abs round floor ceil "
    "factorial, pi and e"
)

# What people and models type instead of Python operators. "x" only counts between
# numbers so that names like "exp" survive.
_SYMBOLS = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-", "^": "**"})
_TIMES_X = re.compile(r"(?<=[\d.)])\s*[xX]\s*(?=[\d.(])")
_PERCENT_WORD = re.compile(r"\s*\bper\s?cent\b", re.IGNORECASE)
# "15% of 80" and a trailing "50%" are percentages; "10 % 3" (an operand follows) is modulo.
_PERCENT_OF = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?|\.\d+)\s*%\s*of\b", re.IGNORECASE)
_PERCENT_END = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?|\.\d+)\s*%(?!\s*[\w.(])")
_PERCENT_SHOWN = re.compile(r"_percent\(([^()]*)\)")
# A character filter in front of the AST whitelist: quotes, brackets, colons and
# backslashes never reach the parser, so strings, lambdas and indexing die early.
_CHARS = re.compile(r"[0-9A-Za-z_\s+\-*/%().,π]*")

_CONSTANTS: dict[str, float] = {"pi": math.pi, "π": math.pi, "e": math.e}
# Friendlier names for nodes that get past the character filter but not the whitelist.
_UNSUPPORTED = {
    ast.Attribute: "Attribute access", ast.Compare: "A comparison", ast.BoolOp: "and/or",
    ast.Tuple: "A comma outside a function call (write 1000, not 1,000)",
}  # fmt: skip


def _too_large() -> ToolError:
    return ToolError("The result is too large (over 10^100). Try smaller numbers.")


def _bounded(value: object) -> Number:
    """Return ``value`` if it is a real number within ±10^100, else refuse."""
    if isinstance(value, complex):
        raise ToolError("The result is not a real number (math domain error).")
    if isinstance(value, float) and math.isnan(value):
        raise ToolError("The result is undefined (math domain error).")
    if abs(value) > LIMIT:
        raise _too_large()
    return value


def _divide(op: Callable[[Number, Number], Number]) -> Callable[[Number, Number], Number]:
    def checked(a: Number, b: Number) -> Number:
        if b == 0:
            raise ToolError("Division by zero is undefined.")
        return op(a, b)

    return checked


def _power(base: Number, exp: Number) -> Number:
    if base == 0:
        if exp < 0:
            raise ToolError("Division by zero is undefined (0 to a negative power).")
        return base**exp
    if base < 0 and not float(exp).is_integer():
        raise ToolError("A negative number to a fractional power is not a real number.")
    # log10 of the result, estimated without computing it: 9**9**9 is refused here.
    if exp * math.log10(abs(base)) > 100.5:
        raise _too_large()
    return base**exp


_BINOPS: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Pow: _power,
    ast.Div: _divide(operator.truediv), ast.FloorDiv: _divide(operator.floordiv),
    ast.Mod: _divide(operator.mod),
}  # fmt: skip


def _whole(x: Number, what: str, low: int, high: int) -> int:
    if not float(x).is_integer() or not low <= x <= high:
        raise ToolError(f"{what} must be a whole number from {low} to {high}.")
    return int(x)


def _trig(func: Callable[[float], float]) -> Callable[[Number], float]:
    def checked(x: Number) -> float:
        if func is math.tan and abs(math.cos(x)) < 1e-12:
            raise ValueError("tan is undefined there")
        y = func(x)
        # pi is inexact, so sin(pi) is 1e-16: snap that noise to 0 (not tiny inputs).
        return 0.0 if abs(y) < 1e-12 and abs(x) > 1e-6 else y

    return checked


def _log(x: Number, base: Number = 10) -> float:
    if base <= 0 or base == 1:
        raise ValueError("log base must be positive and not 1")
    return math.log10(x) if base == 10 else math.log(x, base)


def _factorial(x: Number) -> int:
    if x > 170:  # checked before computing: factorial(10**9) would take minutes
        raise _too_large()
    return math.factorial(_whole(x, "factorial's argument", 0, 170))


def _round(x: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return round(x)
    return round(x, _whole(digits, "round's digits", -100, 100))


# name -> (function, min args, max args)
_FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int]] = {
    "sqrt": (math.sqrt, 1, 1), "sin": (_trig(math.sin), 1, 1), "cos": (_trig(math.cos), 1, 1),
    "tan": (_trig(math.tan), 1, 1), "log": (_log, 1, 2), "ln": (math.log, 1, 1),
    "exp": (math.exp, 1, 1), "abs": (abs, 1, 1), "round": (_round, 1, 2), "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1), "factorial": (_factorial, 1, 1),
    "_percent": (lambda x: x / 100, 1, 1),  # what "N%" is rewritten to
}  # fmt: skip


def _call(node: ast.Call, depth: int) -> Number:
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name not in _FUNCTIONS:
        shown = name or ast.unparse(node.func)
        raise ToolError(f"Unknown function '{shown}'. Use {ALLOWED}.")
    func, low, high = _FUNCTIONS[name]
    if node.keywords or not low <= len(node.args) <= high:
        count = f"{low}" if low == high else f"{low} or {high}"
        raise ToolError(f"{name} takes {count} plain argument(s).")
    args = [_eval(a, depth + 1) for a in node.args]
    try:
        return _bounded(func(*args))
    except ValueError:
        shown = ", ".join(format_number(a) for a in args)
        raise ToolError(f"{name}({shown}) is undefined (math domain error).") from None


def _eval(node: ast.AST, depth: int) -> Number:
    if depth > MAX_DEPTH:
        raise ToolError("The expression is nested too deeply.")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _bounded(node.value)
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise ToolError(f"Unknown name '{node.id}'. Use {ALLOWED}.")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        value = _eval(node.operand, depth + 1)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left, depth + 1), _eval(node.right, depth + 1)
        return _bounded(_BINOPS[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        return _call(node, depth)
    what = _UNSUPPORTED.get(type(node), f"'{type(node).__name__}'")
    raise ToolError(f"{what} is not allowed. Use {ALLOWED}.")


def _parse(expression: str) -> ast.Expression:
    """Normalise what people type, filter characters, parse, and check the tree's size."""
    text = " ".join(str(expression).split()).rstrip("=? ")
    if not text:
        raise ToolError("The expression is empty. Give arithmetic such as 23 * 47.")
    if len(text) > MAX_LENGTH:
        raise ToolError(f"The expression is longer than {MAX_LENGTH} characters; split it up.")
    text = _TIMES_X.sub(" * ", text.translate(_SYMBOLS))
    text = _PERCENT_WORD.sub("%", text)
    text = _PERCENT_END.sub(r"_percent(\1)", _PERCENT_OF.sub(r"_percent(\1) * ", text))
    if not _CHARS.fullmatch(text):
        bad = next(c for c in text if not _CHARS.fullmatch(c))
        raise ToolError(f"The character {bad!r} is not allowed. Use {ALLOWED}.")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ToolError(f"Could not read {expression!r} as arithmetic. Use {ALLOWED}.") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolError("The expression is too large; split it up.")
    return tree


def _compute(tree: ast.Expression) -> Number:
    try:
        return _eval(tree.body, 0)
    except OverflowError:
        raise _too_large() from None
    except ZeroDivisionError:
        raise ToolError("Division by zero is undefined.") from None


def evaluate(expression: str) -> Number:
    """Evaluate arithmetic text safely; raise ``ToolError`` for anything refused."""
    return _compute(_parse(expression))


def _scientific(x: Number) -> str:
    mantissa, exponent = f"{x:.9e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} times 10 to the power of {int(exponent)}"


def format_number(x: Number) -> str:
    """A number as it reads well aloud: 1081, 0.3, 0.6666666667, 1.5 times 10 to the power of 20."""
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        if not (x.is_integer() and abs(x) < 1e15):
            x = float(f"{x:.10g}")  # 10 significant digits hide 0.1 + 0.2 noise
        if x.is_integer() and abs(x) < 1e15:
            x = int(x)
    if x == 0:
        return "0"
    if abs(x) >= 1e15 or abs(x) < 1e-6:
        return _scientific(x)
    if isinstance(x, int):
        return str(x)
    return format(Decimal(repr(x)), "f")  # repr is short after rounding; "f" avoids 1e-05


def _display(tree: ast.Expression) -> str:
    shown = _PERCENT_SHOWN.sub(r"\1%", ast.unparse(tree))
    return shown.replace("% * ", "% of ")


def calculator(
    expression: Annotated[
        str, "The arithmetic from the question, written with numbers, + - * / ** %, sqrt(), sin() ..."
    ],
) -> str:
    """Evaluate a math expression exactly. Use it for any arithmetic.

    Returns ``"<normalised expression> = <result>"``, e.g. ``"23 * 47 = 1081"``; anything
    outside the whitelist, too large or undefined raises ``ToolError``.
    """
    tree = _parse(expression)
    body = tree.body.operand if isinstance(tree.body, ast.UnaryOp) else tree.body
    if isinstance(body, ast.Constant):
        # A lone number is no arithmetic: a small model reaches for the calculator on any
        # "how many" question and would then speak "4 = 4". The error goes back to it.
        raise ToolError(
            f"{expression!r} is a number, not a calculation. Write the arithmetic from the "
            "question, or answer without the calculator if there is none."
        )
    return f"{_display(tree)} = {format_number(_compute(tree))}"


WORDS = (
    r"calculat\w*|compute|plus|minus|times|divided|multipl\w*|percent|sum|add|subtract|square|"
    r"root|power|half|twice",
    NUMBER_WORDS,
)
"""Words that suggest arithmetic (boost's "may need a tool" check); digits count anyway."""

_OPS = {
    "times": ("{x} * {y}", "{x} times {y}"),
    "plus": ("{x} + {y}", "{x} plus {y}"),
    "minus": ("{x} - {y}", "{x} minus {y}"),
    "divided by": ("{x} / {y}", "{x} divided by {y}"),
    "percent of": ("{x}% of {y}", "{x} percent of {y}"),
    "to the power of": ("{x} ** {y}", "{x} to the power of {y}"),
    "squared": ("{x} ** 2", "{x} squared"),
    "cubed": ("{x} ** 3", "{x} cubed"),
    "square root": ("sqrt({x})", "the square root of {x}"),
}


def _say(value: str) -> str:
    """A number for speech: "-41" → "minus 41"."""
    return "minus " + value[1:] if value.startswith("-") else value


def _answer(said: str):
    """The phrasing of a result "23 * 47 = 1081": "23 times 47 is 1081."."""

    def phrase(result: str) -> str | None:
        if " = " not in result:
            return None  # a refusal: the model explains it
        value = result.rsplit(" = ", 1)[1].strip()
        question = _say(said)
        return f"{question[:1].upper()}{question[1:]} is {_say(value)}."

    return phrase


def _calculate(intent: str, slots: Slots) -> Action | None:
    """IrisCalculate: "what is twenty three times forty seven" — each operand one number."""
    op = _OPS.get(str(slots.get("op")))
    x = number(str(slots.get("x", "")))
    y = number(str(slots["y"])) if "y" in slots else "0"
    if op is None or x is None or y is None:
        return None
    expression, said = (part.format(x=x, y=y) for part in op)
    said = said.replace(" -", " minus ")
    return Action(intent, "calculator", {"expression": expression}, "calc", said, _answer(said))


def make_calculator_tool() -> Tool:
    """The calculator as a registry ``Tool`` (its "23 * 47 = 1081" is for the model to phrase)."""
    return tool_from_function(calculator, words=WORDS, intents={"IrisCalculate": _calculate}, read_only=True)


ORDER = 20
"""Place in the prompt: after the timers, before the clock (see ``iris_voice.tools.builtin``)."""


def provide(ctx: ToolContext) -> list[Tool]:
    """The calculator."""
    return [make_calculator_tool()]
