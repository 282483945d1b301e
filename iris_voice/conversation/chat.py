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
from iris_voice.conversation.followup import referent
from iris_voice.conversation.history import ToolMode, tool_turn_messages
from iris_voice.conversation.honest import ClaimGuard, topic_words
from iris_voice.conversation.policy import ReplyPolicy
from iris_voice.conversation.prompt import Prompt
from iris_voice.conversation.repairs import (
    LIMIT_NOTE,
    NOT_DONE,
    WORDS_NOTE,
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
from iris_voice.tools.choice import NotAChoice
from iris_voice.tools.intents import REFERENT
from iris_voice.tools.paths import repair_paths
from iris_voice.tools.registry import (
    CALL_LEAD_IN,
    CANNOT,
    NOT_WANTED,
    OTHER_CHANGE,
    Tool,
    ToolRegistry,
    ToolResult,
)
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


class ChatLoop(Prompt):
    """Answers turns with a ``ChatBackend`` and a ``ToolRegistry`` (a ``Producer``)."""

    def __init__(
        self,
        backend: ChatBackend,
        registry: ToolRegistry,
        cfg: LlmConfig,
        publish: Callable[[Event], None] | None = None,
        first_clause_words: int = 0,
        retrieval: RetrievalConfig | None = None,
        policy: ReplyPolicy | None = None,
    ) -> None:
        self.backend = backend
        self.registry = registry
        self.cfg = cfg
        self.first_clause_words = first_clause_words
        """The reply's first piece may be a clause of this many words (``tts.first_clause_words``)."""
        self.policy = policy or ReplyPolicy()
        """The reply rules switched on; each decision goes into the turn's trace."""
        self.picker = ToolPicker(registry, retrieval or RetrievalConfig())
        """Chooses the hidden tools each turn shows (``[retrieval]``)."""
        self.mode = ToolMode.TEXT if cfg.tool_mode == "text" else ToolMode.NATIVE
        """How tools reach the model; ``auto`` falls back to text when the model has no tool template."""
        self._publish = publish or (lambda _e: None)
        self._rendered: tuple[tuple[str, ...], list[dict[str, Any]]] | None = None
        self._no_format = NotAChoice()  # set once a reply shows the server ignores ``format``

    # -- turns ------------------------------------------------------------------
    def produce(self, turn: Turn) -> AsyncIterator[str]:
        """The turn's sentences from the tool loop (``Producer``)."""
        return self.run_rounds(turn)

    async def run_rounds(self, turn: Turn) -> AsyncIterator[str]:
        """The tool loop on ``turn`` (its messages appended to in place): yields speakable
        sentences. Publishes ``ToolCalled`` and fills the trace; no other events, no history.

        The protocol reads here; what a small model needs beyond it (one more round without
        tools, a repeated call, closing words) are the named steps it calls (``repairs``).
        """
        trace, policy = turn.trace, self.policy
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
                if (said := self._round_end(turn, loop, rnd)) is None:
                    continue
                if said:
                    yield loop.spoke(rnd, said)
                return
            if policy.on("unknown_tool") and all(self.registry.get(n) is None for n, _ in calls):
                # Calls to tools nobody has ("open_garage_door"): an action IRIS cannot do.
                trace.extra["unknown_tools"] = [n for n, _ in calls]
                policy.record(trace, "unknown_tool", "replaced", ", ".join(n for n, _ in calls), CANNOT)
                yield CANNOT
                return
            if policy.on("repeated_call") and loop.repeated(calls):
                # Small models tend to repeat a call they already made instead of answering:
                # what they said around it is the answer; if nothing, ask for it in words.
                policy.record(trace, "repeated_call", "cut" if rnd.said else "asked again", calls[0][0])
                if rnd.said:
                    return
                answer_now(turn, loop, LIMIT_NOTE)
                continue
            results, refusal = await self._run_calls(turn, loop, calls)
            if refusal:  # not grounded in the user's words: the tool's question, nothing ran
                yield refusal
                return

            if results and all(NOT_WANTED in r.result for r in results):
                # A side effect the request is not about ("Call me Sam." set a reminder): the
                # round is asked again without it — the call and its error are not shown, since
                # a model that reads them copies them — for words the rules judge as any other.
                answer_now(turn, loop, WORDS_NOTE)
                loop.strict = True
                continue
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

    def _round_end(self, turn: Turn, loop: Loop, rnd: Round) -> str | None:
        """A round without calls (or whose calls are not taken) ended: None to ask the model
        again (its note already in the messages), else what to say last ("": nothing)."""
        policy, trace = self.policy, turn.trace
        if policy.on("own_claims") and act_now(turn, loop, rnd):
            policy.record(trace, "own_claims", "asked again", " ".join(rnd.undone))
            return None
        if rnd.undone:  # told, and still only words: nothing was done, as IRIS says
            policy.record(trace, "own_claims", "replaced", " ".join(rnd.undone), NOT_DONE)
            return NOT_DONE
        for rule, again in (("retry_words", retry_without_tools), ("explain", explain_now)):
            if policy.on(rule) and again(turn, loop, rnd):
                policy.record(trace, rule, "asked again")
                return None
        if policy.on("closing") and (closing := closing_words(trace, loop)):
            policy.record(trace, "closing", "said", loop.last, closing)
            return closing
        return ""

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
        policy = self.policy
        guard = ClaimGuard(
            turn.text,
            active=not acted,
            world=policy.on("claims"),
            strict=loop.strict,
            own_actions=policy.on("own_claims"),
            descriptions=tuple(t.spec.description for t in shown),
            topic=() if answered else topic,
        )

        def enough() -> bool:
            # The one change asked for has come: the rest of the round is not waited for.
            made = rnd.calls() if rnd.tools and policy.on("one_change") else []
            return bool(made) and change_made(turn.text, self.registry, made)

        async for sentence, content, calls in self._one_round(
            turn, rnd.tools, turn.trace, rnd.written, loop.picked, clause, enough
        ):
            if sentence is not None and (sentence := clean_sentence(sentence)):
                if policy.on("syntax") and unspeakable(sentence, loop.names):
                    policy.record(turn.trace, "syntax", "dropped", sentence)
                    loop.dropped = loop.cut = True
                    rnd.withheld.append(sentence)
                    continue
                for said in guard.feed(sentence):
                    yield loop.spoke(rnd, said)
            rnd.content += content
            rnd.structured.extend(calls)
        described = (
            policy.on("described_call")
            and rnd.tools
            and not rnd.calls()
            and described_call(rnd.withheld, shown)
        )
        if described:
            policy.record(turn.trace, "described_call", "called", f"{described[0]}({described[1]})")
            rnd.structured.append(described)
        # What the model wrote, round by round, beside what was said (``iris ask --json``).
        turn.trace.extra.setdefault("model_wrote", []).append(rnd.content)
        called = any(self.registry.get(n) is not None for n, _ in rnd.calls())
        settled = guard.settle(called)
        for said in settled:
            yield loop.spoke(rnd, said)
        if guard.undone and guard.recital and (bare := self._bare_reader(guard.recited, shown)):
            # It read out a tool that changes nothing and needs no argument: called as named.
            policy.record(turn.trace, "claims", "called", " ".join(guard.undone), bare)
            rnd.structured.append((bare, {}))
            guard.undone = []
        if guard.refused:
            policy.record(turn.trace, "claims", "replaced", " ".join(guard.refused), CANNOT)
            turn.trace.extra["claimed"] = guard.refused
        for dropped in guard.dropped:
            policy.record(turn.trace, "claims", "dropped", dropped)
        rnd.undone = guard.undone

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
            grounded = turn.text if self.policy.on("grounding") else None
            referred = REFERENT.set(referent(turn.history, self.registry))
            try:
                res = await self.registry.call(name, args, request=grounded)
            finally:
                REFERENT.reset(referred)
            results.append(res)
            turn.trace.add_call(res)
            self._publish(ToolCalled(res.name, res.arguments, res.ok, res.result, res.duration_ms))
            if res.refusal or NOT_WANTED in res.result or OTHER_CHANGE in res.result:
                self.policy.record(turn.trace, "grounding", "not run", f"{name}({args})", res.refusal)
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
                if enough():  # the change asked for is called: the rest is not generated
                    self.policy.record(trace, "one_change", "cut", ", ".join(n for n, _ in calls))
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
