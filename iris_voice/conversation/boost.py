"""Boost mode: a planner model directs the local model's tool calls.

Per request (up to ``boost.max_loops`` planner loops):

1. The planner — any chat model, no tools parameter — reads the request, the loop
   number, the earlier failed attempts and the tools written out as text, and answers
   ``SUMMARY:`` or ``ANALYSIS:`` + ``GUIDANCE:`` (``plan.py``).
2. SUMMARY: its sentences go to the user while the planner is still writing; the local
   model is not called.
3. GUIDANCE: the local model (``ChatLoop.run_rounds``, native tools) runs the turn with
   the plan as an extra message after the user's. Its sentences are held back until it
   calls a tool; if it calls none, its answer is dropped and the planner is asked again
   with that feedback.
4. An invalid reply costs a loop. After the last loop, or at once when the planner
   fails or times out, the local model answers on its own: the user always gets one.

``Boost`` is a ``Producer`` like the chat loop, so the events, the fallback reply and
the history (user message, tool calls, reply; never the plan) are ``run_turn``'s,
exactly as in a direct turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from iris_voice.config import BoostConfig, Config
from iris_voice.conversation.chat import ChatLoop
from iris_voice.conversation.plan import (
    Attempt,
    Plan,
    PlanStream,
    guidance_message,
    planner_prefix,
    planner_request,
    short,
)
from iris_voice.conversation.trace import TurnTrace
from iris_voice.conversation.turn import Turn
from iris_voice.errors import Code, ConfigError, LlmError
from iris_voice.events import ExecutionPath
from iris_voice.llm.client import ChatBackend, ChatChunk, OllamaBackend
from iris_voice.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

PLANNER_MAX_TOKENS = 400
"""Cap on one planner reply: a SUMMARY or a plan is a few sentences."""
_END = object()  # the planner's stream ended normally

_GENERIC = {"get", "set", "list", "current", "tool", "tools", "execute", "category", "in", "the", "of"}


def may_need_tools(text: str, registry: ToolRegistry) -> bool:
    """A cheap guess (a few regexes, microseconds, no model) whether a request may need a tool.

    True on a digit, on one of the words a tool declares (``Tool.words``: "timer",
    "plus", "tomorrow"…), or on a word of a tool's name (``weather`` for ``get_weather``).
    It errs towards True: a false positive costs one planner call; a false negative goes
    to the local model, which still has the tools.
    """
    if any(ch.isdigit() for ch in text):
        return True
    for tool in registry:
        if any(re.search(rf"\b(?:{w})s?\b", text, re.I) for w in tool.words):
            return True
    words = set(re.findall(r"[a-z]+", text.lower()))
    for name in registry.names():
        parts = set(re.split(r"[^a-z]+", name.lower())) - _GENERIC
        if words & {p for p in parts if len(p) > 2}:
            return True
    return False


def planner_backend(cfg: Config) -> ChatBackend:
    """The planner's backend from ``[boost]``; a missing API key is a ConfigError naming its key."""
    b = cfg.boost
    if b.backend == "openai":
        from iris_voice.llm.openai_client import OpenAIBackend

        key = None
        if b.api_key_env:
            key = os.environ.get(b.api_key_env)
            if not key:
                raise ConfigError(
                    [f"boost.api_key_env: the environment variable {b.api_key_env} is not set or empty"],
                    "environment",
                )
        return OpenAIBackend(
            b.base_url,
            b.model,
            api_key=key,
            key_env=b.api_key_env,
            temperature=b.temperature,
            timeout_s=b.timeout_s,
            connect_timeout_s=min(cfg.llm.connect_timeout_s, b.timeout_s),
        )
    llm = cfg.llm.model_copy(
        update={
            "host": b.base_url or cfg.llm.host,
            "model": b.model or cfg.llm.model,
            "temperature": b.temperature,
            "request_timeout_s": b.timeout_s,
            "connect_timeout_s": min(cfg.llm.connect_timeout_s, b.timeout_s),
            "think": False,
        }
    )
    return OllamaBackend(llm)


class Boost:
    """A planner in front of the chat loop: a ``Producer`` of a turn's sentences."""

    def __init__(self, chat: ChatLoop, planner: ChatBackend, cfg: BoostConfig) -> None:
        self.chat = chat
        self.planner = planner
        self.cfg = cfg
        self._prefix = planner_prefix(chat.registry.specs(), cfg.tool_format)

    def wants(self, text: str) -> bool:
        """Whether the planner takes a request (``boost.when``)."""
        return self.cfg.when == "always" or may_need_tools(text, self.chat.registry)

    async def warmup(self) -> None:
        """Fill the planner's prompt cache (a planner failure is only logged)."""
        msgs = [*self._prefix, {"role": "user", "content": "Request: hi"}]
        try:
            async with asyncio.timeout(self.cfg.timeout_s):
                async for _ in self.planner.stream(msgs, None, {"num_predict": 1}):
                    pass
        except (LlmError, TimeoutError) as exc:
            log.warning("boost planner %s did not warm up: %s", self.planner.name, exc)

    # -- the loops ----------------------------------------------------------------------
    async def produce(self, turn: Turn) -> AsyncIterator[str]:
        """The turn's sentences: the planner's summary, or the guided local model's answer;
        the local model alone when the planner does not want the turn."""
        text, trace = turn.text, turn.trace
        if not self.wants(text):
            trace.extra["boost"] = {"used": False, "reason": "no tool words in the request"}
            async with contextlib.aclosing(self.chat.run_rounds(turn)) as rounds:
                async for sentence in rounds:
                    yield sentence
            return
        trace.execution_path = ExecutionPath.BOOST
        rec: dict[str, Any] = {"used": True, "planner": self.planner.name, "loops": [], "final": ""}
        rec["planner_tokens"] = {"prompt": 0, "completion": 0}
        trace.extra["boost"] = rec
        attempts: list[Attempt] = []
        for n in range(1, self.cfg.max_loops + 1):
            entry: dict[str, Any] = {"loop": n}
            rec["loops"].append(entry)
            outcome: dict[str, Any] = {}
            ask = self._ask_planner(text, n, attempts, trace, entry, outcome)
            async with contextlib.aclosing(ask) as replies:
                async for sentence in replies:
                    yield sentence
            plan: Plan | None = outcome.get("plan")
            if entry["type"] == "summary":
                rec["final"] = "summary"
                return
            if plan is None:  # error or timeout: the planner is no help this turn
                rec["fallback"] = f"planner {entry['type']}"
                break
            if plan.kind == "invalid":
                attempts.append(Attempt(short(outcome["raw"]), "it did not start with SUMMARY: or GUIDANCE:"))
                continue
            entry["guidance"] = short(plan.guidance)
            async with contextlib.aclosing(self._execute(turn, plan, trace, entry)) as run:
                async for sentence in run:
                    yield sentence
            if entry["tool_calls"]:
                rec["final"] = "guidance"
                return
            attempts.append(
                Attempt(
                    short(f"GUIDANCE: {plan.guidance}"),
                    "the local model called no tool and answered "
                    f"{short(entry.get('dropped', ''), 120)!r}; name the exact tool and its arguments",
                )
            )
        else:
            rec["fallback"] = f"{self.cfg.max_loops} planner loops without a result"
        rec["final"] = "direct"
        log.info("boost: direct answer (%s)", rec["fallback"])
        t0 = time.perf_counter()
        async with contextlib.aclosing(self.chat.run_rounds(turn)) as rounds:
            async for sentence in rounds:
                yield sentence
        rec["direct_ms"] = round((time.perf_counter() - t0) * 1000, 1)

    async def _ask_planner(
        self,
        text: str,
        n: int,
        attempts: list[Attempt],
        trace: TurnTrace,
        entry: dict[str, Any],
        outcome: dict[str, Any],
    ) -> AsyncIterator[str]:
        """One planner reply: streams summary sentences; fills ``entry`` (trace) and ``outcome``."""
        request = planner_request(text, n, self.cfg.max_loops, attempts)
        msgs = [*self._prefix, {"role": "user", "content": request}]
        t0 = time.perf_counter()
        # The planner runs in its own task with its own deadline, so the deadline never
        # fires inside the consumer (e.g. while a summary sentence is being spoken).
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=PLANNER_MAX_TOKENS + 8)
        task = asyncio.create_task(self._pump(msgs, queue), name=f"boost-planner-{n}")
        reader = PlanStream()
        failure: BaseException | None = None
        try:
            while True:
                item = await queue.get()
                if item is _END:
                    break
                if isinstance(item, BaseException):
                    failure = item
                    break
                chunk: ChatChunk = item
                if chunk.done:
                    entry["prompt_tokens"], entry["completion_tokens"] = (
                        chunk.prompt_tokens,
                        chunk.completion_tokens,
                    )
                    rec = trace.extra["boost"]["planner_tokens"]
                    rec["prompt"] += chunk.prompt_tokens
                    rec["completion"] += chunk.completion_tokens
                if chunk.content and "first_token_ms" not in entry:
                    entry["first_token_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                    if trace.first_token_ms is None:
                        trace.first_token_ms = trace.elapsed_ms()
                for sentence in reader.feed(chunk.content):
                    yield sentence
                if reader.done:
                    break  # the summary is complete; whatever follows is not spoken
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            entry["planner_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        if failure is not None and not reader.committed:
            entry["type"] = "timeout" if isinstance(failure, TimeoutError) else "error"
            entry["error"] = short(str(failure) or type(failure).__name__)
            log.warning("boost planner %s: %s", entry["type"], entry["error"])
            return
        plan, rest = reader.finish()
        for sentence in rest:
            yield sentence
        entry["type"] = plan.kind
        if plan.kind == "summary" and not reader.spoken:
            entry["type"] = "invalid"  # a SUMMARY with nothing to say
            plan = Plan("invalid")
        outcome["plan"], outcome["raw"] = plan, reader.text

    async def _pump(self, msgs: list[dict[str, Any]], queue: asyncio.Queue[Any]) -> None:
        """Stream the planner's reply into ``queue``, then _END or the exception."""
        try:
            async with asyncio.timeout(self.cfg.timeout_s):
                async for chunk in self.planner.stream(msgs, None, {"num_predict": PLANNER_MAX_TOKENS}):
                    await queue.put(chunk)
            await queue.put(_END)
        except (LlmError, TimeoutError) as exc:
            await queue.put(exc)
        except Exception as exc:  # a planner bug must not end the turn: the local model answers
            log.exception("boost planner failed")
            await queue.put(LlmError(Code.LLM_ERROR, f"planner failed: {type(exc).__name__}: {exc}"))

    async def _execute(
        self, turn: Turn, plan: Plan, trace: TurnTrace, entry: dict[str, Any]
    ) -> AsyncIterator[str]:
        """The local model runs the turn with the plan; yields its sentences.

        Sentences are held back until a tool is called, so an unguided answer is never spoken.
        """
        note = guidance_message(plan)
        turn.messages.append(note)
        calls_before, t0 = len(trace.tool_calls), time.perf_counter()
        tokens_before = (trace.prompt_tokens, trace.completion_tokens)
        held: list[str] = []
        try:
            async with contextlib.aclosing(self.chat.run_rounds(turn)) as rounds:
                async for sentence in rounds:
                    if len(trace.tool_calls) > calls_before:
                        for h in held:
                            yield h
                        held.clear()
                        yield sentence
                    else:
                        held.append(sentence)
        finally:
            # The plan is for this turn only: it never enters the history.
            for i, m in enumerate(turn.messages):
                if m is note:
                    del turn.messages[i]
                    break
            entry["executor_ms"] = round((time.perf_counter() - t0) * 1000, 1)
            entry["executor_tokens"] = {
                "prompt": trace.prompt_tokens - tokens_before[0],
                "completion": trace.completion_tokens - tokens_before[1],
            }
            entry["tool_calls"] = [c["name"] for c in trace.tool_calls[calls_before:]]
        if len(trace.tool_calls) > calls_before:
            for h in held:  # a tool was called in the last round, with nothing said after it
                yield h
        else:
            entry["dropped"] = " ".join(held)


def build_boost(cfg: Config, chat: ChatLoop) -> Boost:
    """A Boost over ``chat`` with the planner ``[boost]`` describes."""
    return Boost(chat, planner_backend(cfg), cfg.boost)
