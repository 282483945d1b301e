"""The tool registry: typed Python functions become tools with JSON Schemas.

A tool's parameters come from its type hints (``Annotated[int, "description"]`` or a
pydantic ``Field``), so the schema the model sees and the validation IRIS applies are
one and the same. Arguments are validated and coerced before the call ("12" -> 12); a
validation error, an exception inside the tool or an unknown name becomes a
``ToolResult`` with ``ok=False`` whose text starts with ``Error:`` — never a crash.
External tools (MCP) register the same way, with a raw schema and an async handler.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from iris_voice.errors import ToolError
from iris_voice.tools.schemas import compact_schema, describe, format_validation_error, model_from_function

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolSpec:
    """What a renderer needs to show a tool to a model."""

    name: str
    """Unique name the model calls, e.g. ``calculator`` or ``time/get_current_time``."""
    description: str
    """One or two sentences: what the tool does and when to use it."""
    parameters: dict[str, Any]
    """JSON Schema of the arguments object (``{"type": "object", "properties": …}``)."""


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call, as the model will read it."""

    name: str
    """The tool name the model asked for."""
    arguments: dict[str, Any]
    """The arguments after validation and coercion (or as given, when invalid)."""
    ok: bool
    """False for an unknown tool, invalid arguments or an exception in the tool."""
    result: str
    """Text for the model: the tool's answer, or ``Error: …``."""
    duration_ms: float
    """Wall time of validation plus the call."""
    direct: bool = False
    """True when the tool's answer is a complete sentence that may be spoken as is."""
    refusal: str = ""
    """Set when IRIS refused to run the call (its arguments are not grounded in what the
    user said): the sentence to say instead; the tool did not run."""
    said: str = ""
    """The result as a listener can hear it (``Tool.say``), when it can be said without a
    model round; empty otherwise."""


Handler = Callable[..., Any]
GroundingCheck = Callable[[str, dict[str, Any]], Awaitable[str | None]]
"""``check(request, arguments)``: None when the validated ``arguments`` are grounded in
``request`` (the user's words), else the question to ask the user instead ("How long should
the timer run?"). A model may invent a duration or a timer to cancel; this check is IRIS's,
not the model's."""
ArgumentRepair = Callable[[str, dict[str, Any]], dict[str, Any]]
"""``repair(request, arguments)``: the raw ``arguments`` mended to the user's words: what
they did not say taken out (a timer name nobody said: "breakfast" for "start a timer for
one hour"), or what they did say put back ("at 6 pm" for a reminder "in 6 hours")."""
CANNOT = "Sorry, I can't do that."
"""What IRIS says when it refuses a call the user's words do not ask for."""
NOT_ASKED = (
    "Not needed: this is a question, not a request to do anything. Answer it from what you know, in words."
)
"""Why a call with side effects made for a question nobody asked it for is not run (the
model reads it and answers in words)."""
OTHER_CHANGE = "Not run: the user asked for something else. Do only what was asked."
"""What a grounding check answers for a change the request asks the opposite of ("Set a
pasta timer and a tea timer." never cancels one): the model reads it, nothing is said."""
NOT_WANTED = "Not run: nothing this tool does was asked for."
"""Why a call with side effects whose tool the request is not about is not run: the model
answers in words (a request no tool serves is the reply policy's to judge, not the tool's)."""
_QUESTION = re.compile(r"^\W*(?:who|whom|whose|what|when|where|why|how|which)\b", re.IGNORECASE)
NOTHING_FOUND = "I found nothing for that."
"""What IRIS says when a tool that looks something up found nothing."""
_NOTE = re.compile(r"\s*\([^()]*\)")


CALL_LEAD_IN = "To run a tool, call:"
"""How a tool result that teaches a call introduces it. A small model may copy the words
in front of its answer after the call; the chat loop drops them from what is spoken."""


def spoken(result: str) -> str:
    """What to say of a direct-return result: the text without its notes in parentheses.

    "It is 3:05 PM … in Tokyo (Asia/Tokyo, UTC+09:00)." → "It is 3:05 PM … in Tokyo."; the
    zone stays in the tool result, where the model can read it on later turns.
    """
    return " ".join(_NOTE.sub("", result).split())


@dataclass(frozen=True)
class Tool:
    """A registered tool: its spec, how to validate arguments and how to run it, and the
    traits it declares for the rest of IRIS (direct return, trigger words, intents).

    A tool declares itself once, here; configuration may only override
    (``llm.direct_return``, ``tools.enabled``/``disabled``).
    """

    spec: ToolSpec
    """Name, description and JSON Schema."""
    handler: Handler
    """Called with the validated keyword arguments; sync handlers run in a thread."""
    model: type[BaseModel] | None = None
    """Validates and coerces arguments; None for raw-schema tools that validate themselves."""
    direct_return: bool = False
    """The handler returns a complete spoken sentence (see the fast paths); notes for the
    model go in parentheses, which ``spoken`` leaves out."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free-form facts for listings (source server, category)."""
    words: tuple[str, ...] = ()
    """Regex alternations of words that suggest a request may need this tool ("timer|alarm"),
    beyond its name: boost's ``when = "tools"`` sends such requests to the planner."""
    intents: Mapping[str, Any] = field(default_factory=dict)
    """Fast-path intents this tool answers: intent name → ``tools.intents.IntentHandler``."""
    read_only: bool = False
    """Calling it changes nothing (the clock, the calculator, a listing): it may run for a
    turn started before the user was done (``stt.speculative``). Tools with side effects
    wait until the turn is confirmed."""
    grounded: GroundingCheck | None = None
    """Checks a call against the user's words before it runs (see ``GroundingCheck``); None
    runs every valid call. A tool with side effects that fails it is refused and the
    refusal said; one that changes nothing fails with an error the model reads."""
    asks: str = ""
    """Regex alternation of words that make a request about what this tool does ("timer"):
    only then is a refused call's question asked ("How long should the timer run?"), never
    for words that merely could be ("twenty one degrees"); empty: ``words``."""
    repair: ArgumentRepair | None = None
    """Mends a call's arguments to the user's words before the grounding check (see
    ``ArgumentRepair``); None leaves them as the model wrote them."""
    say: Callable[[str], str | None] | None = None
    """Says a result without a model round when a listener understands it as it is (an MCP
    tool's "price: 4.5"): the sentence, or None to let the model phrase it."""
    on_demand: bool = False
    """Few requests need it (pausing a timer): where retrieval picks tools per turn
    (``[retrieval]``, native tool calls) it is shown only on a turn it is picked for, like a
    lazy MCP tool, and costs the other turns' prompts nothing; listed everywhere else."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.spec.name


def tool_from_function(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    direct_return: bool = False,
    words: Iterable[str] = (),
    intents: Mapping[str, Any] | None = None,
    read_only: bool = False,
    grounded: GroundingCheck | None = None,
    asks: str = "",
    repair: ArgumentRepair | None = None,
    on_demand: bool = False,
    meta: Mapping[str, Any] | None = None,
) -> Tool:
    """Make a Tool from a typed function; its docstring's first paragraph describes it."""
    tname = name or func.__name__
    model = model_from_function(func, tname)
    spec = ToolSpec(tname, description or describe(func), compact_schema(model.model_json_schema()))
    return Tool(
        spec=spec,
        handler=func,
        model=model,
        direct_return=direct_return,
        words=tuple(words),
        intents=dict(intents or {}),
        read_only=read_only,
        grounded=grounded,
        asks=asks,
        repair=repair,
        on_demand=on_demand,
        meta=dict(meta or {}),
    )


class ToolRegistry:
    """Holds the tools a model may call and runs calls safely.

    Every tool is in one of two sets, with one name space across both:

    * *listed*: shown to the model on every turn;
    * *hidden*: callable by name, shown only on a turn retrieval picks it for (a lazy
      MCP server's tools), so a large server's tools do not fill every prompt.

    Which set each method sees:

    * listed only (what the model is shown): ``listed``, ``names``, ``specs``,
      ``intents``, ``name in registry``, ``for tool in registry``, ``len(registry)``;
    * hidden only: ``hidden``;
    * both (what a call may reach): ``callable_names``, ``get``, ``call``, ``read_only``,
      ``register`` (a name is refused if either set has it), ``unregister``;
      ``filtered`` keeps both (``enabled`` picks among the listed tools only).

    So ``name in registry`` is False for a hidden tool; ``get(name) is not None`` asks
    whether a call can reach it.
    """

    def __init__(self, tools: Iterable[Tool] = (), hidden: Iterable[Tool] = ()) -> None:
        """The ``tools`` listed, in order, and the ``hidden`` ones."""
        self._listed: dict[str, Tool] = {}
        self._hidden: dict[str, Tool] = {}
        for t in tools:
            self.register(t)
        for t in hidden:
            self.register(t, hidden=True)

    def register(self, tool: Tool, *, first: bool = False, hidden: bool = False) -> Tool:
        """Add a tool (at the end, or ``first``: the order the model sees them in; or
        ``hidden``: not listed); a second tool with the same name is a programming error."""
        if tool.name in self._listed or tool.name in self._hidden:
            raise ValueError(f"tool {tool.name!r} is already registered")
        if hidden:
            self._hidden[tool.name] = tool
        elif first:
            self._listed = {tool.name: tool, **self._listed}
        else:
            self._listed[tool.name] = tool
        return tool

    def add_function(self, func: Callable[..., Any], **kwargs: Any) -> Tool:
        """Register a typed function as a tool (see ``tool_from_function``)."""
        return self.register(tool_from_function(func, **kwargs))

    def unregister(self, name: str) -> None:
        """Remove a tool (listed or hidden) if present."""
        self._listed.pop(name, None)
        self._hidden.pop(name, None)

    def listed(self) -> list[Tool]:
        """The listed tools (not the hidden ones), in the order the model sees them."""
        return list(self._listed.values())

    def hidden(self) -> list[Tool]:
        """The hidden tools (not the listed ones), in registration order."""
        return list(self._hidden.values())

    def callable_names(self) -> list[str]:
        """Every name a call may use: the listed tools, then the hidden ones."""
        return [*self._listed, *self._hidden]

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is a *listed* tool: False for a hidden one (see ``get``)."""
        return name in self._listed

    def __iter__(self) -> Iterator[Tool]:
        """The *listed* tools, in order; ``hidden()`` gives the others."""
        return iter(self._listed.values())

    def __len__(self) -> int:
        """How many tools are *listed* (hidden ones not counted)."""
        return len(self._listed)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name`` (listed or hidden), or None. A hidden tool may also be
        named without its category (``read_query`` for ``data/sqlite/read_query``) when only
        one tool has that name: small models drop the path they were shown."""
        tool = self._listed.get(name) or self._hidden.get(name)
        if tool is None and name and "/" not in name:
            owners = [t for n, t in self._hidden.items() if n.rpartition("/")[2] == name]
            tool = owners[0] if len(owners) == 1 else None
        return tool

    def names(self) -> list[str]:
        """The *listed* tools' names, in order (``callable_names`` adds the hidden ones)."""
        return list(self._listed)

    def specs(self) -> list[ToolSpec]:
        """The *listed* tools' specs, for a renderer (hidden tools are rendered only on the
        turns retrieval picks them for)."""
        return [t.spec for t in self._listed.values()]

    def filtered(
        self,
        enabled: Iterable[str] | None = None,
        disabled: Iterable[str] = (),
        direct_return: Iterable[str] | None = None,
    ) -> ToolRegistry:
        """A registry holding only the enabled (or all but the disabled) tools; with
        ``direct_return``, exactly those tools speak their own answer (an override of what
        each tool declares).

        ``enabled`` and ``direct_return`` apply to the listed tools only; ``disabled`` drops
        a tool from either set. Hidden tools stay hidden."""
        keep = set(enabled) if enabled is not None else set(self._listed)
        drop = set(disabled)
        direct = set(direct_return) if direct_return is not None else None
        return ToolRegistry(
            (
                t if direct is None else replace(t, direct_return=t.name in direct)
                for n, t in self._listed.items()
                if n in keep and n not in drop
            ),
            hidden=(t for n, t in self._hidden.items() if n not in drop),
        )

    def read_only(self, name: str) -> bool:
        """Whether ``name`` is a registered tool (listed or hidden) that changes nothing
        (unknown names: no)."""
        tool = self.get(name)
        return tool is not None and tool.read_only

    def intents(self) -> dict[str, Any]:
        """Every fast-path intent the *listed* tools declare: intent name → handler."""
        return {name: handler for t in self._listed.values() for name, handler in t.intents.items()}

    async def call(
        self, name: str, arguments: dict[str, Any] | str | None, *, request: str | None = None
    ) -> ToolResult:
        """Validate and run one call; every failure becomes an ``Error: …`` result.

        With ``request`` (the user's words that led to the call), a tool that declares a
        grounding check runs only if the check passes; otherwise the result carries the
        ``refusal`` to say and the tool does not run.
        """
        start = time.perf_counter()

        def done(
            ok: bool, text: str, args: dict[str, Any], direct: bool = False, refusal: str = "", said: str = ""
        ) -> ToolResult:
            ms = (time.perf_counter() - start) * 1000
            return ToolResult(name, args, ok, text, round(ms, 2), direct and ok, refusal, said)

        args: Any = arguments if arguments is not None else {}
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as exc:
                return done(False, f"Error: arguments for {name} are not valid JSON ({exc.msg})", {})
            except RecursionError:  # the parser recurses per level: "[[[[…" from a model is no crash
                return done(False, f"Error: arguments for {name} are nested too deeply", {})
        if not isinstance(args, dict):
            return done(False, f"Error: arguments for {name} must be a JSON object", {})
        tool = self.get(name)
        if tool is None:
            known = ", ".join(self._listed) or "none"
            return done(False, f"Error: unknown tool {name!r}. Available tools: {known}", args)
        name = tool.name  # a hidden tool named without its category: the result names it in full
        if tool.repair is not None and request is not None:
            args = tool.repair(request, args)
        kwargs = args
        validated: BaseModel | None = None
        if tool.model is not None:
            try:
                validated = tool.model.model_validate(args)
                # Attributes, not model_dump(): nested pydantic parameters stay models.
                kwargs = {k: getattr(validated, k) for k in type(validated).model_fields}
            except ValidationError as exc:
                return done(False, format_validation_error(name, exc), args)
        if tool.grounded is not None and request is not None:
            ask = await tool.grounded(request, kwargs)
            if ask is not None:
                log.info("refused %s(%s): not grounded in %r", name, args, request)
                if tool.read_only or ask == OTHER_CHANGE:  # the model reads why and answers in words
                    return done(False, f"Error: not run: {ask}", args)
                if questions(tool, request):  # "who wrote Pride and Prejudice?" set no reminder
                    return done(False, f"Error: not run: {NOT_ASKED}", args)
                said = refusal(tool, request, ask)
                if said == CANNOT:  # "Call me Sam from now on." asked for no reminder: said in words
                    return done(False, f"Error: not run: {NOT_WANTED}", args)
                return done(False, f"Error: not done: {ask}", args, refusal=said)
        try:
            if inspect.iscoroutinefunction(tool.handler):
                value = await tool.handler(**kwargs)
            else:
                value = await asyncio.to_thread(tool.handler, **kwargs)
            if isinstance(value, Awaitable):
                value = await value
        except ToolError as exc:
            return done(False, f"Error: {exc.message}", args)
        except Exception as exc:  # a tool's bug must not end the turn
            log.warning("tool %s raised %s", name, exc, exc_info=True)
            return done(False, f"Error: {name} failed: {type(exc).__name__}: {exc}", args)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        shown = validated.model_dump(mode="json") if validated is not None else kwargs
        said = (tool.say(text) or "") if tool.say is not None else ""
        return done(True, text, shown, tool.direct_return, said=said)


def about(tool: Tool, request: str) -> bool:
    """Whether the user's words are about what ``tool`` does: they hold one of its ``asks``
    words (else one of its ``words``)."""
    return any(
        re.search(rf"\b(?:{w})\b", request, re.IGNORECASE)
        for w in ((tool.asks,) if tool.asks else tool.words)
    )


def questions(tool: Tool, request: str) -> bool:
    """Whether ``request`` is a question ("who…", "what…", "how…") about something other
    than what ``tool`` does: a refused call of it is the model's to answer in words, not a
    request IRIS cannot serve."""
    return bool(_QUESTION.match(request)) and not about(tool, request)


def refusal(tool: Tool, request: str, ask: str) -> str:
    """What to say for a refused call: the tool's question when the user's words are about
    what the tool does ("set a timer" → "How long should the timer run?"), else ``CANNOT``
    ("turn on the lamp" never asked for a timer, "heating up to twenty one degrees" neither)."""
    return ask if about(tool, request) else CANNOT
