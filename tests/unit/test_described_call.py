"""A call the model describes in words instead of making it: made, for a tool that only reads."""

from __future__ import annotations

from typing import Any

from iris_voice.config import LlmConfig, RetrievalConfig
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.history import Bounds, Conversation
from iris_voice.conversation.repairs import described_call
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.tools.registry import Tool, ToolRegistry, ToolSpec
from tests.support.fakes import ScriptedBackend

DESCRIBED = 'you can use the data/sqlite/describe_table function with the argument "products".'
RAN: list[tuple[str, dict[str, Any]]] = []


def tool(name: str, required: list[str], kind: str = "string") -> Tool:
    async def handler(**arguments: Any) -> str:
        RAN.append((name, arguments))
        return "[{'name': 'id'}, {'name': 'price'}]"

    props = {r: {"type": kind} for r in required}
    schema = {"type": "object", "properties": props, "required": required}
    return Tool(ToolSpec(name, f"{name} of the shop database", schema), handler, meta={"mode": "lazy"})


DESCRIBE = tool("data/sqlite/describe_table", ["table_name"])
TABLES = tool("data/sqlite/list_tables", [])
WRITE = tool("data/sqlite/write_query", ["query"])


def test_a_described_read_is_the_call_it_describes():
    shown = (DESCRIBE, TABLES, WRITE)
    assert described_call([DESCRIBED], shown) == ("data/sqlite/describe_table", {"table_name": "products"})
    assert described_call(["First call data/sqlite/list_tables."], shown) == ("data/sqlite/list_tables", {})
    assert described_call(["Use `data/sqlite/describe_table` with 'products'."], shown) == (
        "data/sqlite/describe_table",
        {"table_name": "products"},
    )


def test_no_call_is_guessed_from_a_description_that_does_not_say_it_all():
    shown = (DESCRIBE, TABLES, WRITE)
    # a tool that changes something: describing it is not asking for it
    assert described_call(['use data/sqlite/write_query with "DELETE FROM products"'], shown) is None
    # no value, or two, for its one argument; two tools named; a tool not shown
    assert described_call(["use the data/sqlite/describe_table function"], shown) is None
    assert described_call(['data/sqlite/describe_table with "products" or "customers"'], shown) is None
    assert described_call(["data/sqlite/describe_table or data/sqlite/list_tables"], shown) is None
    assert described_call([DESCRIBED], (TABLES,)) is None
    # the shop's own apostrophe is no quoted value
    assert described_call(["data/sqlite/describe_table shows the shop's table"], shown) is None
    assert described_call([DESCRIBED], (tool("data/sqlite/describe_table", ["limit"], "integer"),)) is None


async def test_the_chat_loop_makes_the_described_call_and_the_model_answers_from_it():
    RAN.clear()
    backend = ScriptedBackend(f"To describe the products table, {DESCRIBED}", "It has an id and a price.")
    loop = ChatLoop(
        backend,
        ToolRegistry([], hidden=[DESCRIBE, TABLES]),
        LlmConfig(),
        retrieval=RetrievalConfig(min_score=0.5),
    )
    trace = await ask(
        Assistant(loop, Conversation(Bounds())), "Describe the products table of the shop database."
    )
    assert RAN == [("data/sqlite/describe_table", {"table_name": "products"})]
    assert trace.reply.endswith("It has an id and a price.") and "describe_table" not in trace.reply
    assert len(backend.requests) == 2
