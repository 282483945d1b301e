"""The tool registry: schemas from type hints, coercion, and errors that go back to the model."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel

from iris_voice.errors import ToolError
from iris_voice.tools.registry import ToolRegistry, tool_from_function
from iris_voice.tools.schemas import compact_schema


def add(a: Annotated[int, "first number"], b: int = 2) -> int:
    """Add two numbers.

    This second paragraph is not part of the description."""
    return a + b


def choose(colour: Literal["red", "green"], sizes: list[int] | None = None) -> str:
    """Pick a colour."""
    return f"{colour} {sizes}"


async def slow_echo(text: str) -> str:
    """Echo asynchronously."""
    await asyncio.sleep(0)
    return text


def broken() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


def refuses(x: int) -> str:
    """Refuses politely."""
    raise ToolError("x must be even")


@pytest.fixture
def registry():
    r = ToolRegistry()
    for f in (add, choose, slow_echo, broken, refuses):
        r.add_function(f)
    return r


def test_schema_comes_from_type_hints(registry):
    spec = registry.get("add").spec
    assert spec.description == "Add two numbers."
    assert spec.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "first number"},
            "b": {"type": "integer", "default": 2},
        },
        "required": ["a"],
    }
    choose_schema = registry.get("choose").spec.parameters
    assert choose_schema["properties"]["colour"]["enum"] == ["red", "green"]
    assert choose_schema["properties"]["sizes"] == {"type": "array", "items": {"type": "integer"}}
    assert "title" not in json.dumps(choose_schema)


async def test_arguments_are_coerced(registry):
    res = await registry.call("add", {"a": "12", "b": "30"})
    assert (res.ok, res.result, res.arguments) == (True, "42", {"a": 12, "b": 30})


async def test_arguments_as_json_string(registry):
    res = await registry.call("add", '{"a": 1}')
    assert res.ok and res.result == "3"


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("add", {"a": "twelve"}, "a: Input should be a valid integer"),
        ("add", {}, "a: Field required"),
        ("add", {"a": 1, "c": 3}, "c: unknown argument"),
        ("choose", {"colour": "blue"}, "colour: Input should be 'red' or 'green'"),
        ("nope", {}, "unknown tool 'nope'. Available tools: add, choose"),
        ("add", "{not json", "not valid JSON"),
        ("add", "[1, 2]", "must be a JSON object"),
        ("add", "[" * 100_000, "nested too deeply"),  # a model's arguments are not trusted either
        ("broken", {}, "broken failed: RuntimeError: disk on fire"),
        ("refuses", {"x": 3}, "x must be even"),
    ],
)
async def test_failures_become_error_results(registry, name, args, needle):
    res = await registry.call(name, args)
    assert not res.ok
    assert res.result.startswith("Error: ")
    assert needle in res.result


async def test_async_and_sync_tools(registry):
    assert (await registry.call("slow_echo", {"text": "hi"})).result == "hi"
    assert (await registry.call("slow_echo", {"text": 5})).result == "5"  # numbers coerced to str


def test_duplicate_names_are_refused(registry):
    with pytest.raises(ValueError, match="already registered"):
        registry.add_function(add)


def test_filtered(registry):
    assert registry.filtered(["add", "choose"]).names() == ["add", "choose"]
    assert "broken" not in registry.filtered(None, ["broken"])


class Place(BaseModel):
    """A place."""

    city: str | None = None


def where(place: Place) -> str:
    """Where."""
    return place.city or "?"


async def test_pydantic_model_parameters_are_compacted():
    tool = tool_from_function(where)
    schema = tool.spec.parameters
    assert "title" not in json.dumps(schema)
    assert schema["$defs"]["Place"]["properties"]["city"] == {"type": "string"}
    res = await ToolRegistry([tool]).call("where", {"place": {"city": "Oslo"}})
    assert res.ok and res.result == "Oslo"


def test_compact_schema_keeps_other_unions():
    schema = compact_schema({"properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}})
    assert schema["properties"]["x"]["anyOf"] == [{"type": "string"}, {"type": "integer"}]
    assert schema["type"] == "object"


def test_compact_schema_keeps_a_parameter_named_title():
    def note(title: str, body: str = "") -> str:
        """Write a note."""
        return title

    schema = tool_from_function(note).spec.parameters
    assert schema["properties"]["title"] == {"type": "string"}
    assert schema["required"] == ["title"]


def test_a_tool_registered_first_comes_before_the_others():
    def one() -> str:
        """One."""
        return "1"

    def two() -> str:
        """Two."""
        return "2"

    def three() -> str:
        """Three."""
        return "3"

    r = ToolRegistry()
    r.add_function(one)
    r.add_function(two)
    r.register(tool_from_function(three), first=True)
    assert r.names() == ["three", "one", "two"]
    assert [s.name for s in r.specs()] == ["three", "one", "two"]
