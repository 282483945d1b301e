"""Per-turn tool retrieval: the ranker, the picker and what the model is sent."""

from __future__ import annotations

from iris_voice.config import LlmConfig, RetrievalConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.history import Bounds, Conversation
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.conversation.toolpick import LEAD, ToolPicker, previous_calls
from iris_voice.tools.registry import Tool, ToolRegistry, ToolSpec
from iris_voice.tools.repair import asks_conversion
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


def test_a_hidden_tool_a_listed_one_serves_is_not_added():
    clock = builtin("get_current_time", "Current time in a time zone or city.")
    reg = ToolRegistry(
        [clock],
        hidden=[
            mcp_tool("time/get_current_time", "Get current time in a specific timezone", "current time"),
            mcp_tool("time/convert_time", "Convert time between timezones", "convert a time between zones"),
        ],
    )
    picker = ToolPicker(reg, RetrievalConfig(min_score=0.1))
    ranked = {s.name: s.score for s in picker.index().rank("current time in Mumbai")}
    # the hidden clock outranks the listed one, yet it has the listed one's name: not added
    assert ranked["time/get_current_time"] > ranked["get_current_time"]
    assert "time/get_current_time" not in [t.name for t in picker.pick("current time in Mumbai", [])]
    # a hidden tool the listed one matches nearly as well is not added either
    convert = ranked["time/convert_time"]
    assert 0 < convert < ranked["get_current_time"] / 0.8
    assert "time/convert_time" not in [t.name for t in picker.pick("current time in Mumbai", [])]
    # one that clearly matches better is
    assert [t.name for t in picker.pick("convert 17:00 between timezones", [])] == ["time/convert_time"]
    # a time and two places ask for a conversion, which the listed clock (the time now) cannot do
    conversion = "If it's 8 am in New York, what time is it in Mumbai?"
    assert asks_conversion(conversion) and not asks_conversion("What time is it in Mumbai?")
    scores = {s.name: s.score for s in picker.index().rank(conversion)}
    assert scores["get_current_time"] >= scores["time/convert_time"] * 0.8  # it would have served
    assert "time/convert_time" in [t.name for t in picker.pick(conversion, [])]


def shop_registry() -> ToolRegistry:
    return ToolRegistry(
        [builtin("get_current_time", "The time now in a city.")],
        hidden=[
            mcp_tool("data/sqlite/read_query", "Execute a SELECT query on the SQLite database", SHOP),
            mcp_tool("data/sqlite/write_query", "Execute an INSERT, UPDATE, or DELETE query", SHOP),
            mcp_tool("data/sqlite/create_table", "Create a new table in the SQLite database", SHOP),
            mcp_tool("memory/delete_entities", "Delete entities", "remember facts about people"),
            mcp_tool("memory/create_entities", "Create entities", "remember facts about people"),
        ],
    )


def test_tools_that_change_something_are_shown_only_for_a_request_for_that_kind_of_change():
    picker = ToolPicker(shop_registry(), RetrievalConfig(tools_per_turn=5, min_score=0.1))
    names = lambda text: [t.name for t in picker.pick(text, [])]  # noqa: E731
    # a question is answered by reading: no writing tool is shown
    assert names("What products are in the shop database?") == ["data/sqlite/read_query"]
    assert names("What do you remember about Alice?") == []
    # "set" asks to change in place: write_query (first), not create_table
    setting = names("Set the stock of apples to 100 in the shop database.")
    assert setting[0] == "data/sqlite/write_query" and "data/sqlite/create_table" not in setting
    # remembering creates; nothing is deleted unless the words say so
    assert names("Remember that Bob likes chess.") == ["memory/create_entities"]
    assert "data/sqlite/write_query" not in names("Show the update history of the shop database.")
    assert "memory/delete_entities" in names("Forget everything you remember about Bob, delete it.")


def test_a_tool_that_makes_the_change_asked_is_kept_when_readers_rank_above_it():
    picker = ToolPicker(shop_registry(), RetrievalConfig(tools_per_turn=1, min_score=0.1))
    ranked = [s.name for s in picker.index().rank("Set the stock of apples in the shop database to 100.")]
    # the ranker puts a reader first; with room for one tool, the writer the words ask for is shown
    assert ranked.index("data/sqlite/read_query") < ranked.index("data/sqlite/write_query")
    assert [t.name for t in picker.pick("Set the stock of apples in the shop database to 100.", [])] == [
        "data/sqlite/write_query"
    ]


def test_which_tools_write_by_their_names_unless_their_server_says_read_only():
    from iris_voice.conversation.toolpick import asks_change, writes

    reg = shop_registry()
    assert writes(reg.get("data/sqlite/write_query")) and writes(reg.get("memory/create_entities"))
    assert not writes(reg.get("data/sqlite/read_query"))
    spec = ToolSpec("git_add_note", "x", {"type": "object"})
    listed = Tool(spec, builtin("x", "x").handler, read_only=True)
    assert not writes(listed)
    assert asks_change("Set the stock to 100") and not asks_change("What did I set the stock to?")
    assert asks_change("Please remember that Alice's favourite colour is green.")
    assert asks_change("Can you add honey to the shop database?")
    # a verb of changing used as a noun asks to be shown: no commit for "commit history"
    assert not asks_change("Show me the commit history of the garden planner repo.")
    assert not asks_change("Which notes did I record yesterday?")


def test_a_tool_without_parameters_is_shown_after_a_close_one_that_takes_arguments():
    bare = Tool(
        ToolSpec("data/sqlite/list_tables", "List all tables in the database", {"type": "object"}),
        mcp_tool("x", "x").handler,
        meta={"mode": "lazy", "server_description": SHOP},
    )
    reg = ToolRegistry([], hidden=[bare, mcp_tool("data/sqlite/read_query", "Query the database", SHOP)])
    picker = ToolPicker(reg, RetrievalConfig(min_score=0.1))
    ranked = [s.name for s in picker.index().rank("What products are in the shop database?")]
    assert ranked[0] == "data/sqlite/list_tables"  # the shorter document scores a little higher
    picked = [t.name for t in picker.pick("What products are in the shop database?", [])]
    assert picked == ["data/sqlite/read_query", "data/sqlite/list_tables"]
    # one that clearly matches better stays first
    assert picker.pick("List all tables in the shop database", [])[0].name == "data/sqlite/list_tables"


def test_a_brief_definition_keeps_what_a_call_needs_and_drops_the_rest():
    from iris_voice.conversation.toolpick import brief_definition

    long = (
        "Start timestamp for filtering commits. Accepts: ISO 8601 format (e.g., '2024-01-15T14:30:25'), "
        "relative dates (e.g., '2 weeks ago')."
    )
    definition = {
        "name": "dev/git/git_log",
        "description": "Shows the commit logs. Use max_count to limit them.",
        "parameters": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "title": "GitLog",
            "properties": {
                "start": {"type": "string", "description": long, "examples": ["yesterday"]},
                "max_count": {"type": "integer", "default": 10},
                # parameters called like the keywords that are dropped stay: they are names
                "title": {"type": "string", "enum": ["a", "b"]},
                "default": {"type": "boolean"},
            },
            "required": ["title"],
        },
    }
    assert brief_definition(definition) == {
        "name": "dev/git/git_log",
        "description": "Shows the commit logs.",
        "parameters": {
            "type": "object",
            "properties": {
                "start": {"type": "string", "description": "Start timestamp for filtering commits."},
                "max_count": {"type": "integer"},
                "title": {"type": "string", "enum": ["a", "b"]},
                "default": {"type": "boolean"},
            },
            "required": ["title"],
        },
    }


def test_a_long_first_sentence_is_cut_at_a_word():
    from iris_voice.conversation.toolpick import BRIEF_CHARS, brief_definition

    said = brief_definition({"description": "word " * 100})["description"]
    assert len(said) <= BRIEF_CHARS + 2 and said.endswith(" …") and "wor …" not in said


def test_retrieved_definitions_are_brief_unless_configured_full():
    from iris_voice.tools.registry import ToolSpec

    schema = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "SQL. Only SELECT."}},
    }
    tool = Tool(ToolSpec("data/sqlite/read_query", "Run SQL. Read only.", schema), lambda **_: "")
    reg = ToolRegistry([], hidden=[tool])
    brief = ToolPicker(reg, RetrievalConfig()).with_tools({"role": "user", "content": "Hi"}, [tool])
    full = ToolPicker(reg, RetrievalConfig(definitions="full")).with_tools(
        {"role": "user", "content": "Hi"}, [tool]
    )
    assert '"description":"Run SQL."' in brief["content"] and "Only SELECT" not in brief["content"]
    assert '"description":"Run SQL. Read only."' in full["content"] and "Only SELECT" in full["content"]
