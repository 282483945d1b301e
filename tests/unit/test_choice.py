"""A constrained choice: no tool name outside the shown set, no argument a tool does not take."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iris_voice.tools.choice import NONE, AnswerStream, Choice, choice_schema, read_choice
from iris_voice.tools.registry import ToolSpec
from tests.support.fakes import builtin_registry

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}(/[a-z][a-z_]{0,11})?", fullmatch=True).filter(
    lambda n: n != NONE
)
TYPES = st.sampled_from(["string", "integer", "number", "boolean"])
PARAMS = st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True), TYPES, max_size=4)
SAMPLE = {"string": "x", "integer": 3, "number": 1.5, "boolean": True}


def spec(name: str, params: dict[str, str]) -> ToolSpec:
    properties = {p: {"type": t} for p, t in params.items()}
    return ToolSpec(name, "a tool", {"type": "object", "properties": properties, "required": sorted(params)})


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(NAMES, PARAMS, min_size=1, max_size=6), NAMES, st.data())
def test_a_choice_names_a_shown_tool_or_none_and_only_its_arguments(tools, stranger, data):
    schema = choice_schema([spec(n, p) for n, p in tools.items()])
    validator = jsonschema.Draft202012Validator(schema)
    for name, params in tools.items():
        args = {p: SAMPLE[t] for p, t in params.items()}
        assert validator.is_valid({"tool": name, "arguments": args})
        assert not validator.is_valid({"tool": name, "arguments": {**args, "invented_key": 1}})
        if params:  # a required argument missing, or of another type, is no call
            first = sorted(params)[0]
            assert not validator.is_valid(
                {"tool": name, "arguments": {k: v for k, v in args.items() if k != first}}
            )
            wrong = {"string": 1, "integer": "x", "number": "x", "boolean": "x"}[params[first]]
            assert not validator.is_valid({"tool": name, "arguments": {**args, first: wrong}})
    if stranger not in tools:
        other = data.draw(st.sampled_from(sorted(tools)))
        args = {p: SAMPLE[t] for p, t in tools[other].items()}
        assert not validator.is_valid({"tool": stranger, "arguments": args})
    assert validator.is_valid({"tool": NONE, "answer": "Canberra."})
    assert not validator.is_valid({"tool": NONE})


def test_the_built_in_tools_make_a_schema_their_own_calls_fit():
    specs = [t.spec for t in builtin_registry()]
    validator = jsonschema.Draft202012Validator(choice_schema(specs))
    assert validator.is_valid({"tool": "set_timer", "arguments": {"duration": "8 minutes", "label": "pasta"}})
    assert validator.is_valid({"tool": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}})
    assert not validator.is_valid({"tool": "open_garage_door", "arguments": {}})
    assert not validator.is_valid({"tool": "set_timer", "arguments": {"label": "pasta"}})  # no duration


def test_read_choice_takes_a_shown_tool_or_an_answer_and_refuses_the_rest():
    names = ["set_timer"]
    assert read_choice('{"tool": "set_timer", "arguments": {"duration": "3 minutes"}}', names) == Choice(
        "set_timer", {"duration": "3 minutes"}
    )
    assert read_choice('{"tool": "none", "answer": "Canberra."}', names) == Choice(NONE, answer="Canberra.")
    for bad in ('{"tool": "open_door", "arguments": {}}', "Sure, I can do that.", '{"tool": "set_ti'):
        with pytest.raises(ValueError, match="not a choice"):
            read_choice(bad, names)


ANSWER = 'It\'s "Canberra" \\ not Sydney.\nReally \u00e9 \u263a'


@pytest.mark.parametrize("step", [1, 2, 3, 5, 8, 1000])
def test_an_answer_is_decoded_while_it_streams_wherever_the_deltas_cut_it(step):
    reply = json.dumps({"tool": NONE, "answer": ANSWER}, ensure_ascii=True)
    stream = AnswerStream()
    said = "".join(stream.feed(reply[i : i + step]) for i in range(0, len(reply), step))
    assert said == ANSWER


def test_a_tool_call_streams_no_answer():
    reply = json.dumps({"tool": "set_timer", "arguments": {"duration": "none", "answer": "x"}})
    stream = AnswerStream()
    assert "".join(stream.feed(reply[i : i + 4]) for i in range(0, len(reply), 4)) == ""
