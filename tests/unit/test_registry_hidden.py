"""Which of the registry's methods see hidden tools: what the model is shown sees the
listed tools only; what a call may reach sees both."""

from __future__ import annotations

import pytest

from iris_voice.tools.registry import ToolRegistry, tool_from_function


def clock() -> str:
    """The time."""
    return "noon"


def calculator(expression: str) -> str:
    """Evaluate arithmetic."""
    return expression


def read_query(query: str) -> str:
    """Query the database."""
    return f"rows for {query}"


def write_query(query: str) -> str:
    """Change the database."""
    return "done"


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(
        [
            tool_from_function(clock, read_only=True, intents={"HassGetCurrentTime": "clock-intent"}),
            tool_from_function(calculator),
        ],
        hidden=[
            tool_from_function(read_query, name="data/sqlite/read_query", read_only=True),
            tool_from_function(write_query, name="data/sqlite/write_query"),
        ],
    )


LISTED = ["clock", "calculator"]
HIDDEN = ["data/sqlite/read_query", "data/sqlite/write_query"]


def test_what_the_model_is_shown_sees_the_listed_tools_only(registry):
    assert [t.name for t in registry.listed()] == LISTED
    assert registry.names() == LISTED
    assert [s.name for s in registry.specs()] == LISTED
    assert [t.name for t in registry] == LISTED
    assert len(registry) == 2
    assert "clock" in registry
    assert "data/sqlite/read_query" not in registry  # hidden: not "in" the registry
    assert registry.intents() == {"HassGetCurrentTime": "clock-intent"}


def test_hidden_sees_the_hidden_tools_only(registry):
    assert [t.name for t in registry.hidden()] == HIDDEN


def test_what_a_call_may_reach_sees_both(registry):
    assert registry.callable_names() == LISTED + HIDDEN
    assert registry.get("clock").name == "clock"
    assert registry.get("data/sqlite/read_query").name == "data/sqlite/read_query"
    assert registry.read_only("data/sqlite/read_query") and not registry.read_only("data/sqlite/write_query")
    assert registry.read_only("clock") and not registry.read_only("calculator")


def test_only_a_hidden_tool_may_be_named_without_its_category(registry):
    assert registry.get("read_query").name == "data/sqlite/read_query"
    assert registry.get("sqlite/read_query") is None  # a partial path is not a name


async def test_a_call_reaches_a_hidden_tool_but_an_unknown_name_offers_only_the_listed(registry):
    result = await registry.call("data/sqlite/read_query", {"query": "shoes"})
    assert result.ok and result.result == "rows for shoes"
    unknown = await registry.call("nope", {})
    assert not unknown.ok
    assert unknown.result == "Error: unknown tool 'nope'. Available tools: clock, calculator"


@pytest.mark.parametrize("hidden", [False, True])
def test_a_name_is_unique_across_both_sets(registry, hidden):
    with pytest.raises(ValueError, match="already registered"):
        registry.register(tool_from_function(read_query, name="data/sqlite/read_query"), hidden=hidden)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(tool_from_function(clock), hidden=hidden)


def test_unregister_removes_from_either_set(registry):
    registry.unregister("data/sqlite/write_query")
    registry.unregister("calculator")
    assert registry.callable_names() == ["clock", "data/sqlite/read_query"]
    assert registry.get("data/sqlite/write_query") is None


def test_filtered_picks_among_the_listed_and_keeps_the_hidden_hidden(registry):
    only_clock = registry.filtered(enabled=["clock", "data/sqlite/read_query"])
    assert only_clock.names() == ["clock"]  # enabling a hidden name does not list it
    assert [t.name for t in only_clock.hidden()] == HIDDEN  # nor does leaving one out drop it
    dropped = registry.filtered(disabled=["calculator", "data/sqlite/write_query"])
    assert dropped.names() == ["clock"]
    assert [t.name for t in dropped.hidden()] == ["data/sqlite/read_query"]


def test_direct_return_overrides_apply_to_the_listed_tools_only(registry):
    hidden_direct = tool_from_function(read_query, name="db/read", direct_return=True)
    registry.register(hidden_direct, hidden=True)
    out = registry.filtered(direct_return=["calculator", "data/sqlite/read_query"])
    assert [t.name for t in out if t.direct_return] == ["calculator"]
    assert {t.name: t.direct_return for t in out.hidden()} == {
        "data/sqlite/read_query": False,
        "data/sqlite/write_query": False,
        "db/read": True,  # a hidden tool keeps what it declares
    }


def test_an_empty_registry_and_one_with_only_hidden_tools_list_nothing():
    assert list(ToolRegistry()) == [] and len(ToolRegistry()) == 0
    only_hidden = ToolRegistry([], hidden=[tool_from_function(clock)])
    assert len(only_hidden) == 0 and not only_hidden.names() and "clock" not in only_hidden
    assert only_hidden.callable_names() == ["clock"] and only_hidden.get("clock") is not None
