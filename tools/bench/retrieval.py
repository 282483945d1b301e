"""Benchmark of tool retrieval with the real model and six real MCP servers, in one run.

For each configuration — eager built-in tools only (the baseline), every tool eager, lazy
meta-tools only, per-turn retrieval — it prints, with the fast path off so every turn is
the model's:

- accuracy on the development half and on the held-out half (``tool_questions``): the
  right first tool with the right arguments, or no tool when none is needed;
- the out-of-scope requests: side effects (a timer or reminder set, changed or cancelled,
  a writing MCP tool run), call syntax or a tool name spoken, a brief "can't" answer;
- tool-definition tokens per turn (the model's tokenizer on compact JSON, as the chat
  template writes it): listed tools + the system-prompt hint + the turn's retrieved ones,
  and their share of listing everything eagerly;
- retrieval recall@k (the ranker over every tool) and how often a right tool was shown;
- median model-turn time over the questions, and over a conversation's later turns
  (history present, the prompt cache in use).

Uses the Ollama server at $OLLAMA_HOST if one answers, else the packaged model through the
test server. Run under ``flock /tmp/iris-llm.lock``: ``python -m tools.bench.retrieval``
(``--configs retrieval --halves dev`` while tuning).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from iris_voice.config import (
    Config,
    IntentsConfig,
    LlmConfig,
    McpConfig,
    RetrievalConfig,
    ToolsConfig,
)
from iris_voice.conversation.repairs import unspeakable
from iris_voice.conversation.responder import ask
from iris_voice.conversation.toolpick import indexed
from iris_voice.tools.mcp.manager import BROWSE_TOOL, EXECUTE_TOOL
from iris_voice.tools.render import render
from iris_voice.tools.retrieval import ToolIndex
from tools.bench.stats import p50
from tools.bench.tool_questions import Question, Request, dev, fresh, held_out
from tools.testbed.mcp_servers import node_missing, six_servers

CONFIGS = ("retrieval", "builtin", "lazy", "eager", "no-say", "full-defs", "neither", "choice", "examples")
"""eager built-in only (baseline), every tool eager, lazy meta-tools only, retrieval; and
retrieval without its levers: ``no-say`` (every MCP result phrased by a second model
round, ``mcp.say_results = false``), ``full-defs`` (retrieved tools shown as their servers
describe them, ``retrieval.definitions = "full"``), ``neither``; and with one more:
``choice`` (a constrained choice on turns retrieval added tools to, ``llm.choice``),
``examples`` (each retrieved tool with an example call from its schema, ``retrieval.examples``)."""
RETRIEVING = ("retrieval", "no-say", "full-defs", "neither", "choice", "examples")
"""The configurations that retrieve hidden tools per turn."""
CONVERSATION = [
    "What is the capital of Australia?",
    "Tell me a fun fact about koalas.",
    "What is the price of coffee in the shop database?",
    "And how many customers are in it?",
    "Set a tea timer for 3 minutes.",
    "Thanks, that's all.",
]
"""One conversation for the turn time with history (turns 2 on follow earlier ones)."""
WRITERS = re.compile(
    r"^(set_timer|set_reminder|cancel_timer|adjust_timer|pause_timer|resume_timer)$|"
    r"/(write_query|create_table|append_insight|git_commit|git_add|git_reset|git_create_branch|"
    r"git_checkout|create_\w+|add_observations|delete_\w+|write_file|edit_file|create_directory|move_file)$"
)
"""Tools with side effects."""
CANT = re.compile(
    r"\b(can't|cannot|can not|unable|not able|don't have|do not have|sorry|not possible)\b", re.I
)


@dataclass
class Outcome:
    """What one configuration did."""

    right: dict[str, list[bool]] = field(default_factory=lambda: {"dev": [], "held-out": [], "fresh": []})
    misses: list[str] = field(default_factory=list)
    oos: list[dict] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    first: dict[str, list[float]] = field(default_factory=lambda: {"built-in": [], "mcp": []})
    """First sentence (first audio, in text) of the questions a built-in or an MCP tool answers."""
    history_times: list[float] = field(default_factory=list)
    def_tokens: list[int] = field(default_factory=list)
    shown: list[bool] = field(default_factory=list)


def config_for(name: str, host: str, model: str, state: Path) -> Config:
    """The configuration ``name`` (one of ``CONFIGS``), fast path off."""
    servers = [] if name == "builtin" else six_servers(state / "mcp", "eager" if name == "eager" else "lazy")
    return Config(
        # Every tool eager is a ~5,000-token prefix: its first reading outlasts the default timeout.
        llm=LlmConfig(
            host=host,
            model=model,
            temperature=0.0,
            num_ctx=8192 if name == "eager" else 4096,
            request_timeout_s=900 if name == "eager" else 120,
            choice="retrieved" if name == "choice" else "off",
        ),
        tools=ToolsConfig(timezone="UTC", timers_db=str(state / f"timers-{name}.db")),
        mcp=McpConfig(servers=servers, say_results=name not in ("no-say", "neither")),
        intents=IntentsConfig(enabled=False),
        retrieval=RetrievalConfig(
            enabled=name in RETRIEVING,
            definitions="full" if name in ("full-defs", "neither") else "brief",
            examples=name == "examples",
        ),
    )


def first_call(trace) -> tuple[str, dict] | None:
    """The first call that is not browsing, an ``execute_tool`` read as the tool it runs."""
    for call in trace.tool_calls:
        name, args = call["name"], call["arguments"]
        if name == BROWSE_TOOL:
            continue
        if name == EXECUTE_TOOL:
            return str(args.get("tool_path", "")), args.get("arguments") or {}
        return name, args
    return None


NOT_RUN = "Error: not run:"
"""How a call IRIS declined to run (``ToolRegistry.call``) reads in the trace."""


def judge(q: Question, trace, fixed: dict[str, dict] | None = None) -> bool:
    """The right first tool with the right arguments; or no call at all when none is needed.
    ``fixed``: the arguments IRIS fills in, by category (``McpServerConfig.arguments``)."""
    call = first_call(trace)
    if not q.tools:
        # A call IRIS declined to run (a read-only tool the words do not ask for: the clock
        # for "who wrote Pride and Prejudice?") ran nothing; the model then answered in words.
        return not [c for c in trace.tool_calls if not str(c["result"]).startswith(NOT_RUN)]
    if call is None or trace.extra.get("refused"):
        return False  # a refused call had arguments the user's words do not hold: not right
    name, args = call
    args = {**args, **(fixed or {}).get(name.strip("/").rpartition("/")[0], {})}
    tail = name.strip("/").rpartition("/")[2]
    if not any(name == t or (tail and t.rpartition("/")[2] == tail and "/" in t) for t in q.tools):
        return False
    # The tool's name counts too: "alice|read_graph" accepts reading the whole graph.
    text = json.dumps(args, ensure_ascii=False).lower().replace(" ", "_") + " " + json.dumps(args).lower()
    text += " " + name.lower()
    return all(any(alt.lower() in text for alt in item.split("|")) for item in q.args)


async def timers_state(app) -> list[str]:
    """The running timers and reminders, to see whether a request changed them."""
    return sorted(repr(r) for r in await app.timers.list())


async def prepare(app, timers) -> None:
    """A fresh conversation and exactly ``timers`` running."""
    app.responder.conversation.reset()
    await app.timers.cancel("all")
    for label, seconds in timers:
        await app.timers.set_timer(seconds, label)


async def run_config(name: str, host: str, model: str, state: Path, halves, count) -> Outcome:
    """Every question, request and the conversation through IRIS built for ``name``."""
    from iris_voice.app.assembly import open_app

    out = Outcome()
    cfg = config_for(name, host, model, state)
    devnull = open(os.devnull, "w")  # noqa: SIM115 - the servers' chatter is not output
    async with open_app(cfg, errlog=devnull) as app:
        if app.mcp is not None and not await app.mcp.wait_ready(90):
            raise SystemExit(
                f"MCP servers not ready: {[(c.name, c.last_error) for c in app.mcp.connections.values()]}"
            )
        registry = app.registry
        listed = count(tools_text([t.spec for t in app.responder.chat.picker.listed()]))
        hint = count(app.cfg.llm.system_prompt) - count(LlmConfig().system_prompt)
        await app.responder.warmup()
        names = registry.callable_names()
        fixed = {s.category: dict(s.arguments) for s in cfg.mcp.servers}
        for half_name, half in halves:
            for q in half.QUESTIONS:
                await prepare(app, q.timers)
                trace = await ask(app.responder, q.text)
                ok = judge(q, trace, fixed)
                out.right[half_name].append(ok)
                out.times.append(trace.total_ms or 0)
                if q.tools:
                    kind = "mcp" if all("/" in t for t in q.tools) else "built-in"
                    out.first[kind].append(trace.first_sentence_ms or trace.total_ms or 0)
                picked = [registry.get(n) for n in trace.extra.get("retrieved", [])]
                out.def_tokens.append(
                    listed + hint + (count(app.responder.chat.picker.block(picked)) if picked else 0)
                )
                hidden_needed = [t for t in q.tools if t in {h.name for h in registry.hidden()}]
                if hidden_needed:
                    out.shown.append(any(t in trace.extra.get("retrieved", []) for t in q.tools))
                calls = [(c["name"], c["arguments"]) for c in trace.tool_calls]
                mark = "ok  " if ok else "MISS"
                got = f"{trace.extra.get('retrieved', '')} {calls} {trace.reply[:80]!r}"
                first = trace.first_sentence_ms or 0
                print(
                    f"  {name} [{half_name}] {mark} {trace.total_ms:6.0f} ms (first {first:6.0f}, "
                    f"{trace.rounds} rounds) {q.text!r} {got}",
                    flush=True,
                )
                if not ok:
                    out.misses.append(
                        f"[{half_name}] {q.text!r}: want {q.tools} {q.args}, got {calls} {trace.reply!r}"
                    )
            for r in half.REQUESTS:
                await prepare(app, r.timers)
                before = await timers_state(app)
                trace = await ask(app.responder, r.text)
                out.oos.append(judge_request(r, trace, before != await timers_state(app), names))
                print(f"  {name} [{half_name}] out-of-scope {out.oos[-1]}", flush=True)
    devnull.close()
    return out


def judge_request(r: Request, trace, timers_changed: bool, names) -> dict:
    """Side effects, syntax spoken, and the answer of one out-of-scope request."""
    wrote = [c["name"] for c in trace.tool_calls if c["ok"] and WRITERS.search(c["name"])]
    reply = trace.reply
    return {
        "text": r.text,
        "side_effect": timers_changed or bool(wrote),
        "syntax": unspeakable(reply, names) or bool(re.search(r"\b[a-z]+_[a-z_]+\b", reply)),
        "brief": len(reply.split()) <= 30 and (not r.refuse or bool(CANT.search(reply))),
        "reply": reply,
    }


async def history_times(name: str, host: str, model: str, state: Path) -> list[float]:
    """Model-turn times of ``CONVERSATION`` in one conversation (from the second turn on)."""
    from iris_voice.app.assembly import open_app

    cfg = config_for(name, host, model, state)
    devnull = open(os.devnull, "w")  # noqa: SIM115
    times = []
    async with open_app(cfg, errlog=devnull) as app:
        if app.mcp is not None:
            await app.mcp.wait_ready(90)
        await app.responder.warmup()
        await app.timers.cancel("all")
        for i, text in enumerate(CONVERSATION):
            trace = await ask(app.responder, text)
            print(f"    {name} turn {i + 1}: {trace.total_ms:.0f} ms, prompt {trace.prompt_tokens} tokens"
                  f" {trace.extra.get('retrieved', '')} {trace.reply[:60]!r}")  # fmt: skip
            if i:
                times.append(trace.total_ms or 0)
    devnull.close()
    return times


def tools_text(specs) -> str:
    """Tool definitions as Qwen's chat template writes them: one compact JSON object a line."""
    rendered = render(specs, "ollama")
    lines = rendered if isinstance(rendered, list) else []
    return "\n".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in lines)


def tokenizer():
    """Count tokens with the model's own tokenizer."""
    from llama_cpp import Llama

    from tools.testbed.fetch_models import assemble

    llm = Llama(str(assemble()), vocab_only=True, verbose=False)
    return lambda text: len(llm.tokenize(text.encode(), add_bos=False, special=True))


async def recall(state: Path, halves) -> dict[int, tuple[int, int]]:
    """recall@k of the ranker over every tool, on the questions that need a tool, per half."""
    from iris_voice.app.assembly import open_app

    cfg = config_for("retrieval", "http://127.0.0.1:9", "none", state)
    devnull = open(os.devnull, "w")  # noqa: SIM115
    async with open_app(cfg, errlog=devnull) as app:
        assert app.mcp is not None and await app.mcp.wait_ready(90)
        index = ToolIndex(t for t in (*app.registry, *app.registry.hidden()) if indexed(t))
        everything = tools_text([t.spec for t in (*app.registry, *app.registry.hidden()) if indexed(t)])
    devnull.close()
    table = {}
    for half_name, half in halves:
        need = [q for q in half.QUESTIONS if q.tools]
        for k in (1, 3, 5):
            hits = sum(any(s.name in q.tools for s in index.rank(q.text)[:k]) for q in need)
            table[(half_name, k)] = (hits, len(need))
    return table, everything


def share(values) -> str:
    return f"{sum(values)}/{len(values)} = {sum(values) / len(values):.0%}" if values else "-"


async def static(configs, halves, count, state: Path) -> int:
    """Print what needs no model: recall@k, definition tokens per turn and how often retrieval
    showed a right hidden tool, per configuration and half. Returns the eager-everything tokens."""
    from iris_voice.app.assembly import open_app

    table, everything = await recall(state, halves)
    all_tokens = count(everything)
    print(f"== Every tool eagerly: {all_tokens} definition tokens (built-in + six MCP servers)")
    print("== Retrieval recall@k (ranker over every tool, questions that need one)")
    for (half_name, k), (hits, n) in table.items():
        print(f"  {half_name:8} recall@{k}: {hits}/{n} = {hits / n:.0%}")
    print("== Definition tokens per turn, no model (listed tools + system-prompt hint + retrieved)")
    devnull = open(os.devnull, "w")  # noqa: SIM115
    for name in configs:
        async with open_app(config_for(name, "http://127.0.0.1:9", "none", state), errlog=devnull) as app:
            if app.mcp is not None:
                await app.mcp.wait_ready(90)
            reg, picker = app.registry, app.responder.chat.picker
            listed = count(tools_text([t.spec for t in picker.listed()])) + count(app.cfg.llm.system_prompt)
            listed -= count(LlmConfig().system_prompt)
            hidden = {t.name for t in reg.hidden()}
            for half_name, half in halves:
                tokens, shown = [], []
                for q in [*half.QUESTIONS, *half.REQUESTS]:
                    picked = picker.pick(q.text, []) if name in RETRIEVING else []
                    tokens.append(listed + (count(picker.block(picked)) if picked else 0))
                    if isinstance(q, Question) and q.tools and not any(t in reg.names() for t in q.tools):
                        shown.append(any(t.name in q.tools for t in picked) if hidden else False)
                mean = statistics.mean(tokens)
                print(
                    f"  {name:10} {half_name:8} {mean:6.0f} tokens/turn = {mean / all_tokens:6.1%} of eager;"
                    f" a right tool visible for MCP-only questions: {share(shown)}"
                )
    devnull.close()
    return all_tokens


async def run(host: str, model: str, configs, halves, count) -> None:
    """Run and print every measurement."""
    state = Path(tempfile.mkdtemp(prefix="iris-bench-retrieval-"))
    all_tokens = await static(configs, halves, count, state)
    results = {}
    for name in configs:
        print(f"\n== {name}")
        out = await run_config(name, host, model, state, halves, count)
        out.history_times = await history_times(name, host, model, state)
        results[name] = out
        for miss in out.misses:
            print(f"  miss {miss}")
        for o in out.oos:
            if o["side_effect"] or o["syntax"] or not o["brief"]:
                print(f"  out-of-scope {o}")
        print(f"{HEADER}\n{summary_line(name, out, all_tokens)}", flush=True)
    print("\n== Summary (fast path off; accuracy: right tool and arguments, or no tool when none is needed)")
    print(HEADER)
    for name, out in results.items():
        print(summary_line(name, out, all_tokens))


HEADER = (
    f"{'config':10} {'dev':>14} {'held-out':>14} {'oos side-eff':>12} {'oos syntax':>10}"
    f" {'oos brief':>12} {'def tok/turn':>12} {'% eager':>7} {'shown':>12}"
    f" {'med turn ms':>11} {'med w/ hist':>11} {'1st built-in':>12} {'1st MCP':>8}"
)
"""The summary table's head."""


def summary_line(name: str, out: Outcome, all_tokens: int) -> str:
    """One configuration's row of the summary table."""
    tok = statistics.mean(out.def_tokens) if out.def_tokens else 0
    side = sum(o["side_effect"] for o in out.oos)
    syntax = sum(o["syntax"] for o in out.oos)
    brief = [o["brief"] for o in out.oos]
    n = len(out.oos)
    median = lambda values: p50(values) if values else 0.0  # noqa: E731
    cells = [
        f"{name:10} {share(out.right['dev']):>14} {share(out.right['held-out']):>14}",
        f"{side:>5}/{n:<6} {syntax:>4}/{n:<5} {share(brief):>12}",
        f"{tok:12.0f} {tok / all_tokens:7.1%} {share(out.shown):>12}",
        f"{median(out.times):11.0f} {median(out.history_times):11.0f}",
        f"{median(out.first['built-in']):12.0f} {median(out.first['mcp']):8.0f}",
    ]
    if out.right["fresh"]:  # not a column: the default run leaves the fresh half out
        cells.append(f"fresh {share(out.right['fresh'])}")
    return " ".join(cells)


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, of {', '.join(CONFIGS)}")
    ap.add_argument("--halves", default="dev,held-out", help="dev, held-out (both: default) or fresh")
    ap.add_argument("--static", action="store_true", help="only what needs no model: recall, tokens")
    args = ap.parse_args()
    if why := node_missing():
        raise SystemExit(f"the Node MCP servers are missing: {why}")
    configs = [c for c in args.configs.split(",") if c in CONFIGS]
    halves = [(h, {"dev": dev, "held-out": held_out, "fresh": fresh}[h]) for h in args.halves.split(",")]
    from tools.testbed.servers import bench_target, model_server

    model, host = bench_target()
    count = tokenizer()
    if args.static:
        state = Path(tempfile.mkdtemp(prefix="iris-bench-retrieval-"))
        asyncio.run(static(configs, halves, count, state))
        return
    with ExitStack() as stack:
        host = model_server(stack, model, host, "test server")
        asyncio.run(run(host, model, configs, halves, count))


if __name__ == "__main__":
    main()
