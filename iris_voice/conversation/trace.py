"""The per-turn trace: what happened in a turn, with timings and token counts.

``iris ask --json`` prints ``TurnTrace.to_dict()``; ``iris status`` and the benchmarks
read the same keys.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from iris_voice.events import ExecutionPath
from iris_voice.tools.registry import ToolResult


@dataclass
class TurnTrace:
    """Mutable record of one turn: the producer of its sentences fills in what it did
    (rounds, tool calls, tokens), ``run_turn`` the rest (reply, path, times)."""

    text: str
    """The user's request."""
    reply: str = ""
    """What IRIS answered (what was spoken, for a cut-off turn)."""
    execution_path: ExecutionPath | None = None
    """How the turn was answered (None until the producer says)."""
    rounds: int = 0
    """Model calls made in this turn."""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """One dict per tool call: name, arguments, ok, result, duration_ms, at_ms."""
    prompt_tokens: int = 0
    """Prompt tokens the server evaluated, summed over rounds."""
    completion_tokens: int = 0
    """Tokens generated, summed over rounds."""
    prompt_ms: list[float] = field(default_factory=list)
    """Server-side prompt-evaluation time of each round."""
    first_token_ms: float | None = None
    """From the start of the turn to the model's first output."""
    first_sentence_ms: float | None = None
    """From the start of the turn to the first complete sentence."""
    total_ms: float | None = None
    """Whole turn."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Stage-specific additions (voice timings, boost loops)."""
    started: float = field(default_factory=time.perf_counter)
    """perf_counter at the start of the turn."""

    def elapsed_ms(self) -> float:
        """Milliseconds since the turn started."""
        return round((time.perf_counter() - self.started) * 1000, 1)

    def add_call(self, res: ToolResult) -> None:
        """Record one tool call."""
        self.tool_calls.append(
            {
                "name": res.name,
                "arguments": res.arguments,
                "ok": res.ok,
                "result": res.result,
                "duration_ms": res.duration_ms,
                "at_ms": self.elapsed_ms(),
            }
        )

    def add_tokens(self, prompt: int, completion: int, prompt_ms: float) -> None:
        """Add one round's counters from the server."""
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.prompt_ms.append(round(prompt_ms, 1))

    def finish(self) -> None:
        """Stamp the total time."""
        self.total_ms = self.elapsed_ms()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form printed by ``iris ask --json``."""
        return {
            "text": self.text,
            "reply": self.reply,
            "execution_path": str(self.execution_path or ""),
            "rounds": self.rounds,
            "tool_calls": self.tool_calls,
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "timings_ms": {
                "first_token": self.first_token_ms,
                "first_sentence": self.first_sentence_ms,
                "total": self.total_ms,
                "prompt_eval": self.prompt_ms,
            },
            **self.extra,
        }
