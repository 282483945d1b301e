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


# -- the loop: a constrained round where llm.choice asks for one ----------------------------


def shop_registry():
    from iris_voice.tools.registry import Tool, ToolRegistry

    async def read_query(**arguments: object) -> str:
        return (
            "[{'price': 4.5}, {'price': 3.0}, {'price': 2.0}, {'price': 1.0}, {'price': 9.0}, {'price': 7.0}]"
        )

    schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    meta = {"mode": "lazy", "server_description": "the shop database: products, prices (SQL)"}
    hidden = Tool(
        ToolSpec("data/sqlite/read_query", "Run SQL on the shop database", schema), read_query, meta=meta
    )
    listed = builtin_registry().listed()
    return ToolRegistry(listed, hidden=[hidden])


def assistant(backend, choice: str = "retrieved"):
    from iris_voice.config import LlmConfig, RetrievalConfig
    from iris_voice.conversation.chat import ChatLoop
    from iris_voice.conversation.history import Bounds, Conversation
    from iris_voice.conversation.responder import Assistant

    loop = ChatLoop(
        backend, shop_registry(), LlmConfig(choice=choice), retrieval=RetrievalConfig(min_score=0.5)
    )
    return Assistant(loop, Conversation(Bounds()))


async def test_a_turn_with_retrieved_tools_chooses_in_json_and_keeps_the_cached_prefix():
    from iris_voice.conversation.responder import ask
    from iris_voice.tools.choice import CHOICE_NOTE
    from tests.support.fakes import ScriptedBackend

    backend = ScriptedBackend(
        '{"tool": "data/sqlite/read_query", "arguments": {"query": "SELECT price FROM products"}}',
        "Tea costs 4.50 in the shop.",
        "Hello! How can I help?",
    )
    it = assistant(backend)
    trace = await ask(it, "How much does tea cost in the shop database?")
    assert [(c["name"], c["ok"]) for c in trace.tool_calls] == [("data/sqlite/read_query", True)]
    assert trace.reply == "Tea costs 4.50 in the shop."
    # the choice was made: the result is explained in words, with the tools still there
    assert backend.requests[1]["fmt"] is None and backend.requests[1]["tools"]
    asked = [m for m in backend.requests[1]["messages"] if m["role"] == "user"][-1]
    assert asked["content"].startswith("How much") and CHOICE_NOTE not in asked["content"]
    first = backend.requests[0]
    names = {b["properties"]["tool"]["const"] for b in first["fmt"]["anyOf"]}
    # the tools shown: the listed built-ins (not those shown on demand) and the retrieved one
    listed = [t.name for t in builtin_registry() if not t.on_demand]
    assert names == {*listed, "data/sqlite/read_query", NONE}
    assert first["messages"][-1]["content"].endswith(CHOICE_NOTE)
    # the listed tools go as before: the server's cached prefix is the same with or without a choice
    assert [t["function"]["name"] for t in first["tools"]] == listed
    # a turn retrieval adds nothing to is not constrained (llm.choice = "retrieved")
    await ask(it, "Hello!")
    assert (
        backend.requests[2]["fmt"] is None
        and CHOICE_NOTE not in backend.requests[2]["messages"][-1]["content"]
    )


async def test_a_server_that_ignores_format_is_read_as_written_and_asked_no_more():
    from iris_voice.conversation.responder import ask
    from tests.support.fakes import ScriptedBackend

    backend = ScriptedBackend("I can't look into the shop right now.", "Coffee is not in my notes.")
    it = assistant(backend, choice="always")
    trace = await ask(it, "How much does tea cost in the shop database?")
    assert trace.reply == "I can't look into the shop right now."
    assert backend.requests[0]["fmt"] is not None
    trace = await ask(it, "And how much is coffee in the shop database?")
    assert trace.reply == "Coffee is not in my notes."
    assert backend.requests[1]["fmt"] is None  # the fallback: today's path


async def test_an_answer_choice_is_spoken_while_it_is_written():
    from iris_voice.conversation.responder import ask
    from tests.support.fakes import ScriptedBackend

    answer = "The Mona Lisa was painted by Leonardo da Vinci. He worked on it for years."
    backend = ScriptedBackend(json.dumps({"tool": NONE, "answer": answer}))
    trace = await ask(assistant(backend, choice="always"), "Who painted the Mona Lisa?")
    assert trace.reply == answer and not trace.tool_calls


async def test_chosen_passes_the_answer_on_before_the_reply_ends():
    from iris_voice.llm.client import ChatChunk
    from iris_voice.tools.choice import chosen

    text = json.dumps({"tool": NONE, "answer": "Leonardo da Vinci painted it."})
    pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
    sent: list[int] = []

    async def reply():
        for i, piece in enumerate(pieces):
            sent.append(i)
            yield ChatChunk(content=piece, done=i == len(pieces) - 1)

    seen = []
    async for chunk in chosen(reply(), ["calculator"]):
        seen.append((len(sent), chunk.content))
    words = [(n, c) for n, c in seen if c]
    assert "".join(c for _, c in words) == "Leonardo da Vinci painted it."
    assert words[0][0] < len(pieces)  # the first words came out while the reply was still being read


async def test_a_server_that_refuses_a_format_is_asked_again_without_one():
    from iris_voice.conversation.responder import ask
    from iris_voice.errors import Code, LlmError
    from tests.support.fakes import ScriptedBackend

    refused = LlmError(Code.LLM_ERROR, 'the Ollama server answered 400: invalid format: expected "json"')
    backend = ScriptedBackend(refused, "Hello! How can I help?", "Fine, thanks.")
    it = assistant(backend, choice="always")
    trace = await ask(it, "Hello!")
    assert trace.reply == "Hello! How can I help?"
    assert backend.requests[0]["fmt"] is not None and backend.requests[1]["fmt"] is None
    await ask(it, "How are you?")
    assert backend.requests[2]["fmt"] is None


@pytest.mark.parametrize(
    ("version", "ok"), [("0.12.6", True), ("0.5.0", True), ("0.4.7", False), ("", False), ("1.0", True)]
)
def test_doctor_says_whether_the_server_takes_a_schema_as_format(version, ok):
    from iris_voice.app.doctor import choice_check

    passed, line = choice_check(version, "retrieved")
    assert passed is ok
    assert ("natively" in line) is not ok and line.startswith("constrained choice:")
