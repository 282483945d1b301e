"""The single-stage tool-calling loop: a producer of a turn's sentences.

One model both decides which tools to call and phrases the answer: stream a reply;
if it calls tools (structured ``tool_calls``, or a call written as text), run them,
append the results and ask again — at most ``llm.max_tool_calls`` calls per turn, then
one last round without tools. The reply is yielded sentence by sentence while the
model is still writing, with tool-call syntax held back so it is never spoken. A tool
whose answer is a complete sentence (direct return) is spoken at once, without a
second round.

The prompt prefix (system prompt + tools) never changes between turns, so the server
reuses its prompt cache; the hidden tools retrieval picks for a turn ride on that turn's
user message (``toolpick``). Before a call runs, the registry checks it against the user's
words (grounding); a refused call, or a call to a tool nobody has, ends the turn with a
short sentence, and call syntax or a tool's name is never spoken. The history is the
conversation's (``Turn.history``); the events and the record of the turn are ``run_turn``'s.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from iris_voice.config import LlmConfig, RetrievalConfig
from iris_voice.conversation.history import Message, ToolMode, tool_turn_messages
from iris_voice.conversation.toolpick import ToolPicker
from iris_voice.conversation.trace import TurnTrace
from iris_voice.conversation.turn import Turn
from iris_voice.errors import Code, LlmError
from iris_voice.events import Event, ExecutionPath, ToolCalled
from iris_voice.llm.client import ChatBackend
from iris_voice.llm.sentences import SentenceSplitter, split_sentences
from iris_voice.llm.textcalls import SpeakableFilter, TextCall, extract_calls, strip_markup
from iris_voice.tools.registry import CALL_LEAD_IN, CANNOT, Tool, ToolRegistry, ToolResult, spoken
from iris_voice.tools.render import manifest, render
from iris_voice.tools.repair import repair_zones

log = logging.getLogger(__name__)

LIMIT_NOTE = "Answer my question now in one short sentence, using the tool results above. Do not call tools."
NO_TOOL_NOTE = "The tools could not help. Answer my question now in one short sentence. Do not call tools."
# Call syntax that got past the speech filter — braces, "key": pairs, tags, snake_case
# identifiers (a tool's name, real or invented: "open_garage_door") — is never spoken.
_SYNTAX = re.compile(r'[{}]|"\s*:|</?[a-z_]+>|\b[a-z]+_[a-z0-9_]+\b', re.IGNORECASE)


def unspeakable(sentence: str, tool_names: list[str]) -> bool:
    """True when ``sentence`` holds call syntax, names a tool (``time/get_current_time``) or is
    a tool's error copied out (``Error: …``)."""
    if sentence.lstrip().startswith("Error:"):
        return True
    return bool(_SYNTAX.search(sentence)) or any("/" in n and n in sentence for n in tool_names)


def last_words(trace: TurnTrace, tool_names: list[str]) -> str:
    """What to say when the model said nothing after its tools ran: the last result when it
    can be spoken (a calculator's "23 * 47 = 1081"), else ``CANNOT`` (raw JSON is no answer)."""
    ok = [c["result"] for c in trace.tool_calls if c["ok"]]
    text = spoken(ok[-1]) if ok else ""
    return text if text and not unspeakable(text, tool_names) else CANNOT


def clean_sentence(sentence: str) -> str:
    """A model's sentence as it should be spoken: markdown emphasis and inline-code marks
    dropped, a tool result's call lead-in copied in front of the answer dropped, and
    nothing at all when no word is left."""
    text = " ".join(sentence.replace("`", "").replace("**", "").split())
    if text.startswith(CALL_LEAD_IN):
        text = text[len(CALL_LEAD_IN) :].lstrip()
    # Leftovers of a call written around a structured one ("{ }") have nothing to say.
    return text if any(c.isalnum() for c in text) else ""


class ChatLoop:
    """Answers turns with a ``ChatBackend`` and a ``ToolRegistry`` (a ``Producer``)."""

    def __init__(
        self,
        backend: ChatBackend,
        registry: ToolRegistry,
        cfg: LlmConfig,
        publish: Callable[[Event], None] | None = None,
        first_clause_words: int = 0,
        retrieval: RetrievalConfig | None = None,
    ) -> None:
        self.backend = backend
        self.registry = registry
        self.cfg = cfg
        self.first_clause_words = first_clause_words
        """The reply's first piece may be a clause of this many words (``tts.first_clause_words``)."""
        self.picker = ToolPicker(registry, retrieval or RetrievalConfig())
        """Chooses the hidden tools each turn shows (``[retrieval]``)."""
        self.mode = ToolMode.TEXT if cfg.tool_mode == "text" else ToolMode.NATIVE
        """How tools reach the model; ``auto`` falls back to text when the model has no tool template."""
        self._publish = publish or (lambda _e: None)
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

    def system_message(self) -> Message:
        """The constant system message for the current tool mode."""
        text = self.cfg.system_prompt
        if self.mode == ToolMode.TEXT and len(self.registry):
            text += "\n\n" + manifest(self.registry.specs(), self.cfg.text_format)
        return {"role": "system", "content": text}

    def _messages(self, turn: Turn, picked: list[Tool] | None = None) -> list[Message]:
        # The picked tools ride on this turn's user message only: the history keeps the words.
        first, *rest = turn.messages
        return [self.system_message(), *turn.history, self.picker.with_tools(first, picked or []), *rest]

    # -- turns ------------------------------------------------------------------
    async def warmup(self, history: list[Message] | None = None) -> None:
        """Load the model and fill the server's prompt cache with the constant prefix
        (and ``history``, when given)."""
        msgs = [self.system_message(), *(history or []), {"role": "user", "content": "Hi"}]
        tools = self._native_tools if self.mode == ToolMode.NATIVE and self._native_tools else None
        try:
            async for _ in self.backend.stream(msgs, tools, {"num_predict": 1}):
                pass
        except LlmError as exc:
            if exc.code == Code.LLM_NO_TOOLS and self.cfg.tool_mode == "auto":
                self.mode = ToolMode.TEXT
                await self.warmup(history)
                return
            raise

    def produce(self, turn: Turn) -> AsyncIterator[str]:
        """The turn's sentences from the tool loop (``Producer``)."""
        return self.run_rounds(turn)

    async def run_rounds(self, turn: Turn) -> AsyncIterator[str]:
        """The tool loop on ``turn`` (its messages appended to in place): yields speakable
        sentences. Publishes ``ToolCalled`` and fills the trace; no other events, no history.
        """
        trace = turn.trace
        if trace.execution_path is None:
            trace.execution_path = ExecutionPath(self.mode)
        calls_made = 0
        limit = self.cfg.max_tool_calls
        seen: set[str] = set()
        picked = self.picker.pick(turn.text, turn.history) if self.mode == ToolMode.NATIVE else []
        if picked:
            trace.extra["retrieved"] = [t.name for t in picked]
        names = self.registry.callable_names()
        dropped, said_before = False, 0
        said_in_turn = 0
        while True:
            allow_tools = calls_made < limit and len(names) > 0
            trace.rounds += 1
            content, structured, said = "", [], 0
            written: list[TextCall] = []  # calls written as text, as the speech filter decided them
            clause = 0 if said_in_turn else self.first_clause_words  # only the turn's first piece
            async for sentence, chunk_content, chunk_calls in self._one_round(
                turn, allow_tools, trace, written, picked, clause
            ):
                if sentence is not None and (sentence := clean_sentence(sentence)):
                    if unspeakable(sentence, names):
                        log.info("not spoken (call syntax or a tool name): %r", sentence)
                        dropped = True
                        continue
                    said += 1
                    said_in_turn += 1
                    yield sentence
                content += chunk_content
                structured.extend(chunk_calls)
            # The calls to run are the ones the speech filter held back: what was spoken is
            # never run (a call too long for the filter to hold was spoken, so it is not a call).
            _, remainder = extract_calls(content, names)
            calls = structured or [(c.name, c.arguments) for c in written]
            said_before += said
            if not calls or not allow_tools:
                failed = bool(trace.tool_calls) and not any(c["ok"] for c in trace.tool_calls)
                if failed and not said_before and allow_tools:
                    # Every call failed and the model fell silent: a small model reaches
                    # for a tool on questions it can answer ("how many legs does a spider
                    # have" → the clock). One more round, without tools, for its own answer.
                    calls_made = limit
                    turn.messages.append({"role": "user", "content": NO_TOOL_NOTE})
                    continue
                if dropped and not said_before and not trace.tool_calls:
                    yield CANNOT  # only call syntax was written, for no tool IRIS has
                elif not said_before and trace.tool_calls:
                    yield last_words(trace, names)
                return
            if all(self.registry.get(n) is None for n, _ in calls):
                # Calls to tools nobody has ("open_garage_door"): an action IRIS cannot do.
                trace.extra["unknown_tools"] = [n for n, _ in calls]
                yield CANNOT
                return
            keys = [f"{n}:{json.dumps(a, sort_keys=True, default=str)}" for n, a in calls]
            if all(k in seen for k in keys):
                # Small models tend to repeat a call they already made instead of answering:
                # what they said around it is the answer; if nothing, ask for it without tools.
                if said:
                    return
                calls_made = limit
                turn.messages.append({"role": "user", "content": LIMIT_NOTE})
                continue
            seen.update(keys)
            results: list[ToolResult] = []
            for name, args in calls:
                if calls_made >= limit:
                    break
                calls_made += 1
                if not self.registry.read_only(name):
                    await turn.confirmed()  # a speculative turn changes nothing until confirmed
                tool = self.registry.get(name)
                if tool is not None and isinstance(args, dict):
                    args = repair_zones(tool, args, turn.text)  # "UTC" for the Tokyo the user said
                res = await self.registry.call(name, args, request=turn.text)
                results.append(res)
                trace.add_call(res)
                self._publish(ToolCalled(res.name, res.arguments, res.ok, res.result, res.duration_ms))
                if res.refusal:  # not grounded in the user's words: said instead, nothing ran
                    trace.extra["refused"] = res.name
                    yield res.refusal
                    return
            keep_text = structured or self.mode == ToolMode.TEXT
            said_around = content if keep_text else remainder
            if self.mode == ToolMode.NATIVE:
                said_around = strip_markup(said_around)
            turn.messages.extend(tool_turn_messages(self.mode, said_around, results))
            if self._direct(results, len(calls)):
                trace.extra["direct_return"] = True
                turn.open_reply = True
                for sentence in direct_sentences(results, 0 if said_in_turn else self.first_clause_words):
                    yield sentence
                return
            if calls_made >= limit:
                turn.messages.append({"role": "user", "content": LIMIT_NOTE})

    @staticmethod
    def _direct(results: list[ToolResult], asked: int) -> bool:
        """True when every call of the round ran, succeeded and may be spoken as is."""
        return 0 < len(results) == asked and all(r.direct for r in results)

    async def _one_round(
        self,
        turn: Turn,
        allow_tools: bool,
        trace: TurnTrace,
        written: list[TextCall],
        picked: list[Tool],
        clause: int = 0,
    ):
        """Stream one model reply: yields (sentence|None, content delta, structured calls);
        ``written`` receives the calls written as text that the speech filter swallowed;
        ``clause``: the first piece may be a clause of that many words."""
        tools = self._native_tools if (self.mode == ToolMode.NATIVE and allow_tools) else None
        speak = SpeakableFilter(self.registry.callable_names())
        splitter = SentenceSplitter(first_clause_words=clause)
        try:
            stream = self.backend.stream(self._messages(turn, picked), tools)
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
            if (
                exc.code == Code.LLM_NO_TOOLS
                and self.cfg.tool_mode == "auto"
                and self.mode == ToolMode.NATIVE
            ):
                log.info("model does not support native tools; switching to text tool mode")
                self.mode = ToolMode.TEXT
                if trace.execution_path == ExecutionPath.NATIVE:
                    trace.execution_path = ExecutionPath.TEXT
                async for item in self._one_round(turn, allow_tools, trace, written, picked, clause):
                    yield item
                return
            raise
        for sentence in splitter.feed(speak.flush()):
            yield sentence, "", []
        written.extend(speak.calls)
        tail = splitter.flush()
        if tail:
            tail = strip_markup(tail).strip()
            if tail:
                yield tail, "", []


def direct_sentences(results: list[ToolResult], first_clause_words: int = 0) -> list[str]:
    """The sentences of direct-return results, spoken instead of a second model round
    (the first maybe a clause: ``SentenceSplitter``)."""
    text = " ".join(spoken(r.result) for r in results)
    return split_sentences(text, first_clause_words)
