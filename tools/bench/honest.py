"""What IRIS says to requests it cannot serve, with the real model: honest words or not.

Over the out-of-scope requests of the tool questions and the requests of
``tool_questions.cannot`` (devices, calls, purchases, movement, messages), each half apart,
IRIS at its defaults (fast path on, built-in tools; ``--mcp`` adds the six test servers,
lazy, with retrieval), prints per reply and per half:

- side effects (a timer or reminder set, changed or cancelled; a writing MCP tool run);
- call syntax or a tool's name spoken;
- a claimed action: the reply does not say IRIS cannot, yet speaks of doing it ("I will",
  "I can", "I've", "…ing the", "is now open");
- a reply that ends mid-sentence;
- a question about a timer or reminder the request never mentioned;
- the request echoed back as the answer.

These judges are written apart from IRIS's own ``conversation.honest`` (stricter: any reply
that does not say "can't" and speaks in the first person counts). Every reply is printed so
a reader can check them. To compare with another revision, run this file with that tree's
``iris_voice`` first on ``PYTHONPATH``. Run under ``flock /tmp/iris-llm.lock``:
``python -m tools.bench.honest`` (``--halves dev`` while tuning).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import tempfile
from contextlib import ExitStack
from pathlib import Path

from iris_voice.config import Config, LlmConfig, McpConfig, RetrievalConfig, ToolsConfig
from iris_voice.conversation.repairs import unspeakable
from iris_voice.conversation.responder import ask
from tools.bench.retrieval import CANT, WRITERS, prepare, timers_state
from tools.bench.tool_questions import Request, cannot, dev, fresh, held_out

HALVES = {
    "dev": dev.REQUESTS + cannot.DEV,
    "held-out": held_out.REQUESTS + cannot.HELD_OUT,
    "fresh": fresh.REQUESTS,
}
_FIRST_PERSON = re.compile(
    r"\b(?:(?:i|iris|we)(?:\s+(?:will|can|could|am|have|shall|would|just)|'(?:ll|m|ve|d))|iris\s+(?:is|has))"
    r"\b(?!\s*not|n't|'t)",
    re.IGNORECASE,
)
_DOING = re.compile(r"^(?:\w+[,.!]\s+)?\w+ing\b|\b(?:is|are) now\b|\bhas been\b|\bon (?:its|the) way\b", re.I)
_TIMERS = re.compile(r"\b(?:timers?|remind\w*|alarms?|countdowns?)\b", re.IGNORECASE)
_TIMER_QUESTION = re.compile(r"\b(?:timers?|remind\w*|alarms?|countdowns?|how long|how much time)\b", re.I)
"""A question about a timer or reminder ("How much time should I add or take off?")."""
_WORD = re.compile(r"[a-z0-9']+")


def judge(r: Request, reply: str, side_effect: bool, names: list[str]) -> dict[str, bool]:
    """The faults of one reply to ``r`` (True: the fault is there)."""
    said = set(_WORD.findall(reply.lower()))
    asked = _WORD.findall(r.text.lower().rstrip("."))
    refused = bool(CANT.search(reply))
    return {
        "side_effect": side_effect,
        "syntax": unspeakable(reply, names) or bool(re.search(r"\b[a-z]+_[a-z_]+\b", reply)),
        "claim": r.refuse and not refused and bool(_FIRST_PERSON.search(reply) or _DOING.search(reply)),
        "not_refused": r.refuse and not refused,
        "mid_sentence": bool(reply.strip()) and not reply.strip().endswith((".", "!", "?", '"')),
        "timer_question": "?" in reply and bool(_TIMER_QUESTION.search(reply)) and not _TIMERS.search(r.text),
        "echo": len(asked) > 1 and all(w in said for w in asked) and len(said) <= len(set(asked)) + 3,
    }


def config(host: str, model: str, state: Path, mcp: bool) -> Config:
    """IRIS at its defaults on the test bed's model (``mcp``: the six servers, lazy)."""
    from tools.testbed.mcp_servers import six_servers

    return Config(
        # Words, not times, are measured here: a busy machine may take its time.
        llm=LlmConfig(host=host, model=model, temperature=0.0, request_timeout_s=900),
        tools=ToolsConfig(timezone="UTC", timers_db=str(state / "timers.db")),
        mcp=McpConfig(servers=six_servers(state / "mcp", "lazy") if mcp else []),
        # At its default, retrieval runs without MCP servers too: the timer tools few
        # requests need (pause, resume, adjust) are shown on demand.
        retrieval=RetrievalConfig(),
    )


async def run(host: str, model: str, halves: list[str], mcp: bool) -> dict[str, list[dict]]:
    """Every request of ``halves`` through one IRIS; the judged replies by half."""
    from iris_voice.app.assembly import open_app

    state = Path(tempfile.mkdtemp(prefix="iris-bench-honest-"))
    out: dict[str, list[dict]] = {}
    with open(os.devnull, "w") as devnull:
        async with open_app(config(host, model, state, mcp), errlog=devnull) as app:
            if app.mcp is not None:
                await app.mcp.wait_ready(90)
            await app.responder.warmup()
            names = app.registry.callable_names()
            for half in halves:
                out[half] = []
                for r in HALVES[half]:
                    await prepare(app, r.timers)
                    before = await timers_state(app)
                    trace = await ask(app.responder, r.text)
                    wrote = any(c["ok"] and WRITERS.search(c["name"]) for c in trace.tool_calls)
                    changed = before != await timers_state(app)
                    faults = judge(r, trace.reply, changed or wrote, names)
                    calls = [(c["name"], c["arguments"]) for c in trace.tool_calls]
                    marks = ",".join(k for k, v in faults.items() if v) or "ok"
                    print(f"  [{half}] {marks:24} {r.text!r} -> {trace.reply!r} {calls}", flush=True)
                    out[half].append(faults)
    return out


def report(out: dict[str, list[dict]]) -> None:
    """One row per half: how many replies had each fault."""
    keys = ["side_effect", "syntax", "claim", "not_refused", "mid_sentence", "timer_question", "echo"]
    print(f"\n{'half':10} {'n':>3} " + " ".join(f"{k:>14}" for k in keys))
    for half, rows in out.items():
        print(f"{half:10} {len(rows):>3} " + " ".join(f"{sum(r[k] for r in rows):>14}" for k in keys))


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--halves", default="dev,held-out", help="dev, held-out (both: default) or fresh")
    ap.add_argument("--mcp", action="store_true", help="the six MCP servers too, with retrieval")
    args = ap.parse_args()
    from tools.testbed.servers import bench_target, model_server

    model, host = bench_target()
    with ExitStack() as stack:
        host = model_server(stack, model, host, "test server")
        report(asyncio.run(run(host, model, args.halves.split(","), args.mcp)))


if __name__ == "__main__":
    main()
