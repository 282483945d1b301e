"""Tests for the ToolRenderer: six formats, IRIS-like tools and hostile MCP schemas."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iris_voice.llm.textcalls import extract_calls
from iris_voice.tools.registry import ToolSpec, tool_from_function
from iris_voice.tools.render import (
    FORMATS,
    SYSTEM_TOOL_INSTRUCTIONS,
    TEXT_FORMATS,
    manifest,
    normalize_parameters,
    render,
    render_json,
    schema_type_label,
)

CALCULATOR = ToolSpec(
    "calculator",
    "Evaluate arithmetic.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "e.g. 23*47"}},
        "required": ["expression"],
    },
)
TIME = ToolSpec(
    "get_current_time",
    "Tell the current time.",
    {"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA name"}}},
)
TIMER = ToolSpec(
    "set_timer",
    "Start a countdown timer.",
    {
        "type": "object",
        "properties": {
            "duration": {"type": "integer", "description": "Seconds", "minimum": 1, "maximum": 86400},
            "label": {"type": "string", "default": "timer"},
            "unit": {"enum": ["s", "min"], "default": "s"},
        },
        "required": ["duration"],
    },
)
IRIS = [CALCULATOR, TIME, TIMER]

NODE = {
    "type": "object",
    "properties": {
        "value": {"type": "integer"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
    },
    "required": ["value"],
}
HOSTILE = [
    ToolSpec(
        "nested",
        "Nested objects and arrays of objects.",
        {
            "type": "object",
            "properties": {
                "options": {
                    "type": "object",
                    "description": "Settings",
                    "properties": {"depth": {"type": "integer", "exclusiveMinimum": 0}},
                    "required": ["depth"],
                },
                "people": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
                "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
                "mode": {"const": "fast"},
            },
        },
    ),
    ToolSpec(
        "recursive",
        "A tree via $ref.",
        {"type": "object", "$defs": {"Node": NODE}, "properties": {"tree": {"$ref": "#/$defs/Node"}}},
    ),
    ToolSpec("self_ref", "", {"$ref": "#"}),
    ToolSpec(
        "top_ref", "Pydantic v1 style.", {"$ref": "#/definitions/A", "definitions": {"A": TIMER.parameters}}
    ),
    ToolSpec("not_a_dict", "Garbage parameters.", ["what"]),  # type: ignore[arg-type]
    ToolSpec("none_desc", None, {"properties": {"x": {}}}),  # type: ignore[arg-type]
    ToolSpec(
        "garbage",
        "x" * 500,
        {
            "type": "object",
            "properties": {"ok": {"type": "string"}, "five": 5, "list": [1], "yes": True, "no": False},
            "required": "ok",
            "items": 7,
            "anyOf": "nope",
            "default": float("nan"),
        },
    ),
    ToolSpec(
        "broken_refs",
        "Refs to nowhere.",
        {"properties": {"a": {"$ref": "#/nope"}, "b": {"$ref": "http://x"}}},
    ),
    ToolSpec("string_schema", "Not an object.", {"type": "string"}),
]


@pytest.mark.parametrize("fmt", ["ollama", "openai"])
def test_function_formats(fmt):
    out = render(IRIS, fmt)
    assert [t["type"] for t in out] == ["function"] * 3
    assert out[0]["function"] == {
        "name": "calculator",
        "description": "Evaluate arithmetic.",
        "parameters": CALCULATOR.parameters,
    }
    assert out[2]["function"]["parameters"]["required"] == ["duration"]


def test_anthropic_format():
    out = render(IRIS, "anthropic")
    assert out[1] == {
        "name": "get_current_time",
        "description": "Tell the current time.",
        "input_schema": TIME.parameters,
    }


@pytest.mark.parametrize("fmt", ["ollama", "openai", "anthropic"])
@pytest.mark.parametrize("specs", [IRIS, HOSTILE, []], ids=["iris", "hostile", "empty"])
def test_json_formats_are_valid_json_and_round_trip(fmt, specs):
    text = render_json(specs, fmt)
    parsed = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert parsed == render(specs, fmt)
    for tool in parsed:
        params = tool["input_schema"] if fmt == "anthropic" else tool["function"]["parameters"]
        assert params["type"] == "object" and isinstance(params["properties"], dict)
        assert all(isinstance(v, dict) for v in params["properties"].values())


def test_ollama_inlines_refs_and_guards_recursion():
    params = render(HOSTILE, "ollama")[1]["function"]["parameters"]
    assert "$defs" not in params and "$ref" not in json.dumps(params)
    tree = params["properties"]["tree"]
    assert tree["properties"]["children"]["items"] == {"type": "object", "description": "a Node (recursive)"}
    # The API formats that understand $ref keep it.
    assert render(HOSTILE, "openai")[1]["function"]["parameters"]["$defs"] == {"Node": NODE}


def test_normalize_parameters_repairs_garbage():
    assert normalize_parameters("nope") == {"type": "object", "properties": {}}
    assert normalize_parameters({"type": "string"}) == {"type": "object", "properties": {}}
    out = normalize_parameters(HOSTILE[6].parameters)
    assert out["properties"] == {"ok": {"type": "string"}, "yes": {}}
    assert "required" not in out and "items" not in out and "anyOf" not in out and out["default"] is None
    top = normalize_parameters(HOSTILE[3].parameters)
    assert top["properties"] == TIMER.parameters["properties"] and top["required"] == ["duration"]


def test_qwen_xml_matches_the_qwen_template():
    text = render(IRIS, "qwen-xml")
    assert text.startswith(
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    )
    assert text.endswith(
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
        "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )
    inner = text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    lines = inner.split("\n")
    assert len(lines) == 3
    assert [json.loads(line) for line in lines] == render(IRIS, "ollama")


def test_qwen_xml_one_line_per_hostile_tool():
    inner = render(HOSTILE, "qwen-xml").split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    assert [json.loads(line)["function"]["name"] for line in inner.split("\n")] == [s.name for s in HOSTILE]


def test_text_manifest():
    text = render(IRIS, "text")
    for spec in IRIS:
        assert f"### {spec.name}\n{spec.description}\nParameters:" in text
    assert "- expression (string, required): e.g. 23*47" in text
    assert "- timezone (string, optional): IANA name" in text
    assert "- duration (integer, required, 1..86400): Seconds" in text
    assert '- label (string, optional, default "timer")' in text
    assert '- unit ("s" | "min", optional, default "s")' in text
    assert text.endswith(SYSTEM_TOOL_INSTRUCTIONS["text"])
    assert '<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>' in text


def test_text_manifest_nests_readably():
    text = render(HOSTILE, "text")
    assert "- options (object, optional): Settings\n  - depth (integer, required, > 0)" in text
    assert "- people (array of object, optional)\n  - name (string, optional)" in text
    assert "- when (string | null, optional)" in text
    assert '- mode ("fast", optional)' in text
    tree = "- tree (object, optional)\n  - value (integer, required)\n  - children (array of Node, optional)"
    assert tree in text
    assert "### not_a_dict\nGarbage parameters.\nParameters: none" in text
    assert "### none_desc\n(no description)\nParameters:\n- x (any, optional)" in text
    assert "- a (any, optional)" in text and "- yes (any, optional)" in text
    assert "- five" not in text and "- list" not in text and "- no " not in text
    assert "### string_schema\nNot an object.\nParameters: none" in text


def test_concise_one_line_per_parameter():
    text = render(IRIS, "concise")
    lines = text.split("\n")
    assert lines[0] == "Tools:"
    assert lines[1:3] == ["calculator: Evaluate arithmetic.", "  expression (string, required): e.g. 23*47"]
    params = [line for line in lines if line.startswith("  ")]
    assert len(params) == sum(len(s.parameters["properties"]) for s in IRIS)
    assert lines[-1] == SYSTEM_TOOL_INSTRUCTIONS["concise"]


def test_concise_truncates_and_flattens():
    text = render(HOSTILE, "concise")
    head = next(line for line in text.split("\n") if line.startswith("garbage:"))
    assert len(head) <= len("garbage: ") + 120 and head.endswith("…")
    assert "  options.depth (integer, required, > 0)" in text
    assert "  people[].name (string, optional)" in text
    assert "\nnot_a_dict: Garbage parameters.\n" in text


@pytest.mark.parametrize(
    ("schema", "label"),
    [
        ({"type": "string"}, "string"),
        ({"type": "integer", "minimum": 0}, "integer"),
        ({"type": "array", "items": {"type": "string"}}, "array of string"),
        ({"type": "array"}, "array"),
        ({"items": {"type": "number"}}, "array of number"),
        ({"type": "object"}, "object"),
        ({"properties": {}}, "object"),
        ({"enum": ["a", "b"]}, '"a" | "b"'),
        ({"const": 3}, "3"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "string | integer"),
        ({"oneOf": [{"type": "string"}, {"type": "string"}]}, "string"),
        ({"type": ["string", "null"]}, "string | null"),
        ({"type": "array", "items": {"enum": [1, 2]}}, "array of (1 | 2)"),
        ({}, "any"),
        (None, "any"),
        ("garbage", "any"),
        ({"$ref": "#/$defs/X", "$defs": {"X": {"type": "boolean"}}}, "boolean"),
        ({"$ref": "#"}, "#"),
        ({"$ref": "#/missing"}, "any"),
    ],
)
def test_schema_type_label(schema, label):
    assert schema_type_label(schema) == label


def test_manifest_and_unknown_formats():
    for fmt in TEXT_FORMATS:
        assert manifest(IRIS, fmt) == render(IRIS, fmt)
    with pytest.raises(ValueError):
        manifest(IRIS, "ollama")
    with pytest.raises(ValueError):
        render(IRIS, "yaml")
    assert set(FORMATS) == {"ollama", "openai", "anthropic", "text", "concise", "qwen-xml"}


def test_rendering_is_deterministic():
    # Ollama reuses its prompt cache only while the tool definitions are byte-identical.
    for fmt in FORMATS:
        assert render_json(IRIS + HOSTILE, fmt) == render_json(IRIS + HOSTILE, fmt)


def test_tools_from_the_registry():
    def set_alarm(
        hour: Annotated[int, "0-23"], repeat: Literal["once", "daily"] = "once", note: str | None = None
    ) -> str:
        """Set an alarm."""
        return "ok"

    spec = tool_from_function(set_alarm).spec
    text = render([spec], "text")
    assert "- hour (integer, required): 0-23" in text
    assert '- repeat ("once" | "daily", optional, default "once")' in text
    assert "- note (string, optional)" in text


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_the_documented_call_syntax_is_what_textcalls_parses(fmt):
    # Fill the placeholders of each format's instruction the way a model would.
    call = SYSTEM_TOOL_INSTRUCTIONS[fmt].split("<tool_call>")[-1]
    call = "<tool_call>" + call.split("</tool_call>")[0] + "</tool_call>"
    for placeholder, value in [
        ('"<tool name>"', '"calculator"'),
        ("<function-name>", '"calculator"'),
        ('"..."', '"calculator"'),
        ("{<arguments as JSON>}", '{"expression": "2+2"}'),
        ("<args-json-object>", '{"expression": "2+2"}'),
        ("{...}", '{"expression": "2+2"}'),
    ]:
        call = call.replace(placeholder, value)
    calls, rest = extract_calls(call, {"calculator"})
    assert [(c.name, c.arguments) for c in calls] == [("calculator", {"expression": "2+2"})]
    assert rest == ""


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                "type properties items enum anyOf oneOf $ref $defs required const x default".split()
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(JSONISH, st.text(max_size=20))
def test_arbitrary_schemas_never_raise(params, desc):
    spec = ToolSpec("t", desc, params)  # type: ignore[arg-type]
    for fmt in FORMATS:
        out = render_json([spec], fmt)
        if fmt not in TEXT_FORMATS:
            json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    schema_type_label(params)
