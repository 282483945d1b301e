"""What a small model needs beyond the tool-calling protocol (``chat.ChatLoop``'s repairs).

A 1.5B model follows the protocol most of the time; these are the named steps for when it
does not, each one measured on the tool benchmarks before it was kept:

- it reaches for a tool on a question it can answer, every call fails and it falls silent:
  one more round for words, its calls not taken (``retry_without_tools``; every such
  round lists the same tools, so the server's cached prompt prefix stays);
- it says a timer action was done and calls nothing ("The pasta timer has been
  cancelled."): its words go back with ``ACT_NOTE`` and it gets one more round with its
  tools (``act_now``); if it still only talks, ``NOT_DONE`` is said;
- a tool answered and it wrote nothing a listener can hear, the result being no answer
  read out (JSON): one more round for the answer in words (``explain_now``);
- it describes a call in words instead of making it ("you can use the
  data/sqlite/describe_table function with the argument "products""): a tool that changes
  nothing, named with what its one required argument needs, is called (``described_call``);
- it stops after its tools ran, or its last words were call syntax: ``closing_words``;
- call syntax or a tool's name is never spoken (``unspeakable``).

Each note the model is sent stays in the turn's messages, so the history shows why the
next round answered as it did.
"""

from __future__ import annotations

import re
from typing import Any

from iris_voice.conversation.rounds import Loop, Round
from iris_voice.conversation.toolpick import writes
from iris_voice.conversation.trace import TurnTrace
from iris_voice.conversation.turn import Turn
from iris_voice.tools.mcp.saying import reports_failure
from iris_voice.tools.registry import CANNOT, NOTHING_FOUND, Tool, spoken

LIMIT_NOTE = "Answer my question now in one short sentence, using the tool results above. Do not call tools."
"""Sent when the calls are used up (or a call repeats): the answer, in words."""
NO_TOOL_NOTE = "The tools could not help. Answer my question now in one short sentence. Do not call tools."
"""Sent when every call failed and the model fell silent."""
WORDS_NOTE = "(Reply in one short sentence, without tools.)"
"""Sent when a call was made for something nobody asked of its tool ("Call me Sam." set a
reminder): the reply is the model's, in words (the reply rules still judge it)."""
ACT_NOTE = "Nothing has been done: you called no tool. Call the tool for my request now."
"""Sent when the model said a timer action was done without calling its tool."""
NOT_DONE = "Sorry, that did not work; nothing was changed."
"""Said when the model, told once, still claimed a timer action without calling its tool."""
FAILED = "Sorry, that did not work."
"""Said for a failure a server wrote as an ordinary result, when the model said nothing
(whether anything changed, the failure does not say)."""

# Call syntax that got past the speech filter — braces, "key": pairs, tags, snake_case
# identifiers (a tool's name, real or invented: "open_garage_door") — is never spoken.
_SYNTAX = re.compile(r'[{}]|"\s*:|</?[a-z_]+>|\b[a-z]+_[a-z0-9_]+\b', re.IGNORECASE)


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z']+", text.lower()))


_NOTE_SENTENCES = frozenset(
    _plain(part)
    for note in (LIMIT_NOTE, NO_TOOL_NOTE, ACT_NOTE, WORDS_NOTE)
    for part in re.split(r"(?<=[.:])\s+", note)
)
"""The sentences of IRIS's own notes to the model."""


def unspeakable(sentence: str, tool_names: list[str]) -> bool:
    """True when ``sentence`` holds call syntax, names a tool (``time/get_current_time``), is
    a tool's error copied out (``Error: …``) or one of IRIS's own notes to the model said
    back ("The tools could not help.")."""
    if sentence.lstrip().startswith("Error:") or _plain(sentence) in _NOTE_SENTENCES:
        return True
    return bool(_SYNTAX.search(sentence)) or any("/" in n and n in sentence for n in tool_names)


# A value in quotes: "products", `products`, 'products' (not the apostrophe of "shop's").
_QUOTED = re.compile(r"[\"“`]([^\"”`]{1,80})[\"”`]|(?<!\w)'([^']{1,80})'(?!\w)")


def described_call(sentences: list[str], shown: tuple[Tool, ...]) -> tuple[str, dict[str, Any]] | None:
    """The call ``sentences`` (withheld from speech) describe instead of making it: one shown
    tool named in full that changes nothing, and the one quoted value its one required
    argument takes (or none, for a tool without required arguments); else None. A tool
    that changes something is never called from a description: describing is not asking."""
    for sentence in sentences:
        named = [t for t in shown if t.name in sentence and not writes(t)]
        if len(named) != 1:
            continue
        tool = named[0]
        schema = tool.spec.parameters if isinstance(tool.spec.parameters, dict) else {}
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        rest = re.sub(rf"[\"'`“”]?{re.escape(tool.name)}[\"'`“”]?", " ", sentence)
        values = [a or b for a, b in _QUOTED.findall(rest)]
        if not required:
            return tool.name, {}
        prop = (schema.get("properties") or {}).get(required[0]) or {}
        if len(required) == 1 and len(set(values)) == 1 and prop.get("type", "string") == "string":
            return tool.name, {required[0]: values[0]}
    return None


def last_words(trace: TurnTrace, tool_names: list[str]) -> str:
    """What to say when the model said nothing after its tools ran: the last result when it
    can be spoken (a calculator's "23 * 47 = 1081"), ``NOTHING_FOUND`` when it is empty
    (``[]`` is no word to say), ``FAILED`` when it is a failure the server wrote as an
    ordinary result ("Database error: no such table: apples" is no answer to "set the
    stock of apples to 100"), else ``CANNOT`` (raw JSON is no answer)."""
    ok = [c["result"] for c in trace.tool_calls if c["ok"]]
    if ok and reports_failure(str(ok[-1])):
        return FAILED
    text = spoken(ok[-1]) if ok else ""
    if ok and not any(ch.isalnum() for ch in text):
        return NOTHING_FOUND
    return text if text and not unspeakable(text, tool_names) else CANNOT


def answer_now(turn: Turn, loop: Loop, note: str) -> None:
    """No more tools this turn: ask for the answer in words."""
    loop.calls_made = loop.limit
    turn.messages.append({"role": "user", "content": note})


def act_now(turn: Turn, loop: Loop, rnd: Round) -> bool:
    """The round said a timer action was done and called nothing: once a turn, its words
    go back with ``ACT_NOTE`` and it gets another round with its tools (True: go on)."""
    if not rnd.undone or loop.urged or not rnd.tools:
        return False
    loop.urged = True
    turn.messages.append({"role": "assistant", "content": rnd.content})
    turn.messages.append({"role": "user", "content": ACT_NOTE})
    turn.trace.extra["urged"] = rnd.undone
    return True


def retry_without_tools(turn: Turn, loop: Loop, rnd: Round) -> bool:
    """Every call failed and the model fell silent — it reached for a tool on a question it
    can answer ("how many legs does a spider have" → the clock): one more round, without
    tools, for its own answer (True: go on)."""
    calls = turn.trace.tool_calls
    failed = bool(calls) and not any(c["ok"] for c in calls)
    if failed and not loop.said and rnd.tools:
        answer_now(turn, loop, NO_TOOL_NOTE)
        return True
    return False


def explain_now(turn: Turn, loop: Loop, rnd: Round) -> bool:
    """A tool answered, and the model wrote nothing a listener can hear about it (only call
    syntax, or nothing) while the result itself cannot be read out (a knowledge graph's
    JSON): one more round, its calls not taken, for the answer in words — not "I can't", when
    the tool did its part (True: go on)."""
    calls = turn.trace.tool_calls
    if loop.said or not rnd.tools or not any(c["ok"] for c in calls):
        return False
    if last_words(turn.trace, loop.names) != CANNOT:
        # the result itself is the answer ("23 * 47 = 1081"); an empty one is said as such:
        # asked to explain nothing, the model made up a price
        return False
    answer_now(turn, loop, LIMIT_NOTE)
    turn.trace.extra["explained"] = True
    return True


def closing_words(trace: TurnTrace, loop: Loop) -> str | None:
    """The words a silent turn ends with — ``CANNOT`` when only call syntax was written (for
    no tool IRIS has), the last tool result when tools ran. A turn whose last words were
    withheld as call syntax gets a closing sentence too (the clause spoken before them may
    end mid-sentence: "To have a medium Americano,")."""
    # A first clause spoken and nothing after it ("To describe the products table,"):
    # whatever followed was withheld, or held back and said late, or never written.
    unfinished = loop.said and loop.last.rstrip().endswith((",", ";", ":", "-", "—"))
    if loop.said and (loop.cut or unfinished):
        if not any(c["ok"] for c in trace.tool_calls):
            return CANNOT
        # After a tool's answer only a sentence left unfinished needs its end.
        return None if loop.last.endswith((".", "!", "?")) else last_words(trace, loop.names)
    if loop.said:
        return None
    if loop.dropped and not trace.tool_calls:
        return CANNOT
    return last_words(trace, loop.names) if trace.tool_calls else None
