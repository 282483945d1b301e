"""Boost mode vs direct execution on the same questions, with the real model, in one run.

Twelve questions (time, calculator, timer, chat) go once through the local model alone
(direct) and once through boost mode (planner → executor). Each answer is checked
programmatically: the tool called and its result (the right zone, the product, the
stored timer), and what the reply says (the hour, the number, a keyword; no tool for
chat). Printed: one row per question and mode, then per mode the answer correctness,
the tool-call success and median latencies (first sentence, whole turn).

The planner is the same Qwen2.5-Coder-1.5B as the executor — nothing stronger is
available offline — so this measures the mechanism and its cost, not the gain a
stronger planner would bring. By default the planner runs in llama-cpp-python's
OpenAI-compatible server (its own process and prompt cache, through IRIS's OpenAI
backend); ``--planner ollama`` puts it on the executor's Ollama-protocol test server,
whose single prompt cache then swaps between the two prompts on every call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytz

from iris_voice.app.assembly import build_app
from iris_voice.config import BoostConfig, Config, IntentsConfig, LlmConfig, ToolsConfig
from iris_voice.conversation.boost import Boost, planner_backend
from iris_voice.conversation.responder import Assistant
from iris_voice.conversation.trace import TurnTrace
from iris_voice.llm.openai_client import OpenAIBackend
from iris_voice.timers.store import TimerStore
from tools.bench.stats import p50


def hours_spoken(reply: str) -> set[int]:
    """Hours mentioned as "3:05", "15:05", "3 PM" or "3 o'clock"."""
    found = {int(h) for h in re.findall(r"\b(\d{1,2}):\d{2}", reply)}
    found |= {int(h) for h in re.findall(r"\b(\d{1,2})\s*(?:[ap]\.?m\.?|o'clock)", reply, re.I)}
    return found


def time_in(zone: str) -> Callable[[TurnTrace, TimerStore], tuple[bool, bool]]:
    """Right when get_current_time ran for ``zone`` and the reply says the hour there."""

    def check(trace: TurnTrace, _store: TimerStore) -> tuple[bool, bool]:
        calls = [c for c in trace.tool_calls if c["name"] == "get_current_time" and c["ok"]]
        tool_ok = any(zone in c["result"] for c in calls)
        now = datetime.now(UTC)
        hours = set()
        for delta in (-3, 0):  # the hour may have turned during the turn
            h = (now + timedelta(minutes=delta)).astimezone(pytz.timezone(zone)).hour
            hours |= {h, h % 12 or 12}
        return tool_ok, tool_ok and bool(hours_spoken(trace.reply) & hours)

    return check


def calc(number: str) -> Callable[[TurnTrace, TimerStore], tuple[bool, bool]]:
    """Right when the calculator ran and returned ``number``, and the reply says it."""

    def check(trace: TurnTrace, _store: TimerStore) -> tuple[bool, bool]:
        tool_ok = any(
            c["name"] == "calculator" and c["ok"] and re.search(rf"= {re.escape(number)}\b", c["result"])
            for c in trace.tool_calls
        )
        return tool_ok, number in trace.reply.replace(",", "")

    return check


def timer(seconds: float, label: str) -> Callable[[TurnTrace, TimerStore], tuple[bool, bool]]:
    """Right when exactly one timer of ``seconds`` labelled ``label`` was stored (then cleared)."""

    def check(trace: TurnTrace, store: TimerStore) -> tuple[bool, bool]:
        tool_ok = any(c["name"] == "set_timer" and c["ok"] for c in trace.tool_calls)
        pending = store.pending()
        right = len(pending) == 1 and pending[0].duration == seconds and label in pending[0].label.lower()
        for t in pending:
            store.cancel(t.id)
        return tool_ok, tool_ok and right

    return check


def chat(*words: str) -> Callable[[TurnTrace, TimerStore], tuple[bool, bool]]:
    """Right when no tool was called and the reply has one of ``words``."""

    def check(trace: TurnTrace, _store: TimerStore) -> tuple[bool, bool]:
        no_tool = not trace.tool_calls
        return no_tool, no_tool and any(w in trace.reply.lower() for w in words)

    return check


QUESTIONS = [
    ("time", "What time is it in Tokyo?", time_in("Asia/Tokyo")),
    ("time", "What's the time in New York right now?", time_in("America/New_York")),
    ("time", "Tell me the current time in London.", time_in("Europe/London")),
    ("calc", "What is 23 times 47?", calc("1081")),
    ("calc", "How much is 1250 divided by 5?", calc("250")),
    ("calc", "What is 15 percent of 80?", calc("12")),
    ("calc", "What is 348 plus 1279?", calc("1627")),
    ("timer", "Set a pasta timer for eight minutes.", timer(480, "pasta")),
    ("timer", "Start a tea timer for 3 minutes.", timer(180, "tea")),
    ("chat", "What is the capital of France?", chat("paris")),
    ("chat", "Who wrote Romeo and Juliet?", chat("shakespeare")),
    ("chat", "Hello, how are you?", chat("hello", "hi", "good", "well", "help", "great", "fine")),
]


@dataclass
class Row:
    """One question in one mode."""

    kind: str
    text: str
    tool_ok: bool
    correct: bool
    total_ms: float
    first_ms: float
    path: str
    loops: int
    planner_ms: float


def _make(mode: str, cfg: Config, planner) -> tuple[Assistant, TimerStore]:
    """IRIS's assistant from the one assembly, without the fast path (the model's turns are
    measured), with ``planner`` in front for boost."""
    boost = cfg.boost.model_copy(update={"enabled": False})
    app = build_app(cfg.model_copy(update={"intents": IntentsConfig(enabled=False), "boost": boost}))
    if mode == "boost":
        app.responder.boost = Boost(app.responder.chat, planner, cfg.boost)
    return app.responder, app.timers.store


async def run_mode(mode: str, cfg: Config, planner, questions) -> list[Row]:
    """Every question in a fresh conversation, after a warm-up of the model(s)."""
    loop, store = _make(mode, cfg, planner)
    await loop.warmup()
    rows = []
    for kind, text, check in questions:
        loop.conversation.reset()
        trace = TurnTrace(text=text)
        async for _ in loop.sentences(text, trace):
            pass
        tool_ok, correct = check(trace, store)
        boost = trace.extra.get("boost", {})
        loops = boost.get("loops", [])
        rows.append(
            Row(
                kind,
                text,
                tool_ok,
                correct,
                trace.total_ms or 0.0,
                trace.first_sentence_ms or trace.total_ms or 0.0,
                boost.get("final", "direct") if mode == "boost" else trace.execution_path,
                len(loops),
                sum(lp.get("planner_ms", 0.0) for lp in loops),
            )
        )
        mark = "ok " if correct else "BAD"
        print(f"  {mode:6} {mark} {text:42} {trace.total_ms / 1000:6.1f} s  {trace.reply[:70]!r}", flush=True)
    return rows


def _median(values: list[float]) -> str:
    return f"{p50(values) / 1000:6.1f} s" if values else "     -  "


def report(results: dict[str, list[Row]], planner_name: str) -> None:
    """The tables: per question, then per mode."""
    print("\n== Per question (correct / tool ok / total seconds / boost path)")
    print(f"  {'question':42} {'direct':>22}   {'boost':>30}")
    for d, b in zip(results["direct"], results["boost"], strict=True):
        cells = []
        for r in (d, b):
            extra = f" {r.path:8} {r.loops}L" if r is b else ""
            cells.append(
                f"{'Y' if r.correct else 'n'} {'Y' if r.tool_ok else 'n'} {r.total_ms / 1000:6.1f} s{extra}"
            )
        print(f"  {d.text:42} {cells[0]:>22}   {cells[1]:>30}")
    print("\n== Summary (medians over all questions; planner = " + planner_name + ")")
    print(f"  {'mode':7} {'correct':>9} {'tool ok':>9} {'first sentence':>15} {'total':>9}  paths")
    for mode, rows in results.items():
        n = len(rows)
        good = sum(r.correct for r in rows)
        tools = sum(r.tool_ok for r in rows)
        paths = ""
        if mode == "boost":
            counts = {p: sum(r.path == p for r in rows) for p in ("summary", "guidance", "direct")}
            paths = " ".join(f"{k}={v}" for k, v in counts.items())
            paths += f"  planner median {_median([r.planner_ms for r in rows]).strip()}"
        print(
            f"  {mode:7} {good:>3}/{n:<3}   {tools:>3}/{n:<3}   {_median([r.first_ms for r in rows]):>13}"
            f"   {_median([r.total_ms for r in rows])}  {paths}"
        )
    for kind in dict.fromkeys(r.kind for r in results["direct"]):
        line = "  ".join(
            f"{mode} {sum(r.correct for r in rows if r.kind == kind)}/{sum(r.kind == kind for r in rows)}"
            f" {_median([r.total_ms for r in rows if r.kind == kind]).strip()}"
            for mode, rows in results.items()
        )
        print(f"  {kind:6} {line}")
    d, b = (p50(r.total_ms for r in results[m]) for m in ("direct", "boost"))
    print(f"  boost/direct median total time: {b / d:.2f}x")
    print(
        "  NOTE: the planner is the same Qwen2.5-Coder-1.5B as the executor (nothing stronger is\n"
        "  available offline); a stronger planner would change correctness, not the mechanism."
    )


async def run(host: str, model: str, planner, planner_name: str, quick: bool) -> None:
    """Both modes over the questions, then the report."""
    questions = QUESTIONS[::2] if quick else QUESTIONS
    results = {}
    for mode in ("direct", "boost"):
        state = tempfile.mkdtemp(prefix=f"iris-bench-{mode}-")
        cfg = Config(
            llm=LlmConfig(host=host, model=model, temperature=0.0),
            tools=ToolsConfig(timezone="UTC", timers_db=os.path.join(state, "timers.db")),
            boost=BoostConfig(enabled=True, temperature=0.0, timeout_s=300),
        )
        if planner is None:
            planner = planner_backend(cfg)
        print(f"\n== {mode}: {len(questions)} questions", flush=True)
        t0 = time.perf_counter()
        results[mode] = await run_mode(mode, cfg, planner, questions)
        print(f"  ({time.perf_counter() - t0:.0f} s)")
    report(results, planner_name)


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--planner", choices=("openai", "ollama"), default="openai")
    ap.add_argument("--quick", action="store_true", help="every other question")
    args = ap.parse_args()
    from tools.testbed.fetch_models import assemble
    from tools.testbed.servers import bench_target, model_server, start_openai_server

    model, host = bench_target()
    path = assemble()
    with ExitStack() as stack:
        host = model_server(stack, model, host, "executor: test server")
        planner, name = None, f"Ollama model {model} on the executor's server"
        if args.planner == "openai":
            t0 = time.perf_counter()
            server = stack.enter_context(start_openai_server(path, alias="planner"))
            planner = OpenAIBackend(server.url, "planner", temperature=0.0, timeout_s=300)
            name = f"{model} GGUF in llama_cpp.server (OpenAI API)"
            print(f"planner: llama_cpp.server at {server.url} ready in {time.perf_counter() - t0:.1f} s")
        asyncio.run(run(host, model, planner, name, args.quick))


if __name__ == "__main__":
    main()
