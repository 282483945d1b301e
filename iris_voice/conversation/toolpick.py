"""Which hidden tools a turn shows the model, and where: after the history, in the turn itself.

The server reuses its prompt cache only for the longest common prefix, and Qwen's chat
template writes the ``tools`` parameter into the system block, before the history: a tool
list that changed per turn would make the server read the whole history again (1,000
tokens are 14 s on two cores). So the listed tools (built-in, eager MCP, the meta-tools)
never change, and a turn's retrieved tools — lazy MCP tools and the built-ins few requests
need (``Tool.on_demand``: pausing, resuming, adjusting a timer), ranked by
``tools.retrieval.ToolIndex`` — are written into that turn's user message, in the same
``<tools>`` form the template uses. The history keeps the user's words only, so the next
turn's prefix is what the server saw (up to this turn).

A follow-up that names no tool and starts like one ("and in Berlin?", "what about tea?")
gets the hidden tools the previous turn called.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from iris_voice.config import RetrievalConfig
from iris_voice.conversation.followup import referent
from iris_voice.conversation.history import Message
from iris_voice.tools.examples import with_example
from iris_voice.tools.lexicon import asks_change, refers_back
from iris_voice.tools.registry import Tool, ToolRegistry, about
from iris_voice.tools.render import render
from iris_voice.tools.repair import asks_conversion
from iris_voice.tools.retrieval import ToolIndex, words

log = logging.getLogger(__name__)
_FOLLOW_UP = re.compile(r"^\W*(?:and|also|now|then|what about|how about|same for)\b", re.IGNORECASE)
# Verbs of changing, counted ("create a branch and switch to it": two changes asked).
_CHANGE_VERBS = (
    r"(?:set|create|add|remember|save|store|write|delete|remove|update|change|rename|move|edit"
    r"|append|insert|commit|stage|reset|check ?out|switch|forget|erase|record|note|put|clear)"
)
_CHANGE = re.compile(rf"\b{_CHANGE_VERBS}\b", re.IGNORECASE)
_CREATE = re.compile(r"\b(?:create|add|new|remember|save|store|note|record|append|insert|put)\b", re.I)
_DELETE = re.compile(r"\b(?:delete|remove|forget|erase|reset|clear|drop|discard|undo)\b", re.I)
# A tool whose name holds one of these verbs changes something (unless its server says it
# is read-only), and runs only for a request with a word that asks for that kind of change:
# "set the stock of apples to 100" may update a row (write_query), not create a table.
_WRITE_VERBS = {
    **dict.fromkeys(("create", "add", "append", "insert", "save", "store", "put"), _CREATE),
    **dict.fromkeys(("delete", "remove", "reset"), _DELETE),
    **dict.fromkeys(
        ("write", "edit", "update", "set", "move", "rename", "commit", "checkout", "push", "stage"), _CHANGE
    ),
}

LISTED_SERVES = 0.8
"""A listed tool scoring this share of a hidden tool's score serves the request as well."""

BARE = 0.95
"""A tool without parameters ranks as if it scored this share of its score."""

LEAD = "Tools for this request, called like the tools above:"
"""The line before the retrieved definitions in the user message."""


def indexed(tool: Tool) -> bool:
    """Tools the retriever ranks: all but the lazy meta-tools (they are always listed)."""
    return "mcp" not in tool.meta


def tools_block(tools: list[Tool], brief: bool = False, examples: bool = False) -> str:
    """The definitions as the chat template writes them: compact JSON, one per line
    (``brief``: each description its first sentence, see ``brief_definition``;
    ``examples``: each with an example call from its schema, see ``with_example``)."""
    rendered = render([t.spec for t in tools], "ollama")
    lines = rendered if isinstance(rendered, list) else []
    if brief:
        lines = [brief_definition(t) for t in lines]
    if examples:
        lines = [with_example(line, t.spec) for line, t in zip(lines, tools, strict=True)]
    body = "\n".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in lines)
    return f"<tools>\n{body}\n</tools>"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_NOT_NEEDED = ("$schema", "title", "examples", "default")
BRIEF_CHARS = 160
"""Longest description a brief definition keeps (its first sentence, cut at a word)."""


def brief_definition(node: Any) -> Any:
    """A rendered definition without what choosing and filling in a call does not need.

    A retrieved definition is read anew on every turn it is shown (it rides on the user
    message, after the cached prefix): an MCP server's long descriptions ("Accepts: ISO
    8601 format (e.g., …), relative dates (e.g., …)…") and ``$schema`` cost prompt time
    each turn. Each description keeps its first sentence; ``$schema``, ``title``,
    ``examples`` and ``default`` go; names, types, enums and ``required`` stay.
    """
    if isinstance(node, list):
        return [brief_definition(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NOT_NEEDED:
            continue
        if key == "description" and isinstance(value, str):
            out[key] = _first_sentence(value)
        elif key == "properties" and isinstance(value, dict):  # its keys are names, not keywords
            out[key] = {name: brief_definition(schema) for name, schema in value.items()}
        else:
            out[key] = brief_definition(value)
    return out


def _first_sentence(text: str) -> str:
    first = _SENTENCE_END.split(text.strip(), maxsplit=1)[0]
    if len(first) <= BRIEF_CHARS:
        return first
    return first[:BRIEF_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"


class ToolPicker:
    """Retrieval over a registry's tools, re-indexed whenever its tools change."""

    def __init__(self, registry: ToolRegistry, cfg: RetrievalConfig) -> None:
        self.registry = registry
        self.cfg = cfg
        self._index: tuple[tuple[str, ...], ToolIndex] | None = None

    def index(self) -> ToolIndex:
        """The index of every tool now registered (built again when the names changed)."""
        names = tuple(self.registry.callable_names())
        if self._index is None or self._index[0] != names:
            tools = [t for t in (*self.registry, *self.registry.hidden()) if indexed(t)]
            self._index = (names, ToolIndex(tools))
        return self._index[1]

    def listed(self) -> list[Tool]:
        """The tools every turn lists (in the cached prefix): the registry's listed tools,
        less those retrieval shows on demand (``Tool.on_demand``) when it runs."""
        return [t for t in self.registry if not (self.cfg.enabled and t.on_demand)]

    def candidates(self) -> list[Tool]:
        """The tools a turn may be shown beside the listed ones: the hidden ones and, when
        retrieval runs, the on-demand ones."""
        demand = [t for t in self.registry if t.on_demand] if self.cfg.enabled else []
        return [*demand, *self.registry.hidden()]

    def pick(self, text: str, history: list[Message]) -> list[Tool]:
        """The hidden (and on-demand) tools to show for ``text``: the best-ranked ones above the score
        floor that a listed tool does not already serve, else those the previous turn called.

        A listed tool already serves a request when it matches nearly as well
        (``LISTED_SERVES`` of the hidden tool's score: "what time is it in Mumbai" and the
        built-in clock) or when it has the hidden tool's own name (the MCP time server's
        ``get_current_time`` beside the built-in one): adding the hidden one would only
        cost prompt time (a second model round when the model calls it). A tool that
        changes something is shown only for a request that asks for a change
        of its kind (``asks_change``, ``licensed``), and first: "what products are in the
        shop database?" never sees ``create_table``, "remember that Bob likes chess" not
        ``delete_observations``.
        """
        hidden = {t.name: t for t in self.candidates()}
        if not self.cfg.enabled or not hidden:
            return []
        listed = {t.name for t in self.listed()}
        ranked = self.index().rank(text)
        best_listed = max([0.0, *(s.score for s in ranked if s.name not in hidden)])
        if asks_conversion(text):  # the listed clock tells the time now, not at 8 am in New York
            best_listed = 0.0
        floor = max(self.cfg.min_score, best_listed / LISTED_SERVES)
        # An on-demand tool is a listed one's sibling: shown for a request about what it
        # does ("pause the pasta timer", never "hold on") that it matches better than any
        # listed tool, on a word that best listed tool does not have ("put a 45 second timer
        # on" matches the short pause_timer better on "second", a word of set_timer's too).
        # No score floor: with the built-ins alone (no MCP server) scores stay low.
        index, asked = self.index(), set(words(text))
        # "Pause it" names no timer, yet is about the one the conversation last set: an
        # on-demand tool of the family that named it is about the request too.
        about_it = refers_back(text) and referent(history, self.registry) is not None
        rival = next((s.name for s in ranked if s.name not in hidden and s.score > 0), None)
        shared = index.terms(rival) if rival else set()
        change = asks_change(text)
        picked = [
            hidden[s.name]
            for s in ranked
            if s.name in hidden
            and (
                s.score > best_listed
                and (about(hidden[s.name], text) or (about_it and "referent" in hidden[s.name].meta))
                and bool(asked & (index.terms(s.name) - shared))
                if hidden[s.name].on_demand
                else s.score >= floor
            )
            and s.name.rpartition("/")[2] not in listed
            and (not writes(hidden[s.name]) or (change and licensed(hidden[s.name], text)))
        ]
        if change:  # what was asked is a change: a tool that makes one is not cut for a reader
            picked.sort(key=lambda t: not writes(t))
        picked = picked[: self.cfg.tools_per_turn]
        # A tool without parameters cannot carry what the request names ("what products are
        # in the shop database?": list_tables): where the ranker can hardly tell it from one
        # that takes arguments (read_query), that one is shown first.
        score = {s.name: s.score for s in ranked}
        picked.sort(key=lambda t: -score[t.name] * (1 if takes_arguments(t) else BARE))
        if change:  # what was asked is a change: the tools that make one come first
            picked.sort(key=lambda t: not writes(t))
        if not picked and _FOLLOW_UP.match(text):
            picked = [hidden[n] for n in previous_calls(history) if n in hidden]
        log.debug("retrieved for %r: %s", text, [t.name for t in picked])
        return picked[: self.cfg.tools_per_turn]

    def block(self, tools: list[Tool]) -> str:
        """The picked definitions as this turn shows them (``retrieval.definitions``)."""
        return tools_block(tools, brief=self.cfg.definitions == "brief", examples=self.cfg.examples)

    def with_tools(self, message: Message, tools: list[Tool], note: str = "") -> Message:
        """The user ``message`` as sent this turn: its words, then the picked definitions,
        then ``note`` (how to write a constrained choice)."""
        parts = [message["content"]]
        if tools:
            parts.append(f"{LEAD}\n{self.block(tools)}")
        if note:
            parts.append(note)
        return message if len(parts) == 1 else {**message, "content": "\n\n".join(parts)}


def changes_asked(text: str) -> int:
    """How many verbs of changing ``text`` holds ("create a branch and switch to it": 2)."""
    return len(_CHANGE.findall(text))


_JOINED = re.compile(r"\b(?:and|also|then|plus|both|too|as well)\b|;", re.IGNORECASE)


def change_made(request: str, registry: ToolRegistry, calls: list[tuple[str, Any]]) -> bool:
    """Whether ``calls`` (a round's, so far) already hold the one change ``request`` asks
    for: it opens with one verb of changing and joins nothing to it ("Remember that Bob
    likes chess."; not "…a pasta timer and a tea timer"), and a call that changes something
    has come. The rest of the round is not waited for: the 1.5B model went on to store a
    second fact of its own ("plays chess", four seconds more)."""
    if not (asks_change(request) and changes_asked(request) == 1) or _JOINED.search(request):
        return False
    return any((tool := registry.get(name)) is not None and writes(tool) for name, _ in calls)


def takes_arguments(tool: Tool) -> bool:
    """Whether ``tool`` has parameters the model fills in."""
    props = tool.spec.parameters.get("properties") if isinstance(tool.spec.parameters, dict) else None
    return bool(props)


def _verbs(tool: Tool) -> set[str]:
    """The verbs of changing in ``tool``'s name, unless its server calls it read-only."""
    if tool.read_only:
        return set()
    tail = tool.name.rpartition("/")[2]
    return _WRITE_VERBS.keys() & set(re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", tail.lower()))


def writes(tool: Tool) -> bool:
    """Whether ``tool`` changes something: its name says so and its server does not call
    it read-only (MCP's ``readOnlyHint``)."""
    return bool(_verbs(tool))


def licensed(tool: Tool, text: str) -> bool:
    """Whether ``text`` asks for the kind of change ``tool`` makes (creating, deleting, or
    changing in place)."""
    return any(_WRITE_VERBS[v].search(text) for v in _verbs(tool))


def previous_calls(history: list[Message]) -> list[str]:
    """Names of the tools called since the last user message of ``history``."""
    names: list[str] = []
    for message in reversed(history):
        if message.get("role") == "user":
            break
        for call in message.get("tool_calls") or ():
            name = (call.get("function") or {}).get("name")
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names
