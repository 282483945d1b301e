"""Benchmark of lazy vs eager MCP tools with real servers and the real model, in one run.

1. Tool-definition tokens (the model's tokenizer) of four real MCP servers from PyPI —
   mcp-server-time, mcp-server-calculator, mcp-server-sqlite, mcp-server-git — shown
   eagerly (every tool) vs lazily (get_tools_in_category + execute_tool).
2. Time to the first spoken sentence (and to the end of the turn) for "What time is it
   in Paris?" with the same four servers eager vs lazy (medians of ``--runs`` turns
   each, prompt cache warm, plus the cold first turn), and whether each turn used the
   MCP time tool and said the right hour (a first sentence written before the tool
   result is a guess: check the hour column).

Uses the Ollama server at $OLLAMA_HOST if one answers, else the packaged model through
the test server. Run under ``flock /tmp/iris-llm.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from iris_voice.app.assembly import open_app
from iris_voice.config import Config, LlmConfig, McpConfig, McpServerConfig, ToolsConfig
from iris_voice.conversation.responder import ask
from iris_voice.tools.mcp.manager import McpManager, with_mcp_hint
from iris_voice.tools.registry import ToolRegistry
from iris_voice.tools.render import render
from tools.bench.stats import p50

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (the git MCP server's repository)."""
PY = sys.executable
BIN = Path(PY).parent
QUESTION = "What time is it in Paris?"


def servers(mode: str, state: Path) -> list[McpServerConfig]:
    """The four real servers (sqlite and git work on files made in ``state``)."""
    return [
        McpServerConfig(
            name="time",
            category="time",
            description="current time in any time zone",
            command=PY,
            args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
            mode=mode,
        ),
        McpServerConfig(
            name="calculator",
            category="utilities/math",
            description="evaluate math expressions",
            command=PY,
            args=["-m", "mcp_server_calculator"],
            mode=mode,
        ),
        McpServerConfig(
            name="sqlite",
            category="data/sqlite",
            description="query a SQLite database",
            command=str(BIN / "mcp-server-sqlite"),
            args=["--db-path", str(state / "bench.db")],
            mode=mode,
        ),
        McpServerConfig(
            name="git",
            category="dev/git",
            description="read and change git repositories",
            command=PY,
            args=["-m", "mcp_server_git", "--repository", str(ROOT)],
            mode=mode,
        ),
    ]


def tokenizer(model_path: Path):
    """A function counting tokens with the model's own tokenizer."""
    from llama_cpp import Llama

    llm = Llama(str(model_path), vocab_only=True, verbose=False)
    return lambda text: len(llm.tokenize(text.encode(), add_bos=False, special=True))


def rendered(specs, fmt: str = "ollama") -> str:
    """Tool definitions as the server receives them (one JSON object per tool)."""
    out = render(specs, fmt)
    return out if isinstance(out, str) else "\n".join(json.dumps(t, ensure_ascii=False) for t in out)


async def token_table(state: Path, count) -> None:
    """Print eager vs lazy tool-definition tokens for the four servers."""
    devnull = open(os.devnull, "w")  # noqa: SIM115 - the servers' chatter is not output
    async with McpManager(servers("lazy", state), errlog=devnull) as manager:
        if not await manager.wait_ready(60):
            sys.exit(
                f"MCP servers not ready: {[(c.name, c.last_error) for c in manager.connections.values()]}"
            )
        lazy = ToolRegistry()
        manager.register(lazy)
        print("== Tool-definition tokens, eager vs lazy (model tokenizer, Ollama tools JSON)")
        for conn in manager.connections.values():
            specs = [s for s in manager.tool_specs() if s.name.startswith(conn.config.category + "/")]
            print(f"  {conn.name:11} {len(specs):2d} tools  {count(rendered(specs)):5d} tokens eager")
        eager_n = count(rendered(manager.tool_specs()))
        hint = with_mcp_hint(LlmConfig(system_prompt=""), manager).system_prompt
        lazy_n = count(rendered(lazy.specs())) + count(hint)
        print(f"  eager: {len(manager.tool_specs())} tools, {eager_n} tokens")
        print(f"  lazy:  2 meta-tools + system-prompt hint, {lazy_n} tokens")
        print(f"  saved: {1 - lazy_n / eager_n:.1%} (goal >= 90%)")


def paris_hours() -> set[int]:
    """The hour in Paris now and a minute either side, in 24h and 12h forms."""
    now = datetime.now(UTC)
    hours = set()
    for delta in (-2, 0, 2):
        h = (now + timedelta(minutes=delta)).astimezone(ZoneInfo("Europe/Paris")).hour
        hours |= {h, h % 12 or 12}
    return hours


def judged(trace, mode: str) -> tuple[bool, bool]:
    """(the MCP time tool answered, the reply states the Paris hour)."""
    import re

    ok = [c for c in trace.tool_calls if c["ok"]]
    if mode == "eager":
        used = any(c["name"] == "time/get_current_time" for c in ok)
    else:
        used = any(c["name"] == "execute_tool" and "get_current_time" in str(c["arguments"]) for c in ok)
    found = re.findall(r"(?:\b|T)(\d{1,2})(?::\d{2}|\s*[ap]\.?m\.?)", trace.reply, re.I)  # also ISO "T15:42"
    spoken = {int(h) for h in found}
    return used, bool(spoken & paris_hours())


async def first_answer(host: str, model: str, state: Path, mode: str, runs: int) -> dict:
    """Cold first turn, then ``runs`` warm turns of QUESTION with the time server in ``mode``."""
    cfg = Config(
        llm=LlmConfig(host=host, model=model, temperature=0.0),
        tools=ToolsConfig(timezone="UTC", disabled=["get_current_time"], timers_db=str(state / "timers.db")),
        mcp=McpConfig(servers=servers(mode, state)),
    )
    devnull = open(os.devnull, "w")  # noqa: SIM115
    async with open_app(cfg, errlog=devnull) as app:  # IRIS's one assembly, MCP servers started
        assert app.mcp is not None
        await app.mcp.wait_ready(60)
        loop = app.responder
        times, totals, used, said = [], [], 0, 0
        cold = None
        for i in range(runs + 1):
            loop.conversation.reset()
            trace = await ask(loop, QUESTION)
            u, s = judged(trace, mode)
            if i == 0:
                cold = trace.first_sentence_ms
                print(
                    f"  {mode:5} cold: {trace.first_sentence_ms:.0f} ms, prompt {trace.prompt_tokens} tokens"
                )
                continue
            times.append(trace.first_sentence_ms or 0)
            totals.append(trace.total_ms or 0)
            used += u
            said += s
            calls = [c["name"] for c in trace.tool_calls]
            print(
                f"  {mode:5} run {i}: {trace.first_sentence_ms:.0f} ms  calls={calls}  reply={trace.reply!r}"
            )
        return {
            "median": p50(times),
            "total": p50(totals),
            "cold": cold,
            "used": used,
            "said": said,
            "runs": runs,
        }


async def run(host: str, model: str, model_path: Path | None, runs: int) -> None:
    """Print both measurements."""
    state = Path(tempfile.mkdtemp(prefix="iris-bench-mcp-"))
    if model_path:
        await token_table(state, tokenizer(model_path))
    print(f'\n== Time to first answer for "{QUESTION}" ({runs} warm runs each, same server)')
    results = {mode: await first_answer(host, model, state, mode, runs) for mode in ("eager", "lazy")}
    for mode, r in results.items():
        print(
            f"  {mode:5} first sentence median {r['median']:6.0f} ms, whole turn {r['total']:6.0f} ms"
            f" (cold first sentence {r['cold']:.0f} ms)"
            f"   MCP time tool used {r['used']}/{r['runs']}   Paris hour said {r['said']}/{r['runs']}"
        )
    print(f"  lazy/eager median ratio: {results['lazy']['median'] / results['eager']['median']:.2f}")


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="warm turns per mode (default 3)")
    args = ap.parse_args()
    from tools.testbed.fetch_models import assemble
    from tools.testbed.servers import bench_target, model_server

    model, host = bench_target()
    path = assemble()
    with ExitStack() as stack:
        host = model_server(stack, model, host, "test server")
        asyncio.run(run(host, model, path, args.runs))


if __name__ == "__main__":
    main()
