"""The OpenAI-compatible backend: SSE parsing and error translation, over httpx.MockTransport
(the real server, llama-cpp-python's, is in test_model_boost.py)."""

from __future__ import annotations

import json

import httpx
import pytest

from iris_voice.errors import LlmError
from iris_voice.llm.openai_client import OpenAIBackend


def sse(*objs) -> bytes:
    lines = [f"data: {json.dumps(o)}\n\n" for o in objs]
    return (": keep-alive\n\n" + "".join(lines) + "data: [DONE]\n\n").encode()


def delta(text):
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def backend(handler, **kw) -> OpenAIBackend:
    return OpenAIBackend("http://planner:8000/v1/", "big", transport=httpx.MockTransport(handler), **kw)


async def collect(b: OpenAIBackend, **kw):
    return [c async for c in b.stream([{"role": "user", "content": "hi", "tool_name": "x"}], None, **kw)]


async def test_streams_deltas_and_reads_usage():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["url"] = str(request.url)
        seen["auth"] = request.headers.get("authorization")
        seen["body"] = json.loads(request.content)
        body = sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
            delta("SUMMARY: "),
            delta("Hello."),
            {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
        )
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    chunks = await collect(backend(handler, api_key="k3y", temperature=0.4), options={"num_predict": 50})
    assert "".join(c.content for c in chunks) == "SUMMARY: Hello."
    assert chunks[-1].done and (chunks[-1].prompt_tokens, chunks[-1].completion_tokens) == (12, 3)
    assert seen["url"] == "http://planner:8000/v1/chat/completions"
    assert seen["auth"] == "Bearer k3y"
    body = seen["body"]
    assert body["model"] == "big" and body["stream"] is True and body["max_tokens"] == 50
    assert body["temperature"] == 0.4
    assert body["messages"] == [{"role": "user", "content": "hi"}]  # Ollama-only keys dropped


@pytest.mark.parametrize(
    ("status", "payload", "code", "words"),
    [
        (401, {"error": {"message": "Incorrect API key"}}, "llm-auth", "$PLANNER_KEY: Incorrect API key"),
        (404, {"error": {"message": "model big does not exist"}}, "llm-model-missing", "model 'big'"),
        (429, {"error": "slow down"}, "llm-rate-limited", "slow down"),
        (500, {"detail": "boom"}, "llm-error", "answered 500: boom"),
    ],
)
async def test_http_errors_become_llm_errors(status, payload, code, words):
    b = backend(lambda r: httpx.Response(status, json=payload), key_env="PLANNER_KEY")
    with pytest.raises(LlmError) as err:
        await collect(b)
    assert err.value.code == code and words in err.value.message


async def test_a_broken_stream_is_an_llm_error():
    b = backend(lambda r: httpx.Response(200, content=b"data: {not json\n\n"))
    with pytest.raises(LlmError) as err:
        await collect(b)
    assert err.value.code == "llm-error" and "not JSON" in err.value.message
    b = backend(lambda r: httpx.Response(200, content=sse({"error": {"message": "context overflow"}})))
    with pytest.raises(LlmError) as err:
        await collect(b)
    assert "context overflow" in err.value.message


async def test_unreachable_server_names_the_url():
    b = OpenAIBackend("http://127.0.0.1:9/v1", "big", connect_timeout_s=2)
    with pytest.raises(LlmError) as err:
        await collect(b)
    assert err.value.code == "llm-unreachable" and "http://127.0.0.1:9/v1" in err.value.message


async def test_tools_are_refused_so_a_chat_loop_switches_to_text_mode():
    b = backend(lambda r: httpx.Response(500))
    with pytest.raises(LlmError) as err:
        async for _ in b.stream([{"role": "user", "content": "x"}], [{"type": "function"}]):
            pass
    assert err.value.code == "llm-no-tools"
