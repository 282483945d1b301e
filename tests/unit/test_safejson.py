"""Bounded JSON (``safejson.py``): deep nesting is a ValueError at any depth, never a
RecursionError, and the limit is exact."""

from __future__ import annotations

import pytest

from iris_voice.safejson import MAX_DEPTH, loads, loads_object, nesting_exceeds, one_line
from tests.support.hostile.local_user import deep_json, unclosed_json


@pytest.mark.parametrize("kind", ["array", "object"])
def test_the_limit_is_exact(kind):
    assert loads(deep_json(MAX_DEPTH, kind)) is not None
    with pytest.raises(ValueError, match=f"nested more than {MAX_DEPTH} levels deep"):
        loads(deep_json(MAX_DEPTH + 1, kind))


@pytest.mark.parametrize(
    "text", [deep_json(100_000), deep_json(100_000, "object"), unclosed_json(100_000), deep_json(900)]
)
def test_any_depth_is_a_value_error(text):
    """900 parses in Python's parser (and would break a later repr); 100,000 does not parse."""
    with pytest.raises(ValueError, match="nested more than"):
        loads(text)
    with pytest.raises(ValueError, match="nested more than"):
        loads(text.encode())


def test_brackets_inside_strings_do_not_count():
    text = '{"cmd": "say", "text": "' + "[" * 10_000 + '"}'
    assert loads(text)["text"] == "[" * 10_000


def test_wide_is_not_deep():
    value = [[{"a": [1]}] for _ in range(10_000)]
    assert not nesting_exceeds(value, 4) and nesting_exceeds(value, 3)


def test_an_object_is_required_where_asked():
    assert loads_object(b'{"ok": true}') == {"ok": True}
    for text in ("[1, 2]", '"ok"', "3"):
        with pytest.raises(ValueError, match="expected a JSON object"):
            loads_object(text)


def test_one_line_flattens_and_bounds_what_the_other_end_sent():
    assert one_line("two\nlines\x1b[2J") == "two lines [2J"
    assert one_line("x" * 1000, 10) == "x" * 9 + "…"
    assert one_line(None) == "None"


def test_json_from_a_model_server_or_a_model_never_recurses_to_a_crash() -> None:
    """The places below the app layer that read JSON they do not control."""
    import pytest

    from iris_voice.errors import ToolError
    from iris_voice.llm.openai_client import _error_text
    from iris_voice.tools.mcp.lazy import _arguments_object

    deep = "[" * 100_000 + "]" * 100_000
    assert _error_text(deep.encode())  # an error body: shown as text, not a RecursionError
    with pytest.raises(ToolError, match="not valid JSON"):
        _arguments_object(deep)  # execute_tool's arguments as a string
