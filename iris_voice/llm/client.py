"""The chat backend Protocol and its Ollama adapter.

The loop never imports ``ollama``: it sees ``ChatBackend.stream`` yielding
``ChatChunk`` objects. Every failure of the server is translated here, once, into an
``LlmError`` with a stable code and a message that names the address and the fix.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import ollama

from iris_voice.config import LlmConfig
from iris_voice.errors import Code, LlmError
from iris_voice.llm.thinking import ThinkSplitter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChatChunk:
    """One streamed piece of the model's reply."""

    content: str = ""
    """Text delta (may be empty)."""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    """Structured calls parsed by the server: (name, arguments)."""
    done: bool = False
    """True on the last chunk, which carries the counters below."""
    prompt_tokens: int = 0
    """Prompt tokens the server evaluated (cached prefix excluded)."""
    completion_tokens: int = 0
    """Tokens the model generated."""
    prompt_ms: float = 0.0
    """Server-side prompt evaluation time."""
    eval_ms: float = 0.0
    """Server-side generation time."""
    thinking: str = ""
    """Reasoning text of thinking models: logged, never spoken."""


class ChatBackend(Protocol):
    """A chat model that streams replies and may call tools."""

    name: str
    """Address or label for messages and traces."""

    def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        options: dict[str, Any] | None = None,
    ) -> AsyncIterator[ChatChunk]:
        """Stream one reply to ``messages``; tools in Ollama's format or None; ``options``
        override the configured model options (e.g. ``num_predict`` for a warm-up).

        A backend whose ``formats`` attribute is True also takes ``fmt=``, a JSON Schema the
        reply must follow (Ollama's ``format``); the loop passes it to no other."""
        ...


@dataclass
class ModelInfo:
    """What ``/api/show`` says about a model."""

    name: str
    capabilities: list[str] = field(default_factory=list)
    context_length: int | None = None


def keep_alive_value(value: str) -> str | float:
    """Ollama reads a bare number as seconds but parses a string as a Go duration, where
    "-1" (forever) is invalid: send numbers as numbers, durations ("30m") as strings."""
    try:
        return float(value)
    except ValueError:
        return value


def translate(exc: BaseException, host: str, model: str) -> LlmError:
    """Map a client or transport exception to one LlmError (the single place this happens)."""
    if isinstance(exc, LlmError):
        return exc
    if isinstance(exc, ConnectionError | httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError):
        return LlmError(
            Code.LLM_UNREACHABLE,
            f"cannot reach the Ollama server at {host}: start it with 'ollama serve' "
            "or set llm.host / OLLAMA_HOST to where it runs",
        )
    if isinstance(exc, httpx.TimeoutException):
        return LlmError(
            Code.LLM_TIMEOUT, f"the Ollama server at {host} did not answer in time ({type(exc).__name__})"
        )
    if isinstance(exc, ollama.ResponseError):
        text = str(exc.error)
        if exc.status_code == 404 or "not found" in text:
            return LlmError(
                Code.LLM_MODEL_MISSING, f"model {model!r} is not on {host}: run 'ollama pull {model}'"
            )
        if "does not support tools" in text:
            return LlmError(Code.LLM_NO_TOOLS, f"model {model!r} does not support tools ({text})")
        return LlmError(Code.LLM_ERROR, f"the Ollama server at {host} answered {exc.status_code}: {text}")
    return LlmError(Code.LLM_ERROR, f"unexpected error talking to {host}: {type(exc).__name__}: {exc}")


class OllamaBackend:
    """``ChatBackend`` over ``ollama.AsyncClient`` and ``/api/chat`` with explicit timeouts."""

    def __init__(self, cfg: LlmConfig) -> None:
        self.cfg = cfg
        self.name = f"{cfg.model} at {cfg.host}"
        self.formats = True
        """Takes ``fmt`` (Ollama's ``format``, a JSON Schema since 0.5)."""
        # The ollama client's default timeout is none: a dead server would hang a turn forever.
        timeout = httpx.Timeout(cfg.request_timeout_s, connect=cfg.connect_timeout_s)
        self._client = ollama.AsyncClient(host=cfg.host, timeout=timeout)
        # The version probe's client, made on the first probe and kept: making an httpx client
        # loads the TLS certificates (~60 ms of CPU on the event loop), and ``iris status``
        # probes each time (start-up, which never probes, does not pay for it).
        self._probe: httpx.AsyncClient | None = None

    def _options(self) -> dict[str, Any]:
        return {"num_ctx": self.cfg.num_ctx, "temperature": self.cfg.temperature}

    async def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        options: dict[str, Any] | None = None,
        fmt: dict[str, Any] | None = None,
    ) -> AsyncIterator[ChatChunk]:
        """Stream a reply (``fmt``: a JSON Schema it must follow); raises LlmError for
        every server or transport failure."""
        cfg = self.cfg
        request = {
            "model": cfg.model,
            "messages": list(messages),
            "tools": list(tools) if tools else None,
            "stream": True,
            # Said either way: a thinking model (Qwen3) left to its default reasons for
            # seconds before its first word. Ollama refuses only ``true`` for other models.
            "think": cfg.think,
            "options": {**self._options(), **(options or {})},
            "keep_alive": keep_alive_value(cfg.keep_alive),
        }
        if fmt is not None:
            request["format"] = fmt
        think = ThinkSplitter()  # reasoning some servers still write into the content
        parts: AsyncIterator[Any] | None = None
        try:
            parts = await self._first_part(request)
            async for part in parts:
                msg = part.message
                calls = tuple(
                    (c.function.name, dict(c.function.arguments or {})) for c in (msg.tool_calls or [])
                )
                content, thinking = think.feed(msg.content or "")
                if thinking:
                    log.debug("thinking (not spoken): %r", thinking)
                if part.done:
                    tail, _ = think.flush()
                    yield ChatChunk(
                        content=content + tail,
                        tool_calls=calls,
                        done=True,
                        prompt_tokens=part.prompt_eval_count or 0,
                        completion_tokens=part.eval_count or 0,
                        prompt_ms=(part.prompt_eval_duration or 0) / 1e6,
                        eval_ms=(part.eval_duration or 0) / 1e6,
                    )
                else:
                    yield ChatChunk(
                        content=content, tool_calls=calls, thinking=(msg.thinking or "") + thinking
                    )
        except (LlmError, GeneratorExit):
            raise
        except Exception as exc:
            raise translate(exc, cfg.host, cfg.model) from exc
        finally:
            if parts is not None:
                try:
                    await parts.aclose()  # type: ignore[attr-defined]  # an async generator
                except Exception as exc:  # a connection that failed while closing: nothing to keep
                    log.debug("closing the reply: %s", exc)

    async def _first_part(self, request: dict[str, Any]) -> AsyncIterator[Any]:
        """The reply's parts, sending the request a second time if the connection closed
        before any answer came.

        The client reuses kept-alive connections; a server that closes an idle one (its
        keep-alive timeout) just as a request goes out leaves that request unanswered and
        unread (``RemoteProtocolError``). Nothing was evaluated, so one more try on a new
        connection is safe; after the first part, a closed connection is an error.
        """
        try:
            return await self._opened(request)
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            log.info("the model server closed the connection before answering (%s): sending again", exc)
        return await self._opened(request)

    async def _opened(self, request: dict[str, Any]) -> AsyncIterator[Any]:
        """Send ``request`` and wait for the first part (the client's stream is lazy)."""
        iterator = aiter(await self._client.chat(**request))
        try:
            first = await anext(iterator)
        except StopAsyncIteration:
            return _replay([])
        return _replay([first], iterator)

    async def version(self) -> str:
        """The server's version string."""
        try:
            if self._probe is None:
                self._probe = httpx.AsyncClient(timeout=self.cfg.connect_timeout_s)
            r = await self._probe.get(f"{self.cfg.host}/api/version")
            r.raise_for_status()
            return str(r.json().get("version", "?"))
        except Exception as exc:
            raise translate(exc, self.cfg.host, self.cfg.model) from exc

    async def show(self) -> ModelInfo:
        """Capabilities and context length of the configured model."""
        try:
            info = await self._client.show(self.cfg.model)
        except Exception as exc:
            raise translate(exc, self.cfg.host, self.cfg.model) from exc
        model_info = dict(info.modelinfo or {})
        ctx = next((int(v) for k, v in model_info.items() if k.endswith(".context_length")), None)
        return ModelInfo(self.cfg.model, list(info.capabilities or []), ctx)


async def _replay(head: list[Any], rest: AsyncIterator[Any] | None = None) -> AsyncIterator[Any]:
    """``head``'s items, then the rest of the stream (closed when this one is: a reply
    left early ends its request, and the server stops generating)."""
    try:
        for item in head:
            yield item
        if rest is not None:
            async for item in rest:
                yield item
    finally:
        if rest is not None and (close := getattr(rest, "aclose", None)) is not None:
            await close()
