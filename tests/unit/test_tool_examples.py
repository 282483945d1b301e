"""Example calls of retrieved tools, built from their own schemas (retrieval.examples)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from iris_voice.config import RetrievalConfig
from iris_voice.conversation.toolpick import ToolPicker
from iris_voice.tools.examples import example_arguments, schema_value, with_example
from iris_voice.tools.registry import Tool, ToolRegistry, ToolSpec

TZ = {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York', 'Europe/London')."}
CONVERT = ToolSpec(
    "time/convert_time",
    "Convert time between timezones",
    {
        "type": "object",
        "properties": {
            "source_timezone": TZ,
            "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
            "target_timezone": {**TZ, "description": "Target IANA timezone name (e.g., 'Asia/Tokyo')."},
            "verbose": {"type": "boolean", "default": True},
        },
        "required": ["source_timezone", "time", "target_timezone"],
    },
)


def test_a_value_comes_from_examples_then_default_then_enum_then_the_description():
    assert schema_value({"examples": ["a"], "default": "b", "enum": ["c"]}) == "a"
    assert schema_value({"default": "b", "enum": ["c"]}) == "b"
    assert schema_value({"default": "", "enum": ["c", "d"]}) == "c"
    assert schema_value({"description": 'Sort order, e.g. "name" or "size"'}) == "name"
    assert schema_value({"description": "a name, for example Bob"}) is None  # not quoted: no value
    assert schema_value({"type": "string"}) is None and schema_value("junk") is None


def test_an_example_fills_required_arguments_from_the_schema_and_names_the_rest():
    args = example_arguments(CONVERT)
    # the optional "verbose" (a default) is left out: a copy of it would be a guess
    assert args == {"source_timezone": "America/New_York", "time": "<time>", "target_timezone": "Asia/Tokyo"}


def test_a_schema_that_gives_no_value_gets_no_example():
    query = ToolSpec(
        "data/sqlite/read_query",
        "Run SQL",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
    no_params = ToolSpec("dev/git/git_status", "Status", {"type": "object", "properties": {}})
    optional_only = ToolSpec(
        "dev/git/git_log",
        "Log",
        {"type": "object", "properties": {"max_count": {"type": "integer", "default": 10}}},
    )
    assert example_arguments(query) is None and example_arguments(no_params) is None
    assert example_arguments(optional_only) is None
    definition = {"type": "function", "function": {"name": query.name}}
    assert with_example(definition, query) == definition


def test_the_picker_shows_the_example_in_the_turn_only_when_configured():
    tool = Tool(CONVERT, lambda **_: "")
    reg = ToolRegistry([], hidden=[tool])
    message = {"role": "user", "content": "Convert 5 pm Berlin time to Tokyo."}
    shown = ToolPicker(reg, RetrievalConfig(examples=True)).with_tools(message, [tool])["content"]
    plain = ToolPicker(reg, RetrievalConfig()).with_tools(message, [tool])["content"]
    line = next(x for x in shown.splitlines() if x.startswith("{"))
    example = json.loads(line)["function"]["example"]
    assert example == {"name": "time/convert_time", "arguments": example_arguments(CONVERT)}
    assert '"example"' not in plain and "America/New_York" in plain  # the description's e.g. stays


_VALUES = st.one_of(st.text(min_size=1, max_size=8), st.integers(), st.booleans())
_PROPS = st.dictionaries(
    st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
    st.fixed_dictionaries(
        {}, optional={"examples": st.lists(_VALUES, max_size=2), "enum": st.lists(_VALUES, max_size=3)}
    ),
    max_size=5,
)


@given(_PROPS, st.data())
def test_an_example_never_has_an_argument_the_schema_does_not_declare_or_leaves_a_required_one_out(
    props, data
):
    required = data.draw(st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([]))
    spec = ToolSpec("t", "d", {"type": "object", "properties": props, "required": required})
    args = example_arguments(spec)
    if args is None:
        assert all(schema_value(props[r]) is None for r in required)
        return
    assert set(args) == set(required)
    for name, value in args.items():
        assert value == (schema_value(props[name]) if schema_value(props[name]) is not None else f"<{name}>")
