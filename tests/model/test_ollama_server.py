"""The Ollama-protocol test server: wire format, errors, tool calls and prompt-cache reuse.

The first group needs no model: the ``<tool_call>`` filter and the request parsing are pure,
and the HTTP layer is driven through the official ``ollama`` client over an in-process ASGI
transport with a scripted engine, so the structured tool-call path is checked even though
the small model rarely takes it. The ``model`` group talks to the real server (one per
session, see conftest.py) with short prompts, temperature 0 and num_predict limits.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import ollama
import pytest

# The server's own dependencies (pinned in the dev requirements); without them this module
# reports a skip instead of breaking collection for the whole suite.
for _dep in ("jinja2", "starlette", "uvicorn"):
    pytest.importorskip(_dep, reason=f"{_dep} is needed by tools/testbed/ollama_server.py")

from tools.testbed import ollama_proto as proto  # noqa: E402
from tools.testbed.ollama_server import OllamaApp, ServedModel  # noqa: E402

MODEL = "qwen2.5-coder:1.5b"
NO_TOOLS = "qwen-notools"
FAST = {"temperature": 0, "num_ctx": 4096}
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression and return the result.",
        "parameters": {
            "type": "object",
            "required": ["expression"],
            "properties": {
                "expression": {"type": "string", "description": "Arithmetic expression, e.g. 2*(3+4)"}
            },
        },
    },
}
CALL_TEXT = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "23 * 47"}}\n</tool_call>'


def feed_all(f: proto.ToolCallFilter, text: str, step: int = 3) -> str:
    """Feed ``text`` in small pieces, as tokens arrive; return what was released as content."""
    return "".join(f.feed(text[i : i + step]) for i in range(0, len(text), step))


# --- pure helpers ------------------------------------------------------------------------------


def test_tool_call_block_becomes_structured_call() -> None:
    f = proto.ToolCallFilter(enabled=True)
    assert feed_all(f, "\n" + CALL_TEXT) == ""  # nothing leaks while the call is buffered
    content, calls = f.finish()
    assert content == ""
    assert calls == [{"function": {"name": "calculator", "arguments": {"expression": "23 * 47"}}}]


def test_two_blocks_give_two_calls() -> None:
    f = proto.ToolCallFilter(enabled=True)
    feed_all(f, CALL_TEXT + "\n" + CALL_TEXT.replace("23 * 47", "1 + 1"))
    _, calls = f.finish()
    assert [c["function"]["arguments"]["expression"] for c in calls] == ["23 * 47", "1 + 1"]


def test_each_call_is_ready_when_its_object_closes() -> None:
    """As Ollama's incremental parser: a call is sent as soon as its JSON is complete, not
    at the end of the reply (a client that needs one call can stop the generation there)."""
    f = proto.ToolCallFilter(enabled=True)
    second = CALL_TEXT.replace("23 * 47", "1 + 1")
    whole = CALL_TEXT + "\n" + second
    cut = whole.index("}}") + 2  # the first call's object has just closed
    feed_all(f, whole[: cut - 1])
    assert f.ready() == []  # one brace short: not yet
    feed_all(f, whole[cut - 1 : cut])
    assert [c["function"]["arguments"] for c in f.ready()] == [{"expression": "23 * 47"}]
    feed_all(f, whole[cut:-3])
    assert [c["function"]["arguments"] for c in f.ready()] == [{"expression": "1 + 1"}]
    feed_all(f, whole[-3:])
    assert f.ready() == [] and f.finish() == ("", [])  # each call given once, no tag left over


def test_text_after_a_taken_call_stays_content() -> None:
    f = proto.ToolCallFilter(enabled=True)
    feed_all(f, CALL_TEXT + "\nDone.")
    assert len(f.ready()) == 1
    assert f.finish() == ("Done.", [])


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"name": "calculator", "arguments": {"expression": "23 * 47"}}\n```',  # fenced JSON
        '{"name": "calculator", "arguments": {"expression": "23 * 47"}}',  # bare JSON
        "Sure! " + CALL_TEXT,  # a call that is not the first thing said
        "<tool>not the tag</tool>",  # diverges from the tag after a shared prefix
    ],
)
def test_anything_else_stays_content_untouched(reply: str) -> None:
    f = proto.ToolCallFilter(enabled=True)
    released = feed_all(f, reply)
    content, calls = f.finish()
    assert calls == []
    assert released + content == reply


def test_malformed_call_is_returned_as_content() -> None:
    bad = '<tool_call>\n{"name": "calculator", "arguments": {"expression": }\n</tool_call>'
    f = proto.ToolCallFilter(enabled=True)
    assert feed_all(f, bad) == ""
    assert f.finish() == (bad, [])


def test_without_tools_the_tag_is_plain_content() -> None:
    f = proto.ToolCallFilter(enabled=False)
    assert f.feed(CALL_TEXT) == CALL_TEXT
    assert f.finish() == ("", [])


def test_names_keep_alive_and_options() -> None:
    assert proto.canonical_name("Qwen2.5-Coder:1.5B") == proto.canonical_name("qwen2.5-coder:1.5b")
    assert proto.canonical_name("qwen-notools") == "qwen-notools:latest"
    assert proto.registry_name("qwen-notools") == "registry.ollama.ai/library/qwen-notools:latest"
    assert proto.parse_keep_alive(None) == 300
    assert proto.parse_keep_alive("1h30m") == 5400
    assert proto.parse_keep_alive(0) == 0 and proto.parse_keep_alive("0") == 0
    assert proto.parse_keep_alive(-1) is None and proto.parse_keep_alive("-1m") is None
    with pytest.raises(ValueError):
        proto.parse_keep_alive("5 minutes")
    opts = proto.parse_options(
        {"num_ctx": 2048.0, "seed": -1, "num_predict": -1, "stop": "\n", "mirostat": 1}
    )
    assert (opts.num_ctx, opts.seed, opts.num_predict, opts.stop) == (2048, None, None, ("\n",))
    with pytest.raises(proto.ProtocolError):
        proto.parse_options({"temperature": "hot"})


def test_template_renders_tool_turns_like_the_model_expects() -> None:
    source = (
        "{% for m in messages %}{{ m.role }}:{{ m.content }}"
        "{% for c in m.tool_calls or [] %}[{{ c.function.name }} {{ c.function.arguments | tojson }}]"
        "{% endfor %}|{% endfor %}{{ tools | tojson }}"
    )
    msgs = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"function": {"name": "f", "arguments": {"a": "<1>"}}}],
        }
    ]
    out = proto.ChatTemplate(source).render(msgs, [CALCULATOR])
    # Arguments objects are serialised as JSON, without Jinja's HTML escaping of "<".
    head, tools = out.split("|", 1)
    assert head == 'assistant:[f {"a": "<1>"}]'
    assert json.loads(tools) == [CALCULATOR]


# --- HTTP layer with a scripted engine (no model) ----------------------------------------------


class ScriptedEngine:
    """Stands in for the llama.cpp engine: replays one reply in token-sized pieces."""

    metadata = {"general.architecture": "qwen2", "qwen2.context_length": "32768", "general.file_type": "15"}
    template = proto.ChatTemplate("{{ messages }}")
    size, modified, n_params, n_ctx = 1, 0.0, 1, 4096

    def __init__(self, reply: str) -> None:
        self.reply = reply

    async def stream(self, job: Any):
        """Same contract as ``Engine.stream``: text pieces, then the counters."""
        for i in range(0, len(self.reply), 4):
            yield "text", self.reply[i : i + 4]
        yield "done", {"done_reason": "stop", "load_duration": 1, "prompt_eval_count": 3, "eval_count": 5}


def scripted_client(reply: str) -> ollama.AsyncClient:
    """The official client wired in-process to an app whose engine always says ``reply``."""
    app = OllamaApp(
        ScriptedEngine(reply), [ServedModel(MODEL, True, "0" * 64), ServedModel(NO_TOOLS, False, "1" * 64)]
    )
    return ollama.AsyncClient(
        host="http://testserver", transport=httpx.ASGITransport(app=app.asgi), timeout=10
    )


async def test_structured_tool_call_reaches_the_official_client() -> None:
    client = scripted_client(CALL_TEXT)
    parts = [
        p
        async for p in await client.chat(
            MODEL, messages=[{"role": "user", "content": "x"}], tools=[CALCULATOR], stream=True
        )
    ]
    calls = [c for p in parts for c in p.message.tool_calls or []]
    assert len(calls) == 1 and calls[0].function.name == "calculator"
    assert dict(calls[0].function.arguments) == {"expression": "23 * 47"}
    assert all(p.message.content == "" for p in parts)
    assert not parts[-1].message.tool_calls  # the call came in its own part, before the last
    assert parts[-1].done and parts[-1].done_reason == "stop" and parts[-1].total_duration > 0

    whole = await client.chat(
        MODEL, messages=[{"role": "user", "content": "x"}], tools=[CALCULATOR], stream=False
    )
    assert (
        whole.message.content == ""
        and whole.message.tool_calls[0].function.arguments["expression"] == "23 * 47"
    )


async def test_same_text_without_tools_is_content() -> None:
    client = scripted_client(CALL_TEXT)
    whole = await client.chat(MODEL, messages=[{"role": "user", "content": "x"}], stream=False)
    assert whole.message.content == CALL_TEXT and not whole.message.tool_calls


# --- the real server ---------------------------------------------------------------------------


def client_for(server) -> ollama.AsyncClient:
    """The official client, with a timeout (its default has none)."""
    return ollama.AsyncClient(host=server.url, timeout=120)


@pytest.mark.model
async def test_version_tags_show(ollama_server) -> None:
    async with httpx.AsyncClient(base_url=ollama_server.url, timeout=10) as http:
        assert (await http.get("/")).text == "Ollama is running"
        assert (await http.get("/api/version")).json()["version"].count(".") == 2
    client = client_for(ollama_server)
    tags = await client.list()
    by_name = {m.model: m for m in tags.models}
    assert set(by_name) == {MODEL, NO_TOOLS + ":latest"}
    details = by_name[MODEL].details
    assert (details.format, details.family, details.parameter_size, details.quantization_level) == (
        "gguf",
        "qwen2",
        "1.5B",
        "Q4_K_M",
    )
    show = await client.show(MODEL)
    assert show.capabilities == ["completion", "tools"]
    assert show.modelinfo["general.architecture"] == "qwen2"
    assert show.modelinfo["qwen2.context_length"] == 32768
    assert "<tool_call>" in show.template
    assert (await client.show(NO_TOOLS)).capabilities == ["completion"]
    assert (await client.show(NO_TOOLS + ":latest")).capabilities == ["completion"]


@pytest.mark.model
async def test_errors_are_ollamas(ollama_server) -> None:
    client = client_for(ollama_server)
    user = [{"role": "user", "content": "hi"}]
    with pytest.raises(ollama.ResponseError) as exc:
        await client.chat("llama3.2", messages=user)
    assert (exc.value.status_code, exc.value.error) == (
        404,
        'model "llama3.2" not found, try pulling it first',
    )
    with pytest.raises(ollama.ResponseError) as exc:
        await client.show("llama3.2")
    assert exc.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as exc:
        await client.chat(NO_TOOLS, messages=user, tools=[CALCULATOR])
    assert (exc.value.status_code, exc.value.error) == (
        400,
        "registry.ollama.ai/library/qwen-notools:latest does not support tools",
    )
    with pytest.raises(ollama.ResponseError) as exc:
        await client.chat(MODEL, messages=user, think=True)
    assert (exc.value.status_code, exc.value.error) == (400, f'"{MODEL}" does not support thinking')
    async with httpx.AsyncClient(base_url=ollama_server.url, timeout=10) as http:
        for body in (b"{not json", json.dumps({"messages": user}).encode()):
            r = await http.post("/api/chat", content=body)
            assert r.status_code == 400 and r.json()["error"]


@pytest.mark.model
async def test_streamed_chat_chunks_and_counters(ollama_server) -> None:
    client = client_for(ollama_server)
    messages = [{"role": "user", "content": "Count from 1 to 5, separated by commas."}]
    parts = [
        p
        async for p in await client.chat(
            MODEL, messages=messages, stream=True, options={**FAST, "num_predict": 24}
        )
    ]
    *chunks, final = parts
    assert len([c for c in chunks if c.message.content]) >= 3
    assert not any(c.done for c in chunks)
    assert "1" in "".join(c.message.content for c in chunks)
    assert final.done and final.done_reason in ("stop", "length") and final.message.content == ""
    assert final.prompt_eval_count > 0 and 0 < final.eval_count <= 24
    for key in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration"):
        assert isinstance(final[key], int) and final[key] > 0, key
    assert final.total_duration >= final.prompt_eval_duration + final.eval_duration
    assert final.created_at.endswith("Z")
    assert MODEL in {m.model for m in (await client.ps()).models}


@pytest.mark.model
async def test_tool_call_round_trip(ollama_server) -> None:
    messages = [
        {
            "role": "system",
            "content": "You are IRIS, a voice assistant. Answer briefly. Use tools when helpful.",
        },
        {"role": "user", "content": "What is 23 times 47? Use the calculator."},
    ]
    body = {
        "model": MODEL,
        "messages": messages,
        "tools": [CALCULATOR],
        "options": {**FAST, "num_predict": 64},
    }
    async with httpx.AsyncClient(base_url=ollama_server.url, timeout=120) as http:
        async with http.stream("POST", "/api/chat", json=body) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
            lines = [json.loads(line) async for line in r.aiter_lines() if line]
    calls = [c for line in lines for c in line["message"].get("tool_calls", [])]
    content = "".join(line["message"]["content"] for line in lines)
    assert lines[-1]["done"] and lines[-1]["done_reason"] == "stop"
    if calls:  # the model used <tool_call> tags: the server must have parsed them
        assert content.strip() == ""
        assert calls[0]["function"]["name"] == "calculator"
        assert isinstance(calls[0]["function"]["arguments"], dict)  # an object on the wire, not a string
    else:  # fenced or bare JSON: the server must pass it through untouched for IRIS to recover
        assert "calculator" in content and "23" in content and "47" in content

    # IRIS sends the call back structured, with the tool's result; the model then answers.
    messages += [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "calculator", "arguments": {"expression": "23 * 47"}}}],
        },
        {"role": "tool", "content": "1081", "tool_name": "calculator"},
    ]
    reply = await client_for(ollama_server).chat(
        MODEL, messages=messages, tools=[CALCULATOR], stream=False, options={**FAST, "num_predict": 48}
    )
    assert "1081" in reply.message.content and not reply.message.tool_calls
    # The system prompt, tool definitions and question were cached from the first request.
    assert reply.prompt_eval_count < lines[-1]["prompt_eval_count"] / 2


@pytest.mark.model
async def test_second_turn_reuses_the_prompt_cache(ollama_server) -> None:
    client = client_for(ollama_server)
    # A fresh nonce makes the first turn's prompt uncached whatever ran before.
    system = (
        f"Session {uuid.uuid4().hex}. You are IRIS, a friendly voice assistant on a Linux desktop. "
        "Keep every answer to one short sentence, with no lists, code or markdown: it is spoken aloud."
    )
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Name one primary color."}]
    t0 = time.perf_counter()
    first = await client.chat(MODEL, messages=messages, stream=False, options={**FAST, "num_predict": 12})
    t1 = time.perf_counter()
    messages += [first.message.model_dump(exclude_none=True), {"role": "user", "content": "Another one?"}]
    second = await client.chat(MODEL, messages=messages, stream=False, options={**FAST, "num_predict": 12})
    print(
        f"\nturn 1: {first.prompt_eval_count} prompt tokens in {first.prompt_eval_duration / 1e9:.2f} s "
        f"(request {t1 - t0:.2f} s); turn 2: {second.prompt_eval_count} in "
        f"{second.prompt_eval_duration / 1e9:.2f} s"
    )
    assert first.prompt_eval_count > 50
    # Tokens, not seconds: on a shared machine the durations say more about the neighbours.
    assert second.prompt_eval_count * 3 < first.prompt_eval_count


@pytest.mark.model
async def test_non_streaming_single_object(ollama_server) -> None:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Write a long story about a robot."}],
        "stream": False,
        "options": {**FAST, "num_predict": 4},
    }
    async with httpx.AsyncClient(base_url=ollama_server.url, timeout=120) as http:
        r = await http.post("/api/chat", json=body)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    obj = r.json()  # exactly one JSON document, not NDJSON
    assert obj["done"] is True and obj["done_reason"] == "length" and obj["eval_count"] == 4
    assert obj["message"]["role"] == "assistant" and obj["message"]["content"].strip()
    assert {
        "total_duration",
        "load_duration",
        "prompt_eval_count",
        "prompt_eval_duration",
        "eval_duration",
    } <= set(obj)
