"""A long text conversation on the real model: does the prompt cache survive the history bounds?

A daemon runs all day, so its conversations reach ``llm.history_turns`` and
``llm.history_tokens``. Trimming the oldest turn moves the conversation's start, and the
model server then reads the whole history again. This benchmark asks up to 30 questions in
one conversation (chat questions, questions the model answers with a tool, fast-path
commands) through IRIS's own assembly against the test bed's Ollama-protocol server, with
IRIS idle between questions as while the user listens and speaks (``--gap`` seconds: the
prompt-cache warm-up runs then and is cut short by the next question, as in the daemon).

The same conversation runs twice on one server: with the history trimmed in one step
down to the low-water mark (``Bounds.keep``, IRIS's policy) and with one turn dropped per
question (``keep = 1.0``, the policy before, as the baseline).

Per model turn: the prompt tokens the server evaluated (``prompt_eval_count`` summed over
the turn's rounds: ``TurnTrace.prompt_tokens``), the turn's own tokens (what the turn adds
after the history, in the chat template's rendering, over its rounds: what a cache holding
the history leaves to evaluate), the server's prompt-evaluation ms, the first sentence's
latency, the history's size and whether it was trimmed. Summary per policy: the median of
evaluated / own tokens after the first model turn (goal <= 1.3); the chat questions' first
sentence on turns 7-30 against turn 2 (goal <= 1.2x) and against the median of turns 2-6.

    python -m tools.bench.long_chat [--turns 30] [--gap 12] [--policies steps,one]
    python -m tools.bench.long_chat --gap 0 --turns 12     # quick: each warm-up settles first
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import statistics
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from iris_voice.config import Config, LlmConfig, ToolsConfig
from iris_voice.conversation.responder import ask
from iris_voice.llm.client import ChatChunk, OllamaBackend
from tools.bench.report import NOISE, med

QUESTIONS = [
    "Give me one fun fact about octopuses.",
    "What is the capital of France?",
    "What time is it in Tokyo?",
    "Who wrote Romeo and Juliet?",
    "What is twenty three times forty seven?",
    "What is the largest planet in our solar system?",
    "How many minutes are there in three and a half hours?",
    "How many legs does a spider have?",
    "Set a pasta timer for eight minutes.",
    "At what temperature in Celsius does water boil?",
    "And in Fahrenheit?",
    "How much time is left on the pasta timer?",
    "How do you say thank you in Spanish?",
    "Is it morning or evening in Sydney right now?",
    "What color do you get when you mix blue and yellow?",
    "What is fifteen percent of eighty?",
    "What is the chemical symbol for gold?",
    "Who painted the Mona Lisa?",
    "Which timers are running?",
    "Name one famous painting by Vincent van Gogh.",
    "I bought four coffees at three dollars twenty each. What did I spend?",
    "What is the tallest mountain in the world?",
    "What time is it in London?",
    "How many continents are there?",
    "What language is spoken in Brazil?",
    "Cancel the pasta timer.",
    "What is the freezing point of water in Fahrenheit?",
    "Who was the first person to walk on the moon?",
    "What day of the week will it be in three days?",
    "Give me a one sentence tip for sleeping better.",
]
"""One conversation: chat (turns 1 and 2 among them), tool questions for the model, fast-path commands."""
POLICIES = {"steps": None, "one": 1.0}
"""Trimming policies by name: ``Bounds.keep`` (None: IRIS's default)."""


class Recorder:
    """A ``ChatBackend`` that forwards to another and keeps every request it was sent."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.name = backend.name
        self.requests: list[dict[str, Any]] = []
        """Each request's ``messages``, ``tools`` and ``warm`` (a one-token warm-up)."""

    def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        options: dict[str, Any] | None = None,
    ) -> AsyncIterator[ChatChunk]:
        """Record the request, then stream the backend's reply."""
        warm = (options or {}).get("num_predict") == 1
        entry = {"messages": [dict(m) for m in messages], "tools": tools, "warm": warm, "evaluated": None}
        self.requests.append(entry)
        return self._relay(entry, self.backend.stream(messages, tools, options))

    @staticmethod
    async def _relay(entry: dict[str, Any], stream: AsyncIterator[ChatChunk]) -> AsyncIterator[ChatChunk]:
        # The final chunk's prompt_eval_count; a request cut short (a cancelled warm-up) has none.
        async for chunk in stream:
            if chunk.done:
                entry["evaluated"] = chunk.prompt_tokens
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


class Counter:
    """Tokens as the served model reads a request: its chat template and tokenizer."""

    def __init__(self) -> None:
        from llama_cpp import Llama

        from tools.testbed.fetch_models import assemble
        from tools.testbed.ollama_proto import ChatTemplate

        self._llm = Llama(str(assemble()), vocab_only=True, verbose=False)
        self._template = ChatTemplate(self._llm.metadata["tokenizer.chat_template"])

    def tokens(self, messages: list[dict[str, Any]], tools: Any) -> list[int]:
        """The prompt's tokens, generation prompt included."""
        text = self._template.render(messages, list(tools) if tools else None)
        return self._llm.tokenize(text.encode(), add_bos=False, special=True)

    def own(self, rounds: list[dict[str, Any]]) -> int:
        """What a turn adds after what its server cache could hold: the first round after
        the history (as a warm-up sends it), each later round after the round before."""
        before = [*rounds[0]["messages"][:-1], {"role": "user", "content": "Hi"}]
        reference = self.tokens(before, rounds[0]["tools"])
        total = 0
        for r in rounds:
            now = self.tokens(r["messages"], r["tools"])
            same = next((i for i, (a, b) in enumerate(zip(now, reference, strict=False)) if a != b), None)
            total += len(now) - (min(len(now), len(reference)) if same is None else same)
            reference = now
        return total


def same_prefix(warm: dict[str, Any], first: dict[str, Any]) -> bool:
    """The warm-up sent exactly what the turn's first request sends before its question."""
    return warm["messages"][:-1] == first["messages"][:-1] and warm["tools"] == first["tools"]


async def converse(
    url: str, keep: float | None, turns: int, gap: float, counter: Counter, workdir: Path, overrides: dict
) -> list[dict[str, Any]]:
    """One conversation under one trimming policy; a row per turn."""
    from iris_voice.app.assembly import open_app

    llm = LlmConfig(host=url, temperature=0.0, **overrides)
    cfg = Config(llm=llm, tools=ToolsConfig(timezone="UTC", timers_db=str(workdir / "timers.db")))
    recorder = Recorder(OllamaBackend(cfg.llm))
    rows: list[dict[str, Any]] = []
    async with open_app(cfg, backend=recorder) as app:
        responder = app.responder
        conversation = responder.conversation
        if keep is not None:
            conversation.bounds = dataclasses.replace(conversation.bounds, keep=keep)
        await responder.warmup()
        for i, text in enumerate(QUESTIONS[:turns], start=1):
            done, cut = responder.warmer.warmups, responder.warmer.cancelled
            start, trims = len(recorder.requests), conversation.trims
            warm = next((r for r in reversed(recorder.requests) if r["warm"]), None)
            trace = await ask(responder, text)
            sent = [r for r in recorder.requests[start:] if not r["warm"]]
            row = {
                "turn": i,
                "text": text,
                "path": str(trace.execution_path or ""),
                "direct": bool(trace.extra.get("direct_return")),
                "rounds": len(sent),
                "evaluated": trace.prompt_tokens,
                "own": counter.own(sent) if sent else 0,
                "prompt_ms": round(sum(trace.prompt_ms), 1),
                "first_sentence_ms": trace.first_sentence_ms,
                "history": len(conversation),
                "trimmed": conversation.trims > trims,
                "prefix_ok": same_prefix(warm, sent[0]) if sent and warm else None,
                "reply": trace.reply,
            }
            responder.idle()  # the reply was spoken: IRIS is idle until the next question
            idle_from = len(recorder.requests)
            if gap > 0:
                await asyncio.sleep(gap)
            else:
                await responder.warmer.settle()
            row["warm_tokens"] = sum(r["evaluated"] or 0 for r in recorder.requests[idle_from:])
            row["warmup"] = "done" if responder.warmer.warmups > done else "-"
            # a warm-up still running now is cut short by the next question (counted then)
            row["warmup"] += " (still running)" if responder.warmer.busy else ""
            row["cut_before"] = responder.warmer.cancelled > cut
            rows.append(row)
            show(row)
        await app.timers.cancel("all")
    return rows


def show(row: dict[str, Any]) -> None:
    """One line per turn."""
    if not row["rounds"]:
        print(f"  {row['turn']:>2} {row['path']:<7} (no model)    history {row['history']:>2}"
              f"{' trimmed' if row['trimmed'] else '':8} warm-up {row['warmup']} {row['warm_tokens']} tok"
              f"  {row['reply'][:50]!r}", flush=True)  # fmt: skip
        return
    ratio = row["evaluated"] / row["own"] if row["own"] else float("nan")
    first = row["first_sentence_ms"] or 0
    print(f"  {row['turn']:>2} {row['path']:<7} eval {row['evaluated']:>5} tok / own {row['own']:>4}"
          f" = {ratio:5.2f}  prompt {row['prompt_ms']:>7.0f} ms  first sentence {first:>6.0f} ms"
          f"  history {row['history']:>2}{' trimmed' if row['trimmed'] else '':8} warm-up {row['warmup']}"
          f" {row['warm_tokens']} tok"
          f"  {row['reply'][:40]!r}", flush=True)  # fmt: skip


def chat(rows: list[dict[str, Any]], first: int, last: int) -> list[float]:
    """First-sentence times of model turns without tools among turns ``first``..``last``."""
    return [
        r["first_sentence_ms"]
        for r in rows
        if first <= r["turn"] <= last and r["rounds"] == 1 and r["path"] in ("native", "text")
    ]


def summary(name: str, rows: list[dict[str, Any]]) -> None:
    """The policy's figures against the goals."""
    model = [r for r in rows if r["rounds"] and r["own"]]
    ratios = [r["evaluated"] / r["own"] for r in model[1:]]
    turn2 = chat(rows, 2, 2)
    early, late = chat(rows, 2, 6), chat(rows, 7, 30)
    warm_checked = [r["prefix_ok"] for r in rows if r["prefix_ok"] is not None]
    late_med = med(late)
    print(f"\n[{name}] model turns {len(model)}, trims {sum(r['trimmed'] for r in rows)}")
    print(f"  evaluated/own tokens after the first model turn: median "
          f"{statistics.median(ratios) if ratios else float('nan'):.2f} (goal <= 1.3), "
          f"max {max(ratios, default=float('nan')):.2f}")  # fmt: skip
    evaluated, prompt_ms = [r["evaluated"] for r in model[1:]], [r["prompt_ms"] for r in model[1:]]
    print(f"  evaluated tokens after the first model turn: total {sum(evaluated)}, median {med(evaluated)};"
          f" prompt ms median {med(prompt_ms)}")  # fmt: skip
    if turn2 and late_med:
        print(f"  chat first sentence turns 7-30: median {late_med} ms; turn 2: {turn2[0]} ms; "
              f"ratio {late_med / turn2[0]:.2f}x (goal <= 1.2x); vs median of turns 2-6 {med(early)} ms: "
              f"{late_med / (med(early) or 1):.2f}x")  # fmt: skip
    running = sum("still" in r["warmup"] for r in rows)
    print(f"  tokens evaluated by idle warm-ups: {sum(r['warm_tokens'] for r in rows)} "
          f"(turns: {sum(r['evaluated'] for r in rows)})")  # fmt: skip
    print(f"  warm-up sent the next turn's exact prefix: {sum(warm_checked)}/{len(warm_checked)}; "
          f"warm-ups still running at the next question: {running}")  # fmt: skip


async def amain(args: argparse.Namespace) -> None:
    """Start the test server, run each policy, print the figures."""
    from tools.testbed.servers import start_server

    overrides = {}
    if args.history_turns is not None:
        overrides["history_turns"] = args.history_turns
    if args.history_tokens is not None:
        overrides["history_tokens"] = args.history_tokens
    counter = Counter()
    results = {}
    with tempfile.TemporaryDirectory(prefix="iris-long-chat-") as tmp, start_server() as server:
        for name in args.policies.split(","):
            keep = args.keep if name == "steps" and args.keep is not None else POLICIES[name]
            label = keep if keep is not None else "default"
            print(f"\n== {name} (keep {label}) {overrides or ''}", flush=True)
            results[name] = await converse(
                server.url, keep, args.turns, args.gap, counter, Path(tmp) / name, overrides
            )
    print(f"\n{NOISE}")
    for name, rows in results.items():
        summary(name, rows)


def main() -> None:
    """Command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=len(QUESTIONS), help=f"questions (at most {len(QUESTIONS)})")
    p.add_argument("--gap", type=float, default=12.0, help="idle s between questions (0: until warmed)")
    p.add_argument("--policies", default="steps,one", help="steps (IRIS's trimming), one (a turn at a time)")
    p.add_argument("--keep", type=float, help="low-water mark of the steps policy (Bounds.keep)")
    p.add_argument("--history-turns", type=int, help="llm.history_turns (default: IRIS's)")
    p.add_argument("--history-tokens", type=int, help="llm.history_tokens (default: IRIS's)")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
