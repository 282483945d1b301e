"""The single-stage tool-calling loop.

One model both decides which tools to call and phrases the answer: stream a reply;
if it calls tools (structured ``tool_calls``, or a call written as text), run them,
append the results and ask again — at most ``llm.max_tool_calls`` calls per turn, then
one last round without tools. The reply is yielded sentence by sentence while the
model is still writing, with tool-call syntax held back so it is never spoken.

The prompt prefix (system prompt + tools) never changes between turns, so the server
reuses its prompt cache; history is bounded by turns and tokens and reset when idle.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from iris_voice.config import LlmConfig
from iris_voice.errors import LlmError
from iris_voice.events import Event, SentenceReady, ToolCalled, TurnFinished, TurnStarted
from iris_voice.llm.client import ChatBackend
from iris_voice.llm.render import manifest, render
from iris_voice.llm.sentences import SentenceSplitter, split_sentences
from iris_voice.llm.textcalls import SpeakableFilter, extract_calls, strip_markup
from iris_voice.llm.trace import TurnTrace
from iris_voice.tools.registry import CALL_LEAD_IN, ToolRegistry, ToolResult, spoken

log = logging.getLogger(__name__)

FALLBACK_REPLY = "Sorry, I could not work that out."
LIMIT_NOTE = "Answer my question now in one short sentence, using the tool results above. Do not call tools."


Producer = Callable[[list[dict[str, Any]], TurnTrace], AsyncIterator[str]]
"""What makes a turn's sentences from its messages: ``ChatLoop.run_rounds`` or a wrapper
around it (boost mode). It may append to the turn's messages, which become its history."""


def speakable(sentence: str) -> str:
    """Drop markdown emphasis and inline-code marks that a speech engine would read out,
    a tool result's call lead-in copied in front of the answer, and text with no word."""
    text = " ".join(sentence.replace("`", "").replace("**", "").split())
    if text.startswith(CALL_LEAD_IN):
        text = text[len(CALL_LEAD_IN) :].lstrip()
    # Leftovers of a call written around a structured one ("{ }") have nothing to say.
    return text if any(c.isalnum() for c in text) else ""


class ChatLoop:
    """Runs turns of a conversation against a ``ChatBackend`` with a ``ToolRegistry``."""

    def __init__(
        self,
        backend: ChatBackend,
        registry: ToolRegistry,
        cfg: LlmConfig,
        publish: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self.registry = registry
        self.cfg = cfg
        self.mode = "text" if cfg.tool_mode == "text" else "native"
        self._publish = publish or (lambda _e: None)
        self._clock = clock
        self.history: list[list[dict[str, Any]]] = []
        self._open_reply: str | None = None  # what the last turn said, if it ends with a tool result
        self._last_turn_end = 0.0
        self._rendered: tuple[tuple[str, ...], list[dict[str, Any]]] | None = None

    # -- prompt -----------------------------------------------------------------
    @property
    def _native_tools(self) -> list[dict[str, Any]]:
        """The tools in Ollama's format, rendered again only when the registry changed (eager
        MCP servers add theirs after start); identical text keeps the server's prompt cache."""
        names = tuple(self.registry.names())
        if self._rendered is None or self._rendered[0] != names:
            self._rendered = (names, render(self.registry.specs(), "ollama"))
        return self._rendered[1]

    def system_message(self) -> dict[str, Any]:
        """The constant system message for the current tool mode."""
        text = self.cfg.system_prompt
        if self.mode == "text" and len(self.registry):
            text += "\n\n" + manifest(self.registry.specs(), self.cfg.text_format)
        return {"role": "system", "content": text}

    def _messages(self, turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self.system_message(), *(m for t in self.history for m in t), *turn]

    def _remember(self, turn: list[dict[str, Any]], open_reply: str | None = None) -> None:
        """Add a turn to the history. ``open_reply`` is what a turn that ends with a tool
        result said: it stays open while it is the last turn (see ``record_turn``), and gets
        its spoken reply as an assistant message once another turn follows — measured with
        Qwen2.5-Coder-1.5B, four fast-path turns in a row, each ending with a tool result,
        made the model answer the next chat question with nothing at all."""
        if self.cfg.history_turns == 0:
            return
        if self._open_reply is not None and self.history:
            self.history[-1].append({"role": "assistant", "content": self._open_reply})
        self._open_reply = open_reply
        self.history.append(turn)
        del self.history[: -self.cfg.history_turns]
        # A rough 4-characters-per-token estimate keeps the context well inside num_ctx.
        while (
            len(self.history) > 1
            and sum(len(json.dumps(t)) for t in self.history) / 4 > self.cfg.history_tokens
        ):
            self.history.pop(0)

    def reset(self) -> None:
        """Forget the conversation."""
        self.history.clear()
        self._open_reply = None

    def amend_last_reply(self, heard: str) -> None:
        """After a barge-in, keep only what the user actually heard of the last reply.

        The loop records every sentence it produced; the speaker knows which ones
        played. With nothing heard, the whole turn is forgotten.
        """
        if self.history and self._open_reply is not None:  # a tool's own sentence was cut off
            if heard:
                self._open_reply = heard
            else:
                self.history.pop()
                self._open_reply = None
            return
        if not self.history or self.history[-1][-1].get("role") != "assistant":
            return
        if heard:
            self.history[-1][-1] = {"role": "assistant", "content": heard}
        else:
            self.history.pop()

    def record_turn(self, text: str, results: list[ToolResult]) -> None:
        """Remember a turn answered without the model (the intent fast path).

        It is stored as a tool turn of the current mode — the user's words, the tool
        call, its result — so a follow-up ("…and in Paris?") has the context. Like a
        direct-return turn, it ends with the tool's result, which is what was said:
        measured with Qwen2.5-1.5B, a trailing assistant sentence ("It is 11:01 PM … in
        Tokyo.") is copied for the follow-up with the place swapped and the time wrong,
        while after a tool result the model calls the tool again, with Paris.
        """
        if self.history and self._clock() - self._last_turn_end > self.cfg.history_idle_reset_s:
            self.reset()
        turn: list[dict[str, Any]] = [{"role": "user", "content": text}]
        calls = "\n".join(
            f"<tool_call>\n{json.dumps({'name': r.name, 'arguments': r.arguments}, ensure_ascii=False)}"
            "\n</tool_call>"
            for r in results
        )
        self._append_results(turn, calls if self.mode == "text" else "", results)
        self._remember(turn, open_reply=" ".join(self._spoken(results)))
        self._last_turn_end = self._clock()

    # -- turns ------------------------------------------------------------------
    async def warmup(self) -> None:
        """Load the model and fill the server's prompt cache with the constant prefix."""
        msgs = [self.system_message(), {"role": "user", "content": "Hi"}]
        tools = self._native_tools if self.mode == "native" and self._native_tools else None
        try:
            async for _ in self.backend.stream(msgs, tools, {"num_predict": 1}):
                pass
        except LlmError as exc:
            if exc.code == "llm-no-tools" and self.cfg.tool_mode == "auto":
                self.mode = "text"
                await self.warmup()
                return
            raise

    async def ask(self, text: str) -> TurnTrace:
        """Run one turn to the end and return its trace."""
        trace = TurnTrace(text=text)
        async for _ in self.sentences(text, trace):
            pass
        return trace

    async def sentences(
        self, text: str, trace: TurnTrace | None = None, *, producer: Producer | None = None
    ) -> AsyncIterator[str]:
        """Run one turn, yielding the reply sentence by sentence.

        If the consumer stops early (barge-in), only the sentences it received are
        kept in the history. LlmError propagates; the failed turn is not remembered.
        ``producer`` replaces the tool loop (``run_rounds``) for this turn; the events,
        the fallback reply and the history stay this method's job either way.
        """
        trace = trace if trace is not None else TurnTrace(text=text)
        now = self._clock()
        if self.history and now - self._last_turn_end > self.cfg.history_idle_reset_s:
            self.reset()
        self._publish(TurnStarted(text))
        turn: list[dict[str, Any]] = [{"role": "user", "content": text}]
        spoken: list[str] = []
        completed = False
        try:
            # aclosing: a consumer that stops early (barge-in) also stops the producer now.
            async with contextlib.aclosing((producer or self.run_rounds)(turn, trace)) as rounds:
                async for sentence in rounds:
                    if spoken and sentence == spoken[-1]:
                        continue  # small models sometimes repeat their last sentence verbatim
                    spoken.append(sentence)
                    self._publish(SentenceReady(sentence, len(spoken) - 1))
                    if trace.first_sentence_ms is None:
                        trace.first_sentence_ms = trace.elapsed_ms()
                    yield sentence
            if not spoken:
                ok = [c for c in trace.tool_calls if c["ok"]]
                fallback = ok[-1]["result"] if ok else FALLBACK_REPLY
                spoken.append(fallback)
                self._publish(SentenceReady(fallback, 0))
                trace.first_sentence_ms = trace.elapsed_ms()
                yield fallback
            completed = True
        finally:
            reply = " ".join(spoken)
            trace.reply = reply
            trace.execution_path = trace.execution_path or self.mode
            trace.finish()
            if spoken:  # a cut-off turn keeps what was said (a boost SUMMARY has no rounds)
                if trace.extra.get("direct_return"):  # see record_turn for why it stays open
                    self._remember(turn, open_reply=reply)
                else:
                    turn.append({"role": "assistant", "content": reply})
                    self._remember(turn)
            self._last_turn_end = self._clock()
            if completed:
                self._publish(TurnFinished(reply, trace.execution_path, trace.to_dict()))

    async def run_rounds(self, turn: list[dict[str, Any]], trace: TurnTrace) -> AsyncIterator[str]:
        """The tool loop on ``turn`` (appended to in place): yields speakable sentences.

        Publishes ``ToolCalled`` and fills ``trace``; no other events, no history.
        """
        calls_made = 0
        limit = self.cfg.max_tool_calls
        seen: set[str] = set()
        while True:
            allow_tools = calls_made < limit and len(self.registry) > 0
            trace.rounds += 1
            content, structured, said = "", [], 0
            async for sentence, chunk_content, chunk_calls in self._one_round(turn, allow_tools, trace):
                if sentence is not None and (sentence := speakable(sentence)):
                    said += 1
                    yield sentence
                content += chunk_content
                structured.extend(chunk_calls)
            found, remainder = extract_calls(content, self.registry.names())
            calls = structured or [(c.name, c.arguments) for c in found]
            if not calls or not allow_tools:
                return
            keys = [f"{n}:{json.dumps(a, sort_keys=True, default=str)}" for n, a in calls]
            if all(k in seen for k in keys):
                # Small models tend to repeat a call they already made instead of answering:
                # what they said around it is the answer; if nothing, ask for it without tools.
                if said:
                    return
                calls_made = limit
                turn.append({"role": "user", "content": LIMIT_NOTE})
                continue
            seen.update(keys)
            results: list[ToolResult] = []
            for name, args in calls:
                if calls_made >= limit:
                    break
                calls_made += 1
                res = await self.registry.call(name, args)
                results.append(res)
                trace.add_call(res)
                self._publish(ToolCalled(res.name, res.arguments, res.ok, res.result, res.duration_ms))
            keep_text = structured or self.mode == "text"
            self._append_results(turn, content if keep_text else remainder, results)
            if self._direct(results, len(calls)):
                trace.extra["direct_return"] = True
                for sentence in self._spoken(results):
                    yield sentence
                return
            if calls_made >= limit:
                turn.append({"role": "user", "content": LIMIT_NOTE})

    def _direct(self, results: list[ToolResult], asked: int) -> bool:
        """True when every call of the round ran, succeeded and may be spoken as is."""
        allowed = self.cfg.direct_return
        return 0 < len(results) == asked and all(r.direct and r.name in allowed for r in results)

    @staticmethod
    def _spoken(results: list[ToolResult]) -> list[str]:
        """The sentences of direct-return results, to speak instead of a second model round."""
        return [s for r in results for s in split_sentences(spoken(r.result))]

    def _append_results(self, turn: list[dict[str, Any]], content: str, results: list[ToolResult]) -> None:
        if self.mode == "native":
            calls = [{"function": {"name": r.name, "arguments": r.arguments}} for r in results]
            turn.append({"role": "assistant", "content": strip_markup(content), "tool_calls": calls})
            turn.extend({"role": "tool", "content": r.result, "tool_name": r.name} for r in results)
        else:
            # Models without a tool template read results as a user turn, Hermes/Qwen style.
            turn.append({"role": "assistant", "content": content})
            body = "\n".join(
                f"<tool_response>\n{json.dumps({'name': r.name, 'content': r.result}, ensure_ascii=False)}"
                "\n</tool_response>"
                for r in results
            )
            turn.append({"role": "user", "content": body})

    async def _one_round(self, turn: list[dict[str, Any]], allow_tools: bool, trace: TurnTrace):
        """Stream one model reply: yields (sentence|None, content delta, structured calls)."""
        tools = self._native_tools if (self.mode == "native" and allow_tools) else None
        speak = SpeakableFilter(self.registry.names())
        splitter = SentenceSplitter()
        try:
            stream = self.backend.stream(self._messages(turn), tools)
            async for chunk in stream:
                if trace.first_token_ms is None and (chunk.content or chunk.tool_calls):
                    trace.first_token_ms = trace.elapsed_ms()
                if chunk.done:
                    trace.add_tokens(chunk.prompt_tokens, chunk.completion_tokens, chunk.prompt_ms)
                calls = list(chunk.tool_calls)
                for sentence in splitter.feed(speak.feed(chunk.content)) if chunk.content else []:
                    yield sentence, "", []
                yield None, chunk.content, calls
        except LlmError as exc:
            if exc.code == "llm-no-tools" and self.cfg.tool_mode == "auto" and self.mode == "native":
                log.info("model does not support native tools; switching to text tool mode")
                self.mode = "text"
                async for item in self._one_round(turn, allow_tools, trace):
                    yield item
                return
            raise
        for sentence in splitter.feed(speak.flush()):
            yield sentence, "", []
        tail = splitter.flush()
        if tail:
            tail = strip_markup(tail).strip()
            if tail:
                yield tail, "", []
