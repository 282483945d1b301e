"""The reply policy: every rule that judges, holds or replaces what the model says, in one list.

Between the model and the speaker IRIS keeps the tool-calling protocol (stream, calls,
results, limit) and, beside it, a short ordered list of rules for what a 1.5B model gets
wrong. Each rule is named here with what it guards against; each can be switched off
(``[reply] off = ["claims"]``); each decision it makes — on which sentence, what it did —
is recorded in the turn's trace (``policy``: ``iris ask --json``, ``iris status``), so a
reply that is not the model's own words always says which rule changed it. The figures
that keep each rule are in ARCHITECTURE.md ("The reply policy").

Per sentence a rule may let it be spoken, hold it until the round ends, or drop it; at a
round's end it may say something instead, ask the model again with a note, make a call the
model described, or do nothing. The English words they share live in ``tools.lexicon``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from iris_voice.config import REPLY_RULES

log = logging.getLogger(__name__)

GUARDS = {
    "syntax": "call syntax, a tool's name or IRIS's own note to the model spoken aloud",
    "claims": "an action on the world claimed while no tool acted (a device, a call, a shop)",
    "own_claims": "a timer or reminder action said done with no call: asked once to act, then not claimed",
    "described_call": "a read-only call described in words instead of made: made",
    "retry_words": "every call failed and the model fell silent: one round for its own words",
    "explain": "a tool answered in JSON and the model said nothing: one round to say it in words",
    "closing": "a silent or cut-off turn: its closing words (the last result, or that IRIS cannot)",
    "unknown_tool": "calls only to tools nobody has: said that IRIS cannot",
    "repeated_call": "the same call made again instead of an answer: the answer asked for",
    "one_change": "one change asked, a second made of the model's own: the round ends at the first",
    "grounding": "a side effect nobody asked for (a timer from 'turn on the lamp'): not run",
}
"""What each rule guards against, in the order they act."""
assert tuple(GUARDS) == REPLY_RULES, "config.REPLY_RULES and policy.GUARDS name the same rules"


class Trace(Protocol):
    """Where decisions are recorded (``TurnTrace``)."""

    extra: dict


@dataclass(frozen=True)
class Decision:
    """One rule's decision in a turn."""

    rule: str
    """The rule's name (``GUARDS``)."""
    action: str
    """What it did: ``dropped``, ``replaced``, ``said``, ``asked again``, ``called``, ``cut``,
    ``not run``."""
    text: str = ""
    """The sentence (or call) it acted on."""
    said: str = ""
    """What was said instead, if anything."""


@dataclass
class ReplyPolicy:
    """The rules switched on, and the record of what they decided."""

    off: frozenset[str] = field(default_factory=frozenset)
    """Rules switched off (``ReplyConfig.off``)."""

    def __post_init__(self) -> None:
        unknown = set(self.off) - set(GUARDS)
        if unknown:
            raise ValueError(f"unknown reply rules: {sorted(unknown)}")

    def on(self, rule: str) -> bool:
        """Whether ``rule`` acts (a name of ``GUARDS``)."""
        if rule not in GUARDS:
            raise KeyError(rule)
        return rule not in self.off

    def record(self, trace: Trace, rule: str, action: str, text: str = "", said: str = "") -> None:
        """Write one decision into ``trace`` (and the log)."""
        decision = Decision(rule, action, text, said)
        trace.extra.setdefault("policy", []).append({k: v for k, v in vars(decision).items() if v})
        log.info("reply rule %s: %s %r%s", rule, action, text, f" -> {said!r}" if said else "")


def fired(trace_dict: dict) -> list[str]:
    """The rules that decided something in a turn, from its trace's JSON form."""
    return [d["rule"] for d in trace_dict.get("policy", ())]
