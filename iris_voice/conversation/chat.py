"""The single-stage tool-calling loop: a producer of a turn's sentences.

One model both decides which tools to call and phrases the answer: stream a reply;
if it calls tools (structured ``tool_calls``, or a call written as text), run them,
append the results and ask again — at most ``llm.max_tool_calls`` calls per turn, then
one last round for words whose calls are not taken (the tools still listed, so the
server's cached prefix stays). The reply is yielded sentence by sentence while the
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

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from iris_voice.config import LlmConfig, RetrievalConfig
from iris_voice.conversation.direct import direct_sentences, said_results
from iris_voice.conversation.history import Message, ToolMode, tool_turn_messages
from iris_voice.conversation.honest import ClaimGuard, topic_words
from iris_voice.conversation.repairs import (
    LIMIT_NOTE,
    NOT_DONE,
    act_now,
    answer_now,
    closing_words,
    described_call,
    explain_now,
    retry_without_tools,
    unspeakable,
)
from iris_voice.conversation.rounds import Loop, Round
from iris_voice.conversation.toolpick import ToolPicker, change_made
from iris_voice.conversation.trace import TurnTrace
from iris_voice.conversation.turn import Turn
from iris_voice.errors import Code, LlmError
from iris_voice.events import Event, ExecutionPath, ToolCalled
from iris_voice.llm.client import ChatBackend
from iris_voice.llm.sentences import SentenceSplitter
from iris_voice.llm.textcalls import SpeakableFilter, TextCall, extract_calls, strip_markup
from iris_voice.tools.choice import CHOICE_NOTE, NotAChoice, choice_schema, chosen
from iris_voice.tools.paths import repair_paths
from iris_voice.tools.registry import CALL_LEAD_IN, CANNOT, Tool, ToolRegistry, ToolResult
from iris_voice.tools.render import manifest, render
from iris_voice.tools.repair import repair_zones

log = logging.getLogger(__name__)


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
        self._no_format = NotAChoice()  # set once a reply shows the server ignores ``format``

    # -- prompt -----------------------------------------------------------------
    @property
    def _native_tools(self) -> list[dict[str, Any]]:
        """The tools in Ollama's format, rendered again only when the registry changed (eager
        MCP servers add theirs after start); identical text keeps the server's prompt cache."""
        listed = self.picker.listed()  # on-demand tools ride on the turns that need them
        names = tuple(t.name for t in listed)
        if self._rendered is None or self._rendered[0] != names:
            self._rendered = (names, render([t.spec for t in listed], "ollama"))
        return self._rendered[1]

    def system_message(self) -> Message:
        """The constant system message for the current tool mode."""
        text = self.cfg.system_prompt
        if self.mode == ToolMode.TEXT and len(self.registry):
            text += "\n\n" + manifest(self.registry.specs(), self.cfg.text_format)
        return {"role": "system", "content": text}

    def _messages(self, turn: Turn, picked: list[Tool] | None = None, note: str = "") -> list[Message]:
        # The picked tools ride on this turn's user message only: the history keeps the words.
        first, *rest = turn.messages
        asked = self.picker.with_tools(first, picked or [], note)
        return [self.system_message(), *turn.history, asked, *rest]

    def _constrained(self, picked: list[Tool]) -> bool:
        """Whether this round's choice is written in JSON a grammar keeps (``llm.choice``)."""
        wanted = self.cfg.choice == "always" or (self.cfg.choice == "retrieved" and bool(picked))
        formats = bool(getattr(self.backend, "formats", False)) and not self._no_format.seen
        return wanted and formats and self.mode == ToolMode.NATIVE

    def _stream(self, turn: Turn, picked: list[Tool], tools: list[dict[str, Any]] | None, constrained: bool):
        """The model's reply to this round: a constrained choice among the tools shown (the
        listed ones and the turn's picked ones), else as it writes it. The listed tools
        still go as ``tools``, so the cached prompt prefix stays the same."""
        if not constrained:
            return self.backend.stream(self._messages(turn, picked), tools)
        shown = [*(t.spec for t in self.picker.listed()), *(t.spec for t in picked)]
        messages = self._messages(turn, picked, CHOICE_NOTE)
        reply = self.backend.stream(messages, tools, fmt=choice_schema(shown))  # type: ignore[call-arg]
        return chosen(reply, [s.name for s in shown], self._no_format)

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

        The protocol reads here; what a small model needs beyond it (one more round without
        tools, a repeated call, closing words) are the named steps it calls (``repairs``).
        """
        trace = turn.trace
        if trace.execution_path is None:
            trace.execution_path = ExecutionPath(self.mode)
        picked = self.picker.pick(turn.text, turn.history) if self.mode == ToolMode.NATIVE else []
        if picked:
            trace.extra["retrieved"] = [t.name for t in picked]
        loop = Loop(self.cfg.max_tool_calls, self.registry.callable_names(), picked)
        while True:
            rnd = Round(tools=loop.tools_allowed)
            async for sentence in self._speak(turn, loop, rnd):
                yield sentence
            calls = rnd.calls()
            if not calls or not rnd.tools:
                if act_now(turn, loop, rnd):
                    continue
                if rnd.undone:  # told, and still only words: nothing was done, as IRIS says
                    yield loop.spoke(rnd, NOT_DONE)
                    return
                if retry_without_tools(turn, loop, rnd) or explain_now(turn, loop, rnd):
                    continue
                if closing := closing_words(trace, loop):
                    yield closing
                return
            if all(self.registry.get(n) is None for n, _ in calls):
                # Calls to tools nobody has ("open_garage_door"): an action IRIS cannot do.
                trace.extra["unknown_tools"] = [n for n, _ in calls]
                yield CANNOT
                return
            if loop.repeated(calls):
                # Small models tend to repeat a call they already made instead of answering:
                # what they said around it is the answer; if nothing, ask for it in words.
                if rnd.said:
                    return
                answer_now(turn, loop, LIMIT_NOTE)
                continue
            results, refusal = await self._run_calls(turn, loop, calls)
            if refusal:  # not grounded in the user's words: said instead, nothing ran
                yield refusal
                return
            first = not _tool_answered(turn)
            turn.messages.extend(tool_turn_messages(self.mode, self._said_around(rnd, loop), results))
            if (said := said_results(self.registry, turn.text, results, len(calls), first)) is not None:
                trace.extra["direct_return"] = True
                turn.open_reply = True
                for sentence in direct_sentences(said, 0 if loop.said else self.first_clause_words):
                    yield sentence
                return
            if loop.calls_made >= loop.limit:
                turn.messages.append({"role": "user", "content": LIMIT_NOTE})

    async def _speak(self, turn: Turn, loop: Loop, rnd: Round) -> AsyncIterator[str]:
        """One model round: its speakable sentences as they come (call syntax and tool names
        held back), its text and calls into ``rnd``."""
        turn.trace.rounds += 1
        clause = 0 if loop.said else self.first_clause_words  # only the turn's first piece
        # A claim of an action waits for the round's end: a call follows it, or it was untrue.
        acted = any(c["ok"] and not self.registry.read_only(c["name"]) for c in turn.trace.tool_calls)
        shown = (*self.picker.listed(), *loop.picked)
        answered = _tool_answered(turn)
        topic = topic_words([str(t.meta.get("server_description", "")) for t in loop.picked])
        guard = ClaimGuard(
            turn.text,
            active=not acted,
            descriptions=tuple(t.spec.description for t in shown),
            topic=() if answered else topic,
        )

        def enough() -> bool:
            # The one change asked for has come: the rest of the round is not waited for.
            made = rnd.calls() if rnd.tools else []
            return bool(made) and change_made(turn.text, self.registry, made)

        async for sentence, content, calls in self._one_round(
            turn, rnd.tools, turn.trace, rnd.written, loop.picked, clause, enough
        ):
            if sentence is not None and (sentence := clean_sentence(sentence)):
                if unspeakable(sentence, loop.names):
                    log.info("not spoken (call syntax or a tool name): %r", sentence)
                    loop.dropped = loop.cut = True
                    rnd.withheld.append(sentence)
                    continue
                for said in guard.feed(sentence):
                    yield loop.spoke(rnd, said)
            rnd.content += content
            rnd.structured.extend(calls)
        if rnd.tools and not rnd.calls() and (described := described_call(rnd.withheld, shown)):
            log.info("a call described in words, not made: making it: %s", described)
            rnd.structured.append(described)
        called = any(self.registry.get(n) is not None for n, _ in rnd.calls())
        for said in guard.settle(called):
            yield loop.spoke(rnd, said)
        if guard.undone and guard.recital and (bare := self._bare_reader(guard.recited, shown)):
            # It read out a tool that changes nothing and needs no argument: called as named.
            log.info("%s recited and not called: calling it", bare)
            rnd.structured.append((bare, {}))
            guard.undone = []
        if guard.refused:
            log.info("not spoken (claims an action no tool performed): %r", guard.refused)
            turn.trace.extra["claimed"] = guard.refused
        rnd.undone = guard.undone
        if rnd.undone:
            log.info("not spoken (a timer action claimed or a tool recited, no call): %r", rnd.undone)

    @staticmethod
    def _bare_reader(description: str, shown: tuple[Tool, ...]) -> str | None:
        """The shown tool with ``description`` when it changes nothing and takes no
        required argument (``list_timers``), else None."""
        for tool in shown:
            required = (
                tool.spec.parameters.get("required") if isinstance(tool.spec.parameters, dict) else None
            )
            if tool.spec.description == description and tool.read_only and not required:
                return tool.name
        return None

    async def _run_calls(
        self, turn: Turn, loop: Loop, calls: list[tuple[str, Any]]
    ) -> tuple[list[ToolResult], str | None]:
        """Run ``calls`` within the limit; their results, and the refusal that stopped them
        (a call not grounded in the user's words), if any."""
        results: list[ToolResult] = []
        for name, args in calls:
            if loop.calls_made >= loop.limit:
                break
            loop.calls_made += 1
            if not self.registry.read_only(name):
                await turn.confirmed()  # a speculative turn changes nothing until confirmed
            tool = self.registry.get(name)
            if tool is not None and isinstance(args, dict):
                args = repair_zones(tool, args, turn.text)  # "UTC" for the Tokyo the user said
                # "/home/user/notes" for the server's notes folder (it lists a directory: off the loop)
                args = await asyncio.to_thread(repair_paths, tool, args)
            res = await self.registry.call(name, args, request=turn.text)
            results.append(res)
            turn.trace.add_call(res)
            self._publish(ToolCalled(res.name, res.arguments, res.ok, res.result, res.duration_ms))
            if res.refusal:
                turn.trace.extra["refused"] = res.name
                return results, res.refusal
        return results, None

    def _said_around(self, rnd: Round, loop: Loop) -> str:
        """What the model wrote around its calls, as the history keeps it: the calls the
        speech filter held back are never run twice (a call too long for the filter to hold
        was spoken, so it is not a call)."""
        if rnd.structured or self.mode == ToolMode.TEXT:
            around = rnd.content
        else:
            _, around = extract_calls(rnd.content, loop.names)
        return strip_markup(around) if self.mode == ToolMode.NATIVE else around

    async def _one_round(
        self,
        turn: Turn,
        allow_tools: bool,
        trace: TurnTrace,
        written: list[TextCall],
        picked: list[Tool],
        clause: int = 0,
        enough: Callable[[], bool] = lambda: False,
    ):
        """Stream one model reply: yields (sentence|None, content delta, structured calls);
        ``written`` receives the calls written as text that the speech filter swallowed;
        ``clause``: the first piece may be a clause of that many words; ``enough``: asked
        after each piece whether the rest is needed (closing the reply early stops the
        server's generation)."""
        # The tools go with every round, also one whose calls are not taken (``allow_tools``
        # False: the note asks for words): the server's prompt cache holds one prefix, and a
        # request without them is another system block, after which the next turn reads the
        # whole prefix again (1,000 tokens: 14 s on two cores).
        tools = self._native_tools if self.mode == ToolMode.NATIVE else None
        # Only the decision is constrained: once a tool has answered, the model explains
        # its result in words (held to JSON it called a second tool where it would have
        # answered) and may still call another tool natively.
        decided = _tool_answered(turn)
        constrained = allow_tools and tools is not None and not decided and self._constrained(picked)
        speak = SpeakableFilter(self.registry.callable_names())
        splitter = SentenceSplitter(first_clause_words=clause)
        stream = self._stream(turn, picked, tools, constrained)
        before = len(written)
        try:
            async for chunk in stream:
                if trace.first_token_ms is None and (chunk.content or chunk.tool_calls):
                    trace.first_token_ms = trace.elapsed_ms()
                if chunk.done:
                    trace.add_tokens(chunk.prompt_tokens, chunk.completion_tokens, chunk.prompt_ms)
                calls = list(chunk.tool_calls)
                for sentence in splitter.feed(speak.feed(chunk.content)) if chunk.content else []:
                    yield sentence, "", []
                if len(speak.calls) > len(written) - before:  # a call written as text, complete
                    written.extend(speak.calls[len(written) - before :])
                yield None, chunk.content, calls
                if enough():
                    log.info("the change asked for is called: the rest of the round is not generated")
                    trace.extra["cut"] = True
                    break
        except LlmError as exc:
            if constrained and exc.code == Code.LLM_ERROR and "format" in exc.message:
                # A server older than JSON Schema formats (Ollama < 0.5) refuses the request.
                log.info("the server takes no format (%s): tools are called natively", exc.message)
                self._no_format.seen = True
                async for item in self._one_round(turn, allow_tools, trace, written, picked, clause, enough):
                    yield item
                return
            if (
                exc.code == Code.LLM_NO_TOOLS
                and self.cfg.tool_mode == "auto"
                and self.mode == ToolMode.NATIVE
            ):
                log.info("model does not support native tools; switching to text tool mode")
                self.mode = ToolMode.TEXT
                if trace.execution_path == ExecutionPath.NATIVE:
                    trace.execution_path = ExecutionPath.TEXT
                async for item in self._one_round(turn, allow_tools, trace, written, picked, clause, enough):
                    yield item
                return
            raise
        finally:
            if (close := getattr(stream, "aclose", None)) is not None:
                await close()  # left early (``change_made``): the request ends, and the generation
        for sentence in splitter.feed(speak.flush()):
            yield sentence, "", []
        written.extend(speak.calls[len(written) - before :])
        tail = splitter.flush()
        if tail:
            tail = strip_markup(tail).strip()
            if tail:
                yield tail, "", []


def _tool_answered(turn: Turn) -> bool:
    """Whether a tool result is already among the turn's messages."""
    return any(m.get("role") == "tool" for m in turn.messages)
