"""The state of one turn's tool loop and of each model round in it (``chat.ChatLoop``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from iris_voice.llm.textcalls import TextCall
from iris_voice.tools.registry import Tool


@dataclass
class Loop:
    """One turn's tool loop: what it may still do and what it has said."""

    limit: int
    """``llm.max_tool_calls``."""
    names: list[str]
    """The tools the model may call (for the speech filter and the closing words)."""
    picked: list[Tool]
    """The hidden tools retrieval showed for this turn."""
    calls_made: int = 0
    seen: set[str] = field(default_factory=set)
    """Each call made, with its arguments."""
    dropped: bool = False
    """A sentence was withheld as call syntax."""
    cut: bool = False
    """The last sentence the model wrote was withheld (nothing spoken since)."""
    said: int = 0
    """Sentences spoken in the turn."""
    last: str = ""
    """The last sentence spoken."""
    urged: bool = False
    """The model was told once that its claimed action was not done (``ACT_NOTE``)."""
    strict: bool = False
    """The model reached for a tool the request was not about: any action its words then
    claim is judged a claim (``honest.ClaimGuard.strict``)."""

    def spoke(self, rnd: Round, sentence: str) -> str:
        """Count ``sentence`` as spoken (in the turn and in ``rnd``); returns it."""
        rnd.said += 1
        self.said += 1
        self.cut = False
        self.last = sentence
        return sentence

    @property
    def tools_allowed(self) -> bool:
        """Calls are left and there are tools to call."""
        return self.calls_made < self.limit and bool(self.names)

    def repeated(self, calls: list[tuple[str, Any]]) -> bool:
        """Every one of ``calls`` was made before (else they are remembered)."""
        keys = [f"{n}:{json.dumps(a, sort_keys=True, default=str)}" for n, a in calls]
        if all(k in self.seen for k in keys):
            return True
        self.seen.update(keys)
        return False


@dataclass
class Round:
    """One model round: whether it was offered tools, what it wrote and called."""

    tools: bool
    content: str = ""
    structured: list[tuple[str, Any]] = field(default_factory=list)
    """Native tool calls."""
    written: list[TextCall] = field(default_factory=list)
    """Calls written as text, as the speech filter decided them."""
    said: int = 0
    withheld: list[str] = field(default_factory=list)
    """Sentences not spoken as call syntax or a tool's name."""
    undone: list[str] = field(default_factory=list)
    """Sentences claiming a timer action the round did not call (``honest.ClaimGuard``)."""

    def calls(self) -> list[tuple[str, Any]]:
        """The calls to run: native ones, else those written as text (what was spoken is
        never run)."""
        return self.structured or [(c.name, c.arguments) for c in self.written]
