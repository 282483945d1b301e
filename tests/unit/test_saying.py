"""A short MCP result said as it is: one model round instead of two, and the model still
sees the result on the next turn."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial

import pytest

from iris_voice.config import LlmConfig, RetrievalConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.history import Bounds, Conversation
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.tools.mcp.saying import (
    MAX_CHARS,
    found_nothing,
    listing_label,
    say_done,
    say_known_about,
    say_result,
)
from iris_voice.tools.registry import NOTHING_FOUND, Tool, ToolRegistry, ToolSpec
from tests.support.fakes import ScriptedBackend

GIT_STATUS = (
    "Repository status:\nOn branch main\nUntracked files:\n"
    '  (use "git add <file>..." to include in what will be committed)\n\tplants.txt\n\n'
    'nothing added to commit but untracked files present (use "git add" to track)'
)


@pytest.mark.parametrize(
    ("result", "said"),
    [
        ("[{'price': 4.5}]", "Price: 4.5."),  # a Python server's repr() of one row
        ('[{"unit_price": 3.0}]', "Unit price: 3."),
        ("[{'COUNT(*)': 2}]", "2."),  # a column name nobody can say is left out
        ("[{'name': 'products'}, {'name': 'customers'}]", "Products and customers."),
        ("[{'name': 'Bob', 'city': 'Berlin'}, {'name': 'Ann', 'city': 'Paris'}]",
         "Name Bob, city Berlin; name Ann, city Paris."),
        ("[FILE] ideas.md\n[FILE] shopping.txt", "Ideas.md, shopping.txt."),
        ("# Ideas\n- a birdhouse\n- learn the guitar", "Ideas: a birdhouse, learn the guitar."),
        (GIT_STATUS, "Repository status: On branch main. Untracked files: plants.txt. "
                     "Nothing added to commit but untracked files present."),
        ("602", "602."),
    ],
)  # fmt: skip
def test_a_short_result_is_said_in_words_a_listener_takes_in(result, said):
    assert say_result(result) == said


def _moment(zone: str, stamp: str) -> dict[str, object]:
    return {"timezone": zone, "datetime": stamp, "day_of_week": "x", "is_dst": False}


@pytest.mark.parametrize(
    ("result", "said"),
    [
        (
            _moment("Asia/Tokyo", "2026-11-28T00:11:13+09:00"),
            "It is 12:11 AM on Saturday, November 28, 2026 in Tokyo.",
        ),
        (
            {
                "source": _moment("Europe/Berlin", "2026-11-29T14:30:00+01:00"),
                "target": _moment("America/New_York", "2026-11-29T08:30:00-05:00"),
                "time_difference": "-6.0h",
            },
            "2:30 PM in Berlin is 8:30 AM in New York.",
        ),
        (  # the target first in the object: the source is still said first
            {
                "target": _moment("Asia/Tokyo", "2026-11-30T02:00:00+09:00"),
                "source": _moment("Europe/London", "2026-11-29T17:00:00+00:00"),
            },
            "5:00 PM on Sunday in London is 2:00 AM on Monday in Tokyo.",
        ),
    ],
)  # fmt: skip
def test_a_time_in_a_zone_and_a_conversion_are_said_in_one_sentence(result, said):
    # as MCP's time server writes them: indented JSON, longer than other results said
    assert say_result(json.dumps(result, indent=2)) == said


@pytest.mark.parametrize(
    "result",
    [
        "",
        "[]",  # nothing found: the model says what that means
        '{"entities": [], "relations": []}',  # a JSON object of another shape
        '{"timezone": "Asia/Tokyo", "datetime": "the 28th"}',  # no time a clock can read
        '{"source": {"timezone": "Asia/Tokyo", "datetime": "2026-11-28T00:11:13+09:00"}}',  # half a pair
        "Commit history:\nCommit: 49fc35e739d289306aa4f73df15e4e363db0cc40\nAuthor: IRIS",
        "Unstaged changes:",  # said alone, a label would claim changes that are not there
        "[{'name': 'x'}]" * 1 + "\n" + "line\n" * 12,  # too many lines
        "word " * (MAX_CHARS // 5 + 1),  # too long to take in by ear
        "See https://example.org/page for details",
        "\x1b[31mred\x1b[0m",  # a terminal's colours
        "[{'rows': [1, 2]}]",  # not flat rows
        "[{'a': 1}, {'a': 2}, {'a': 3}, {'a': 4}, {'a': 5}, {'a': 6}]",  # too many rows
        # failures a server reports as text: the model reads them and can mend its call
        "Database error: no such table: coffee_shop",
        "Error: ENOENT: no such file or directory, open '/home/user/notes/ideas.txt'",
        "Access denied - path outside allowed directories: /home/user/notes not in /srv/notes",
        'Error executing tool read_query: near "SELEC": syntax error',
        "fatal: bad revision 'HEAD~1'",
    ],
)
def test_what_a_listener_could_not_take_in_is_left_to_the_model(result):
    assert say_result(result) is None


def shop(result: str, name: str = "data/sqlite/read_query") -> ToolRegistry:
    """A hidden MCP tool that answers ``result``, as the manager registers one."""

    async def handler(**arguments: object) -> str:
        return result

    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    meta = {"mode": "lazy", "server_description": "the shop database: products, prices (SQL)"}
    tool = Tool(ToolSpec(name, "Run SQL on the shop database", schema), handler, meta=meta, say=say_result)
    return ToolRegistry([], hidden=[tool])


def assistant(backend: ScriptedBackend, reg: ToolRegistry) -> Assistant:
    loop = ChatLoop(backend, reg, LlmConfig(), retrieval=RetrievalConfig(min_score=0.5))
    return Assistant(loop, Conversation(Bounds()))


async def test_a_short_answer_is_said_in_one_round_and_the_next_turn_sees_it():
    call = [("data/sqlite/read_query", {"query": "SELECT price FROM products WHERE name = 'tea'"})]
    backend = ScriptedBackend(call, "Coffee costs 3.", "Hello!")
    it = assistant(backend, shop("[{'price': 4.5}]"))
    trace = await ask(it, "How much does tea cost in the shop database?")
    assert trace.reply == "Price: 4.5."
    assert trace.rounds == 1 and len(backend.requests) == 1
    # The next turn reads the result (and calls the tool again for "and coffee?", as after
    # any tool's own sentence); the turn after that reads what was said, too.
    await ask(it, "And coffee?")
    result = {"role": "tool", "content": "[{'price': 4.5}]", "tool_name": "data/sqlite/read_query"}
    assert result in backend.requests[1]["messages"]
    await ask(it, "Thanks!")
    assert {"role": "assistant", "content": "Price: 4.5."} in backend.requests[2]["messages"]


async def test_a_result_the_model_must_explain_takes_a_second_round():
    call = [("data/sqlite/read_query", {"query": "SELECT * FROM products WHERE name = 'kiwi'"})]
    backend = ScriptedBackend(call, "There is no kiwi in the shop.")
    trace = await ask(assistant(backend, shop("[]")), "How much does a kiwi cost in the shop database?")
    assert trace.reply == "There is no kiwi in the shop."
    assert trace.rounds == 2


ENTITY = json.dumps([{"name": "Bob", "entityType": "person", "observations": ["likes chess"]}], indent=2)


@pytest.mark.parametrize(
    ("result", "said"),
    [
        (ENTITY, "Saved: Bob, likes chess."),  # MCP's memory server echoes what it stored
        ('[{"entityName": "Tom", "addedObservations": ["allergic to peanuts"]}]',
         "Saved: Tom, allergic to peanuts."),
        ('{"entities": [{"name": "Ann", "observations": ["birthday May 3rd", "sister"]}]}',
         "Saved: Ann, birthday May 3rd and sister."),
        ("[{'affected_rows': 1}]", "Done: 1 row changed."),
        ("[{'affected_rows': 3}]", "Done: 3 rows changed."),
        ("Files staged successfully", "Files staged successfully."),
        ("Created branch 'beans' from 'main'", "Created branch 'beans' from 'main'."),
    ],
)  # fmt: skip
def test_what_a_change_did_is_said_when_its_result_shows_it(result, said):
    assert say_done(result) == said


@pytest.mark.parametrize(
    "result",
    [
        "[]",  # nothing new stored (Bob was there already): the model goes on
        '[{"entityName": "Bob", "addedObservations": []}]',
        "[{'affected_rows': 0}]",  # no row matched: the model explains
        "Changes committed successfully with hash 0f3a9c1d2e4b5a6978877665",
        "Successfully wrote to /home/user/notes/ideas.md",
        "Error executing tool create_entities: bad input",
        "Database error: no such table: product",
        '[{"name": "Bob"}]',  # a name and nothing stored under it
        "Tables: products",  # a line that says nothing was done
    ],
)
def test_a_change_whose_result_does_not_show_what_was_done_is_left_to_the_model(result):
    assert say_done(result) is None


async def test_a_change_is_confirmed_from_its_result_in_one_round():
    call = [("data/sqlite/write_query", {"query": "UPDATE products SET stock = 100 WHERE name = 'apples'"})]
    backend = ScriptedBackend(call, "I set the stock of apples to 100.", "Fine.", "Hello!")
    reg = shop("[{'affected_rows': 1}]", name="data/sqlite/write_query")
    it = assistant(backend, reg)
    trace = await ask(it, "Set the stock of apples to 100 in the shop database.")
    assert trace.tool_calls[0]["ok"]
    assert trace.reply == "Done: 1 row changed."
    assert trace.rounds == 1 and len(backend.requests) == 1
    await ask(it, "Is that all?")  # the next turn reads the call and its result
    result = {"role": "tool", "content": "[{'affected_rows': 1}]", "tool_name": "data/sqlite/write_query"}
    assert result in backend.requests[1]["messages"]
    await ask(it, "Thanks!")  # and the turn after that what was said
    assert {"role": "assistant", "content": "Done: 1 row changed."} in backend.requests[2]["messages"]


async def test_a_change_that_stored_nothing_new_takes_a_second_round():
    call = [("memory/create_entities", {"entities": [{"name": "Bob", "observations": ["likes chess"]}]})]
    follow = [
        ("memory/add_observations", {"observations": [{"entityName": "Bob", "contents": ["likes chess"]}]})
    ]
    backend = ScriptedBackend(call, follow, "I'll remember that Bob likes chess.")
    reg = shop("[]", name="memory/create_entities")
    reg.register(shop('[{"entityName": "Bob", "addedObservations": ["likes chess"]}]',
                      name="memory/add_observations").hidden()[0], hidden=True)  # fmt: skip
    trace = await ask(assistant(backend, reg), "Remember that Bob likes chess.")
    assert [c["name"] for c in trace.tool_calls] == ["memory/create_entities", "memory/add_observations"]
    assert trace.reply == "Saved: Bob, likes chess."
    assert trace.rounds == 2


async def test_a_request_for_two_changes_is_left_to_the_model_after_the_first():
    call = [("dev/git/git_create_branch", {"branch_name": "beans"})]
    backend = ScriptedBackend(call, "I created the branch beans; switching needs another step.")
    reg = shop("Created branch 'beans' from 'main'", name="dev/git/git_create_branch")
    trace = await ask(assistant(backend, reg), "Create a branch called beans and switch to it.")
    assert trace.tool_calls[0]["ok"]
    assert trace.rounds == 2
    assert trace.reply.startswith("I created the branch beans")


async def test_a_conversion_is_said_in_one_round():
    conversion = {
        "source": _moment("Asia/Tokyo", "2026-11-29T17:00:00+09:00"),
        "target": _moment("Europe/London", "2026-11-29T08:00:00+00:00"),
        "time_difference": "-9.0h",
    }
    call = [("time/convert_time", {"source_timezone": "Asia/Tokyo", "time": "17:00"})]
    backend = ScriptedBackend(call, "The time difference is -9 hours.")
    reg = shop(json.dumps(conversion, indent=2), name="time/convert_time")
    trace = await ask(assistant(backend, reg), "Convert 17:00 Tokyo time to London time.")
    assert trace.reply == "5:00 PM in Tokyo is 8:00 AM in London."
    assert trace.rounds == 1 and len(backend.requests) == 1


def test_a_tool_without_parameters_says_what_it_lists():
    assert listing_label("data/sqlite/list_tables") == "tables"
    assert listing_label("files/list_allowed_directories") == "allowed directories"
    assert listing_label("memory/read_graph") == "graph"
    assert listing_label("get_all") == ""
    tables = "[{'name': 'products'}, {'name': 'customers'}]"
    # "what products are in the shop?" answered with the tables: they are said as tables
    assert say_result(tables, label="tables") == "Tables: products and customers."
    assert say_result(tables) == "Products and customers."
    assert say_result("[{'name': 'products'}]", label="tables") == "Tables: products."


def test_a_rounds_changes_storing_under_one_name_are_said_as_one():
    added = '[{"entityName": "Bob", "addedObservations": ["plays chess"]}]'
    assert say_done(ENTITY, added) == "Saved: Bob, likes chess and plays chess."
    assert say_done(ENTITY, ENTITY) == "Saved: Bob, likes chess."
    assert say_done(ENTITY, "[]") is None  # one of them stored nothing: the model explains


GRAPH = {
    "entities": [
        {"type": "entity", "name": "Anna", "entityType": "person", "observations": ["birthday May 3rd"]}
    ],
    "relations": [{"type": "relation", "from": "Anna", "to": "Tom", "relationType": "sister_of"}],
}


def test_what_a_memory_holds_of_the_names_asked_for_is_said():
    # MCP's memory server answers search_nodes and open_nodes with indented JSON
    assert say_result(json.dumps(GRAPH, indent=2)) == "Anna: birthday May 3rd. Anna sister of Tom."
    assert (
        say_result(json.dumps({"entities": GRAPH["entities"], "relations": []})) == "Anna: birthday May 3rd."
    )
    # nothing found is the model's to explain; so is the whole graph (read_graph: no parameters)
    assert say_result(json.dumps({"entities": [], "relations": []}, indent=2)) is None
    assert say_result(json.dumps(GRAPH, indent=2), label="graph") is None
    many = {"entities": [{"name": f"n{i}", "observations": ["x"]} for i in range(6)], "relations": []}
    assert say_result(json.dumps(many)) is None


EMPTY = json.dumps({"entities": [], "relations": []}, indent=2)


def test_a_lookup_that_found_nothing_is_told_apart_from_an_empty_query():
    assert found_nothing(EMPTY)
    assert not found_nothing("[]")  # a query's filter may be wrong: the model mends it
    assert not found_nothing(json.dumps(GRAPH)) and not found_nothing("{}") and not found_nothing("")


async def test_a_lookup_that_found_nothing_is_said_so_in_one_round():
    call = [("memory/search_nodes", {"query": "Alice"})]
    backend = ScriptedBackend(call, "I remember Alice as a young girl who loved to play with dolls.")
    trace = await ask(
        assistant(backend, shop(EMPTY, name="memory/search_nodes")), "What do you remember about Alice?"
    )
    assert trace.reply == NOTHING_FOUND
    assert trace.rounds == 1 and len(backend.requests) == 1


BOB = {"entities": [{"type": "entity", "name": "Bob", "observations": ["likes chess"]}], "relations": []}


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        ("Recall what you know about my sister Anna.", "Anna: birthday May 3rd. Anna sister of Tom."),
        ("What do you know about Tom?", "Anna sister of Tom."),  # a relation names him
        ("Tell me about Bob.", None),  # not in this memory: the model says so
        ("What do you remember?", None),  # no name asked for: the whole memory is the model's
        ("Anything about birthdays?", None),
    ],
)
def test_what_a_whole_memory_holds_of_a_name_asked_for_is_said(request_, said):
    assert say_known_about(json.dumps(GRAPH, indent=2), request_) == said
    event = {"entities": [{"name": "Anna's birthday", "entityType": "event", "observations": ["May 3rd"]}]}
    assert say_known_about(json.dumps(event), "Recall what you know about my sister Anna.") == (
        "Anna's birthday: May 3rd."
    )
    assert say_known_about('[{"name": "Anna"}]', "What about Anna?") is None  # not a memory's answer
    stop = {"entities": [{"name": "Anna", "observations": ["Her birthday is a special day."]}]}
    assert say_known_about(json.dumps(stop), "What about Anna?") == "Anna: Her birthday is a special day."
    bare = {"entities": [{"name": "Anna", "entityType": "person", "observations": []}, *event["entities"]]}
    assert say_known_about(json.dumps(bare), "What do you know about Anna?") == "Anna's birthday: May 3rd."


async def test_a_whole_memory_read_for_a_name_is_said_in_one_round_and_the_model_sees_it():
    whole = shop(json.dumps(GRAPH, indent=2), name="memory/read_graph").hidden()[0]
    reg = ToolRegistry([], hidden=[replace(whole, say=partial(say_result, label="graph"))])
    backend = ScriptedBackend([("memory/read_graph", {})], "Anna was born in May.", "You're welcome.")
    it = assistant(backend, reg)
    trace = await ask(it, "Recall what you know about my sister Anna.")
    assert trace.reply == "Anna: birthday May 3rd. Anna sister of Tom." and trace.rounds == 1
    await ask(it, "Thanks!")
    assert any("birthday May 3rd" in str(m.get("content")) for m in backend.requests[-1]["messages"])


async def test_a_whole_memory_and_an_empty_lookup_in_one_round_are_said_from_the_memory():
    whole = shop(json.dumps(GRAPH, indent=2), name="memory/read_graph").hidden()[0]
    reg = ToolRegistry([], hidden=[replace(whole, say=partial(say_result, label="graph"))])
    reg.register(shop(EMPTY, name="memory/open_nodes").hidden()[0], hidden=True)
    calls = [("memory/read_graph", {}), ("memory/open_nodes", {"names": ["my sister"]})]
    backend = ScriptedBackend(calls, "Anna was born in May.")
    trace = await ask(assistant(backend, reg), "Recall what you know about my sister Anna.")
    assert trace.reply == "Anna: birthday May 3rd. Anna sister of Tom." and trace.rounds == 1


async def test_after_an_earlier_answer_an_empty_lookup_goes_to_the_model():
    # read_graph takes no parameters: the whole graph, without the name asked for, goes to the model
    whole = shop(json.dumps(BOB, indent=2), name="memory/read_graph").hidden()[0]
    reg = ToolRegistry([], hidden=[replace(whole, say=partial(say_result, label="graph"))])
    reg.register(shop(EMPTY, name="memory/open_nodes").hidden()[0], hidden=True)
    first = [("memory/read_graph", {})]
    then = [("memory/open_nodes", {"names": ["Anna"]})]
    backend = ScriptedBackend(first, then, "Anna's birthday is May 3rd.")
    trace = await ask(assistant(backend, reg), "Recall what you know about my sister Anna.")
    assert [c["name"] for c in trace.tool_calls] == ["memory/read_graph", "memory/open_nodes"]
    assert trace.reply == "Anna's birthday is May 3rd."


async def test_an_empty_lookup_for_an_action_asked_goes_to_the_model():
    # "open" ranks memory's open_nodes: the request is an action IRIS cannot do, not a lookup
    call = [("memory/open_nodes", {"names": ["garage door"]})]
    backend = ScriptedBackend(call, "Sorry, I can't open doors.")
    trace = await ask(assistant(backend, shop(EMPTY, name="memory/open_nodes")), "Open the garage door.")
    assert trace.reply == "Sorry, I can't open doors." and trace.rounds == 2


async def test_an_empty_lookup_beside_an_answer_is_passed_over_and_the_answer_said():
    reg = shop(EMPTY, name="memory/open_nodes")
    reg.register(shop("# Ideas\n- a birdhouse", name="files/read_file").hidden()[0], hidden=True)
    calls = [("memory/open_nodes", {"names": ["ideas"]}), ("files/read_file", {"path": "ideas.md"})]
    backend = ScriptedBackend(calls, "Your ideas: a birdhouse.")
    trace = await ask(assistant(backend, reg), "What is in my ideas note?")
    assert trace.reply == "Ideas: a birdhouse." and trace.rounds == 1


async def test_a_round_of_empty_lookups_only_goes_to_the_model():
    reg = shop(EMPTY, name="memory/open_nodes")
    reg.register(shop(EMPTY, name="memory/search_nodes").hidden()[0], hidden=True)
    calls = [("memory/open_nodes", {"names": ["Ann"]}), ("memory/search_nodes", {"query": "Ann"})]
    backend = ScriptedBackend(calls, "I know nothing about Ann yet.")
    trace = await ask(assistant(backend, reg), "What do you know about Ann?")
    assert trace.reply == "I know nothing about Ann yet." and trace.rounds == 2
