"""Benchmark of IRIS's tool calling with the real model, printed in one run.

1. Tokens of the native tool set in each ToolRenderer format (the model's tokenizer).
2. Tool-call accuracy over 32 phrasings (time, calculator, timers, no tool), native and
   text mode: the right tool (or none) with acceptable arguments.
3. Prompt-cache reuse: prompt-evaluation time of turn 2 vs turn 1 of one conversation.

Uses the Ollama server at $OLLAMA_HOST if one answers, else the packaged model through
the test server. ``--quick`` runs a third of the phrasings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, IntentsConfig, LlmConfig, ToolsConfig
from iris_voice.conversation.responder import Assistant, ask
from iris_voice.tools.render import FORMATS, render
from tools.bench.stats import p50

T, C, S, L, X, R = (
    "get_current_time",
    "calculator",
    "set_timer",
    "list_timers",
    "cancel_timer",
    "set_reminder",
)
# (phrasing, expected tool or None, a check on the arguments)
CASES = [
    ("What time is it in Tokyo?", T, lambda a: "tokyo" in str(a).lower()),
    ("what's the time in new york right now", T, lambda a: "york" in str(a).lower()),
    ("Tell me the current time in London.", T, lambda a: "london" in str(a).lower()),
    ("What time is it?", T, lambda a: True),
    ("Do you know what time it is in Sydney, Australia?", T, lambda a: "sydney" in str(a).lower()),
    ("Current time in Paris please", T, lambda a: "paris" in str(a).lower()),
    ("What hour is it in India?", T, lambda a: "india" in str(a).lower() or "kolkata" in str(a).lower()),
    ("Is it morning in Los Angeles yet?", T, lambda a: "angeles" in str(a).lower()),
    ("What is 23 times 47?", C, lambda a: "23" in str(a) and "47" in str(a)),
    ("Calculate 15 percent of 80.", C, lambda a: "15" in str(a) and "80" in str(a)),
    ("what's the square root of 144", C, lambda a: "144" in str(a)),
    ("How much is 1250 divided by 5?", C, lambda a: "1250" in str(a)),
    ("Add 348 and 1279.", C, lambda a: "348" in str(a)),
    ("What is 2 to the power of 10?", C, lambda a: "2" in str(a) and "10" in str(a)),
    ("Compute 17 minus 58.", C, lambda a: "17" in str(a) and "58" in str(a)),
    ("What's 3.5 times 4?", C, lambda a: "3.5" in str(a)),
    ("Set a pasta timer for eight minutes.", S, lambda a: "pasta" in str(a).lower()),
    ("Start a timer for 10 minutes.", S, lambda a: "10" in str(a) or "ten" in str(a).lower()),
    ("Timer for 30 seconds please", S, lambda a: "30" in str(a) or "thirty" in str(a).lower()),
    ("Set a tea timer for 3 minutes", S, lambda a: "tea" in str(a).lower()),
    ("Which timers are running?", L, lambda a: True),
    ("How many timers do I have?", L, lambda a: True),
    ("Cancel the pasta timer.", X, lambda a: "pasta" in str(a).lower()),
    ("Stop all my timers", X, lambda a: "all" in str(a).lower()),
    ("Remind me to call mom in 2 hours.", R, lambda a: "mom" in str(a).lower()),
    ("Remind me at 7 pm to take out the trash", R, lambda a: "trash" in str(a).lower()),
    ("Hello, how are you?", None, None),
    ("Tell me a joke about cats.", None, None),
    ("What is the capital of France?", None, None),
    ("Who wrote Romeo and Juliet?", None, None),
    ("Give me a synonym for happy.", None, None),
    ("Thanks, that's all.", None, None),
]


def count_tokens(model_path: Path, specs) -> dict[str, int]:
    """Tokens of the native set per format, with the model's own tokenizer."""
    from llama_cpp import Llama

    llm = Llama(str(model_path), vocab_only=True, verbose=False)
    out = {}
    for fmt in FORMATS:
        rendered = render(specs, fmt)
        text = rendered if isinstance(rendered, str) else "\n".join(json.dumps(t) for t in rendered)
        out[fmt] = len(llm.tokenize(text.encode(), add_bos=False, special=True))
    return out


def judge(trace, tool, check) -> bool:
    """Did the turn call the expected tool (or none) with acceptable arguments?"""
    names = [c["name"] for c in trace.tool_calls]
    if tool is None:
        return not names
    return bool(names) and names[0] == tool and check(trace.tool_calls[0]["arguments"])


def model_only(cfg: Config) -> Assistant:
    """IRIS's assistant from the one assembly without the fast path: every turn is the model's."""
    return build_app(cfg.model_copy(update={"intents": IntentsConfig(enabled=False)})).responder


async def accuracy(cfg: Config, mode: str, cases) -> tuple[int, list[float], list[str]]:
    """Run every case in a fresh conversation; count correct tool choices."""
    llm = cfg.llm.model_copy(update={"tool_mode": mode})
    loop = model_only(cfg.model_copy(update={"llm": llm}))
    await loop.warmup()
    good, times, misses = 0, [], []
    for text, tool, check in cases:
        loop.conversation.reset()
        trace = await ask(loop, text)
        times.append(trace.total_ms or 0)
        if judge(trace, tool, check):
            good += 1
        else:
            misses.append(
                f"{text!r}: expected {tool}, got {[(c['name'], c['arguments']) for c in trace.tool_calls]}"
            )
    return good, times, misses


async def cache_reuse(cfg: Config) -> tuple[float, float]:
    """Prompt-phase ms of turn 1 (cold prefix) and turn 2 of the same conversation."""
    # A unique line in the system prompt makes turn 1 pay the whole prefix.
    llm = cfg.llm.model_copy(
        update={"system_prompt": cfg.llm.system_prompt + f"\n(session {uuid.uuid4().hex})"}
    )
    loop = model_only(cfg.model_copy(update={"llm": llm}))
    t1 = await ask(loop, "Tell me a short fun fact about octopuses.")
    t2 = await ask(loop, "And one about dolphins?")
    return t1.prompt_ms[0], t2.prompt_ms[0]


async def run(host: str, model: str, model_path: Path | None, quick: bool) -> None:
    """Print the three measurements."""
    state = tempfile.mkdtemp(prefix="iris-bench-")
    cfg = Config(
        llm=LlmConfig(host=host, model=model, temperature=0.0),
        tools=ToolsConfig(timezone="UTC", timers_db=os.path.join(state, "timers.db")),
    )
    registry = build_app(cfg).registry
    if model_path:
        print("== Tokens of the native tool set (model tokenizer)")
        for fmt, n in count_tokens(model_path, registry.specs()).items():
            print(f"  {fmt:10} {n:5d} tokens" + ("   (budget 600)" if fmt == "ollama" else ""))
    cases = CASES[::3] if quick else CASES
    print(f"\n== Tool-call accuracy over {len(cases)} phrasings")
    for mode in ("native", "text"):
        good, times, misses = await accuracy(cfg, mode, cases)
        print(f"  {mode:6} {good}/{len(cases)} = {good / len(cases):.0%}   median turn {p50(times):.0f} ms")
        for m in misses:
            print(f"         miss: {m}")
    cold, warm = await cache_reuse(cfg)
    print("\n== Prompt-cache reuse (prompt-evaluation time of the first round)")
    print(f"  turn 1 {cold:.0f} ms   turn 2 {warm:.0f} ms   ratio {warm / cold:.1%}   (goal <= 25%)")


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    from tools.testbed.fetch_models import assemble
    from tools.testbed.servers import bench_target, model_server

    model, host = bench_target()
    path = assemble()
    with ExitStack() as stack:
        host = model_server(stack, model, host, "test server")
        asyncio.run(run(host, model, path, args.quick))


if __name__ == "__main__":
    main()
