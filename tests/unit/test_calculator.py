"""The calculator: results, formatting, refusals, fuzzing, and the registry boundary."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iris_voice.errors import ToolError
from iris_voice.tools.builtin.calculator import calculator, evaluate, format_number, make_calculator_tool
from iris_voice.tools.registry import ToolRegistry


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("23 * 47", "23 * 47 = 1081"),
        ("23 x 47", "23 * 47 = 1081"),
        ("23×47", "23 * 47 = 1081"),
        ("10 ÷ 4", "10 / 4 = 2.5"),
        ("10 − 4", "10 - 4 = 6"),
        ("2^10", "2 ** 10 = 1024"),
        ("0.1 + 0.2", "0.1 + 0.2 = 0.3"),
        ("15% of 80", "15% of 80 = 12"),
        ("15 percent of 80", "15% of 80 = 12"),
        ("50%", "50% = 0.5"),
        ("1/3", "1 / 3 = 0.3333333333"),
        ("-12 + 0", "-12 + 0 = -12"),
    ],
)
def test_calculator_text(expression: str, expected: str) -> None:
    assert calculator(expression) == expected


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("2 ** 3 ** 2", 512),  # right-associative
        ("-3 ** 2", -9),  # power binds tighter than unary minus
        ("-(3 - 5)", 2),
        ("+4 - -2", 6),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("10 - 4 / 2", 8),
        ("2 * -3", -6),
        ("200 * 5%", 10),
        ("12.5% of 8", 1),
        ("2 x (3 + 1)", 8),
    ],
)
def test_precedence_unary_and_percent(expression: str, value: float) -> None:
    assert evaluate(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("sqrt(16)", 4),
        ("sin(pi / 2)", 1),
        ("sin(pi)", 0),
        ("cos(0)", 1),
        ("tan(pi / 4)", 1),
        ("log(1000)", 3),
        ("log(8, 2)", 3),
        ("ln(e)", 1),
        ("exp(1)", math.e),
        ("abs(-7)", 7),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 2),
        ("floor(-2.5)", -3),
        ("ceil(2.1)", 3),
        ("factorial(5)", 120),
        ("factorial(5.0)", 120),
        ("2 * pi", 2 * math.pi),
    ],
)
def test_functions_and_constants(expression: str, value: float) -> None:
    assert evaluate(expression) == pytest.approx(value, abs=1e-12)


def test_integer_results_stay_exact() -> None:
    assert evaluate("2 ** 62 + 1") == 2**62 + 1
    assert isinstance(evaluate("23 * 47"), int)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1081, "1081"),
        (1081.0, "1081"),
        (0.1 + 0.2, "0.3"),
        (-0.0, "0"),
        (2 / 3, "0.6666666667"),
        (0.000015, "0.000015"),
        (123456789012345, "123456789012345"),
        (10**15, "1 times 10 to the power of 15"),
        (2**64, "1.844674407 times 10 to the power of 19"),
        (-1.5e20, "-1.5 times 10 to the power of 20"),
        (1e-7, "1 times 10 to the power of -7"),
    ],
)
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9**9**9", "too large"),
        ("10**1000", "too large"),
        ("2 ** 0.5 ** -2000", "too large"),
        ("factorial(1000)", "too large"),
        ("factorial(100)", "too large"),
        ("factorial(-1)", "whole number"),
        ("factorial(2.5)", "whole number"),
        ("1e99 * 1e99", "too large"),
        ("exp(1000)", "too large"),
        ("1 / 0", "division by zero"),
        ("5 // 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("sqrt(-1)", "domain"),
        ("log(0)", "domain"),
        ("log(8, 1)", "domain"),
        ("ln(-1)", "domain"),
        ("(-8) ** (1/3)", "not a real number"),
        ('__import__("os").system("x")', "allowed"),
        ("__import__(1)", "unknown function '__import__'"),
        ("(1).real", "attribute access"),
        ("pi.real", "attribute access"),
        ("'abc'", "not allowed"),
        ("lambda: 1", "not allowed"),
        ("[x for x in 1]", "not allowed"),
        ("x + 1", "unknown name 'x'"),
        ("1 < 2", "not allowed"),
        ("1 and 2", "and/or"),
        ("1,000", "1000, not 1,000"),
        ("sqrt(1, 2)", "takes 1"),
        ("2 +", "could not read"),
        ("", "empty"),
        ("4", "is a number, not a calculation"),  # "how many legs…": nothing to compute
        ("12 =", "is a number, not a calculation"),
        ("-3.5", "is a number, not a calculation"),
        ("1+" * 150 + "1", "longer than 200"),
        ("-" * 150 + "1", "nested too deeply"),
    ],
)
def test_refusals(expression: str, message: str) -> None:
    with pytest.raises(ToolError) as info:
        calculator(expression)
    assert message in info.value.message.lower()


def test_refusal_names_what_is_allowed() -> None:
    with pytest.raises(ToolError, match="sqrt sin cos tan"):
        calculator('__import__("os")')


def test_long_flat_sum_is_fine() -> None:
    assert evaluate("+".join(["1"] * 100)) == 100  # depth 99, under 200 characters


_FUZZ_TEXT = st.one_of(
    st.text(max_size=250),
    st.text(alphabet="0123456789.+-*/%^()x×÷−, epi sqrtfactoriallog", max_size=60),
)


@settings(max_examples=400, deadline=None)
@given(_FUZZ_TEXT)
def test_fuzz_random_text_answers_or_refuses_fast(text: str) -> None:
    start = time.perf_counter()
    try:
        result = calculator(text)
    except ToolError:
        pass
    else:
        assert " = " in result
    # Guards against runaway work (a huge power, a deep parse); generous, so that a loaded
    # machine never fails it.
    assert time.perf_counter() - start < 10


def _arith() -> st.SearchStrategy[tuple[str, int]]:
    """(expression text, its value by Python int arithmetic) for + - * trees of small ints."""
    leaf = st.integers(-20, 99).map(lambda n: (f"({n})" if n < 0 else str(n), n))

    def combine(children: st.SearchStrategy[tuple[str, int]]) -> st.SearchStrategy[tuple[str, int]]:
        ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
        return st.tuples(children, st.sampled_from(sorted(ops)), children).map(
            lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", ops[t[1]](t[0][1], t[2][1]))
        )

    return st.recursive(leaf, combine, max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(_arith())
def test_fuzz_integer_arithmetic_matches_python(case: tuple[str, int]) -> None:
    text, expected = case
    value = evaluate(text)
    assert value == expected
    assert isinstance(value, int)


async def test_registry_turns_refusal_into_error_result() -> None:
    registry = ToolRegistry([make_calculator_tool()])
    result = await registry.call("calculator", {"expression": '__import__("os")'})
    assert result.ok is False
    assert result.result.startswith("Error:")


async def test_registry_coerces_a_number_argument() -> None:
    registry = ToolRegistry([make_calculator_tool()])
    # The number arrives as the text "12" (not a type error), which is nothing to compute.
    result = await registry.call("calculator", {"expression": 12})
    assert result.ok is False
    assert "'12' is a number, not a calculation" in result.result


async def test_registry_runs_a_calculation_from_json_arguments() -> None:
    registry = ToolRegistry([make_calculator_tool()])
    result = await registry.call("calculator", '{"expression": "23 * 47"}')
    assert (result.ok, result.result) == (True, "23 * 47 = 1081")


def test_spec_is_compact() -> None:
    spec = make_calculator_tool().spec
    assert spec.name == "calculator"
    assert spec.parameters["required"] == ["expression"]
    assert len(spec.description) + len(str(spec.parameters)) < 400
