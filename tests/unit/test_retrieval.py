"""Per-turn tool retrieval: the ranker, the picker and what the model is sent."""

from __future__ import annotations

from iris_voice.config import LlmConfig, RetrievalConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.history import Bounds, Conversation
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.conversation.toolpick import LEAD, ToolPicker, previous_calls
from iris_voice.tools.registry import Tool, ToolRegistry, ToolSpec
from iris_voice.tools.retrieval import ToolIndex, words
from tests.support.fakes import ScriptedBackend

OBJ = {"type": "object", "properties": {"query": {"type": "string", "description": "SQL to run"}}}


def mcp_tool(name: str, description: str, server: str = "") -> Tool:
    """A tool as the MCP manager registers a lazy server's: a path name and the server's words."""

    async def handler(**arguments: object) -> str:
        return f"{name} ran with {arguments}"

    meta = {"mode": "lazy", "server_description": server}
    return Tool(ToolSpec(name, description, OBJ), handler, meta=meta)


def builtin(name: str, description: str, words_: tuple[str, ...] = ()) -> Tool:
    async def handler(**arguments: object) -> str:
        return f"{name} says hi"

    return Tool(ToolSpec(name, description, {"type": "object", "properties": {}}), handler, words=words_)


SHOP = "the shop database: products, prices, stock (SQL)"
NOTES = "the notes folder: read and write text files"


def lazy_tools() -> list[Tool]:
    return [
        mcp_tool("data/sqlite/read_query", "Execute a SELECT query on the SQLite database", SHOP),
        mcp_tool("data/sqlite/list_tables", "List all tables in the SQLite database", SHOP),
        mcp_tool("files/read_text_file", "Read the complete contents of a file", NOTES),
        mcp_tool("files/write_file", "Create a new file or overwrite one", NOTES),
        mcp_tool("dev/git/git_log", "Shows the commit logs", "a git repository"),
    ]


def registry() -> ToolRegistry:
    listed = [builtin("set_timer", "Start a countdown timer.", (r"timers?|alarms?",))]
    return ToolRegistry(listed, hidden=lazy_tools())


def test_words_split_names_drop_stop_words_and_stem():
    assert words("What's on my shopping_list? readQuery") == ["shop", "list", "read", "query"]
    assert words("timers commits remembered") == ["timer", "commit", "remember"]


def test_the_index_ranks_the_tool_whose_words_the_request_uses_first():
    index = ToolIndex(lazy_tools())
    assert index.rank("What is the price of coffee in the shop database?")[0].name.startswith("data/sqlite/")
    assert index.rank("Show me the commit logs of the repository")[0].name == "dev/git/git_log"
    assert index.rank("read my notes file")[0].name.startswith("files/")


def test_a_request_that_matches_nothing_scores_zero_and_gets_no_tool():
    index = ToolIndex(lazy_tools())
    assert all(s.score == 0 for s in index.rank("Turn on the lamp."))
    assert index.top("Turn on the lamp.", 3, min_score=0.1) == []


def test_top_keeps_at_most_k_above_the_floor():
    index = ToolIndex(lazy_tools())
    top = index.top("query the shop database products", 2, min_score=0.1)
    assert len(top) == 2 and all(s.name.startswith("data/sqlite/") for s in top)
    assert index.top("query the shop database products", 2, min_score=1000) == []


def test_the_picker_shows_hidden_tools_only_and_follows_the_config():
    reg = registry()
    picker = ToolPicker(reg, RetrievalConfig(tools_per_turn=2, min_score=0.5))
    picked = [t.name for t in picker.pick("How many products are in the shop database?", [])]
    assert picked and "set_timer" not in picked and len(picked) <= 2
    # a listed tool that matches better answers it: nothing is added to the prompt
    assert picker.pick("Start a countdown timer on the database", []) == []
    assert ToolPicker(reg, RetrievalConfig(enabled=False)).pick("shop database products", []) == []


def test_the_index_is_rebuilt_when_tools_change():
    reg = registry()
    picker = ToolPicker(reg, RetrievalConfig(min_score=0.5))
    assert picker.pick("weather forecast for Paris", []) == []
    reg.register(mcp_tool("weather/forecast", "Weather forecast for a city", "the weather"), hidden=True)
    assert [t.name for t in picker.pick("weather forecast for Paris", [])][0] == "weather/forecast"


def test_a_follow_up_gets_the_hidden_tools_the_previous_turn_called():
    history = [
        {"role": "user", "content": "price of tea in the shop database?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "data/sqlite/read_query"}}],
        },
        {"role": "tool", "content": "4.5", "tool_name": "data/sqlite/read_query"},
        {"role": "assistant", "content": "Tea costs 4.50."},
    ]
    assert previous_calls(history) == ["data/sqlite/read_query"]
    assert (
        previous_calls([*history, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hi"}])
        == []
    )
    picker = ToolPicker(registry(), RetrievalConfig(min_score=0.5))
    assert [t.name for t in picker.pick("And coffee?", history)] == ["data/sqlite/read_query"]


async def test_picked_tools_ride_on_this_turns_user_message_and_the_history_keeps_the_words():
    reg = registry()
    backend = ScriptedBackend(
        [("data/sqlite/read_query", {"query": "SELECT price FROM products"})], "It costs 7.90.", "Hello!"
    )
    loop = ChatLoop(backend, reg, LlmConfig(), retrieval=RetrievalConfig(min_score=0.5))
    assistant = Assistant(loop, Conversation(Bounds()))
    trace = await ask(assistant, "What is the price of coffee in the shop database?")
    assert trace.tool_calls[0]["ok"] and trace.tool_calls[0]["name"] == "data/sqlite/read_query"
    assert "data/sqlite/read_query" in trace.extra["retrieved"]
    first = backend.requests[0]
    # the listed tools (the cached prefix) do not change; the definitions come after the history
    assert [t["function"]["name"] for t in first["tools"]] == ["set_timer"]
    user = first["messages"][-1]
    assert (
        user["role"] == "user"
        and LEAD in user["content"]
        and '"name":"data/sqlite/read_query"' in user["content"]
    )
    await ask(assistant, "Hello there")
    third = backend.requests[2]
    assert third["tools"] == first["tools"]
    assert third["messages"][1] == {
        "role": "user",
        "content": "What is the price of coffee in the shop database?",
    }
    assert third["messages"][-1] == {"role": "user", "content": "Hello there"}


async def test_a_hidden_tool_named_without_its_category_still_runs():
    result = await registry().call("read_query", {"query": "SELECT 1"})
    assert result.ok and result.name == "data/sqlite/read_query"
    assert not (await registry().call("nonexistent_tool", {})).ok
