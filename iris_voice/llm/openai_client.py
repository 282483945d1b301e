"""A ``ChatBackend`` for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Used as boost mode's planner: llama.cpp's server, llama-cpp-python's, vLLM, LM Studio
or a cloud API. It streams Server-Sent Events over httpx with explicit timeouts, and
translates every failure once, in ``translate``, into an ``LlmError`` code, as
``client.py`` does for Ollama. It takes no tools: asked with tools it raises
``llm-no-tools``, which a ``ChatLoop`` in ``auto`` mode answers by switching to text
tool calls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from iris_voice import safejson
from iris_voice.errors import Code, LlmError
from iris_voice.llm.client import ChatChunk

log = logging.getLogger(__name__)


def _error_text(body: bytes) -> str:
    """The message of an error body: ``{"error": {"message": …}}``, ``{"error": "…"}`` or text."""
    try:
        data = safejson.loads(body)
    except (ValueError, UnicodeDecodeError):
        return " ".join(body.decode("utf-8", "replace").split())[:300]
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        err = err.get("message") or err.get("detail") or err
    return " ".join(str(err).split())[:300]


def translate(exc: BaseException, url: str, model: str, key_env: str = "") -> LlmError:
    """Map a transport exception or an HTTP error status to one LlmError (the only place)."""
    if isinstance(exc, LlmError):
        return exc
    if isinstance(exc, httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError | ConnectionError):
        return LlmError(
            Code.LLM_UNREACHABLE, f"cannot reach the OpenAI-compatible server at {url}: check boost.base_url"
        )
    if isinstance(exc, httpx.TimeoutException):
        return LlmError(
            Code.LLM_TIMEOUT, f"the server at {url} did not answer in time ({type(exc).__name__})"
        )
    if isinstance(exc, httpx.HTTPStatusError):
        status, text = exc.response.status_code, _error_text(exc.response.content)
        if status in (401, 403):
            where = f"${key_env}" if key_env else "no key (boost.api_key_env is empty)"
            return LlmError(Code.LLM_AUTH, f"the server at {url} refused the API key from {where}: {text}")
        if status == 404:
            return LlmError(
                Code.LLM_MODEL_MISSING, f"model {model!r} or the endpoint is not on {url}: {text}"
            )
        if status == 429:
            return LlmError(Code.LLM_RATE_LIMITED, f"the server at {url} is rate-limiting requests: {text}")
        return LlmError(Code.LLM_ERROR, f"the server at {url} answered {status}: {text}")
    return LlmError(Code.LLM_ERROR, f"unexpected error talking to {url}: {type(exc).__name__}: {exc}")


class OpenAIBackend:
    """Streams ``POST {base_url}/chat/completions`` (``stream: true``) as ``ChatChunk`` objects."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        key_env: str = "",
        temperature: float = 0.2,
        timeout_s: float = 60.0,
        connect_timeout_s: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"{model} at {self.base_url}"
        self.temperature = temperature
        self._key_env = key_env
        self._url = f"{self.base_url}/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # Each read may wait timeout_s (a slow prompt); the caller bounds the whole reply.
        self._timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        # One client for the backend's life: making one loads the TLS certificates (~60 ms
        # of CPU on the event loop), and its kept-alive connection saves a handshake a turn.
        self._http = httpx.AsyncClient(timeout=self._timeout, transport=transport)  # tests: MockTransport

    def _body(self, messages: Sequence[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            # Only role and content: Ollama-style extras (tool_name, images) are not OpenAI's.
            "messages": [{"role": m["role"], "content": m.get("content") or ""} for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": options.get("temperature", self.temperature),
        }
        if "num_predict" in options:
            body["max_tokens"] = options["num_predict"]
        return body

    async def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        options: dict[str, Any] | None = None,
    ) -> AsyncIterator[ChatChunk]:
        """Stream one reply; raises LlmError for every server or transport failure."""
        if tools:
            raise LlmError(
                Code.LLM_NO_TOOLS, f"{self.name}: IRIS sends tools to OpenAI-style servers as text"
            )
        body = self._body(messages, options or {})
        usage: dict[str, Any] = {}
        timings: dict[str, Any] = {}
        t0 = time.perf_counter()
        first: float | None = None
        deltas = 0
        try:
            async with self._http.stream("POST", self._url, json=body, headers=self._headers) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    resp.raise_for_status()
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # SSE comments, event names and keep-alive blank lines
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    obj = self._decode(data)
                    usage = obj.get("usage") or usage
                    timings = obj.get("timings") or timings  # llama.cpp's server adds these
                    for choice in obj.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content") or ""
                        if text:
                            first = first or time.perf_counter()
                            deltas += 1
                            yield ChatChunk(content=text)
        except (LlmError, GeneratorExit):
            raise
        except Exception as exc:
            raise translate(exc, self.base_url, self.model, self._key_env) from exc
        end = time.perf_counter()
        yield ChatChunk(
            done=True,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            # Servers that send no usage (llama-cpp-python's) stream one token per delta.
            completion_tokens=int(usage.get("completion_tokens") or deltas),
            # Server timings when it sends them; else measured here (time to first token).
            prompt_ms=float(timings.get("prompt_ms") or ((first or end) - t0) * 1000),
            eval_ms=float(timings.get("predicted_ms") or (end - (first or end)) * 1000),
        )

    def _decode(self, data: str) -> dict[str, Any]:
        try:
            obj = safejson.loads(data, limit=64)  # a chunk nests a few levels; a hostile one, thousands
        except ValueError:
            raise LlmError(
                Code.LLM_ERROR, f"{self.base_url} sent a stream line that is not JSON: {data[:120]!r}"
            ) from None
        if not isinstance(obj, dict):
            raise LlmError(Code.LLM_ERROR, f"{self.base_url} sent an unexpected stream line: {data[:120]!r}")
        if "error" in obj:
            raise LlmError(
                Code.LLM_ERROR, f"the server at {self.base_url} failed: {_error_text(data.encode())}"
            )
        return obj
