#!/usr/bin/env python3
"""IRIS's demo: a few spoken-style questions through ``iris ask``, answers and traces.

Uses the Ollama server at the configured address when one answers; otherwise (no
Ollama on this machine) it serves the packaged Qwen2.5-1.5B model through IRIS's
Ollama-protocol test server on a private loopback port. Timers set by the demo go
to a throw-away state directory, not to the user's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from iris_voice import config as config_mod  # noqa: E402

QUESTIONS = [
    "What time is it in Tokyo?",
    "What is 23 times 47?",
    "Set a pasta timer for eight minutes.",
    "Which timers are running?",
    "Give me one fun fact about octopuses.",
]


def ollama_answers(host: str) -> bool:
    """True when an Ollama(-protocol) server answers at ``host``."""
    try:
        return httpx.get(f"{host}/api/version", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def main() -> int:
    """Run the demo; exit non-zero if any question fails."""
    cfg, _ = config_mod.load()
    env = dict(os.environ)
    with ExitStack() as stack:
        if ollama_answers(cfg.llm.host):
            print(f"Using the Ollama server at {cfg.llm.host} (model {cfg.llm.model}).")
        else:
            from tools.fetch_models import assemble
            from tools.testbed import start_server

            print(f"No Ollama server at {cfg.llm.host}: serving the packaged model on a private port.")
            t0 = time.perf_counter()
            server = stack.enter_context(start_server(assemble(), extra_args=["--model", cfg.llm.model]))
            print(f"Test server ready at {server.url} in {time.perf_counter() - t0:.1f} s.")
            env["OLLAMA_HOST"] = server.url
        env["XDG_STATE_HOME"] = stack.enter_context(tempfile.TemporaryDirectory(prefix="iris-demo-"))
        failures = 0
        for question in QUESTIONS:
            print(f"\n> {question}")
            proc = subprocess.run(
                [sys.executable, "-m", "iris_voice.cli", "ask", "--json", question],
                env=env, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            if proc.returncode != 0:
                failures += 1
                print(f"  failed (exit {proc.returncode}): {proc.stderr.strip()}")
                continue
            trace = json.loads(proc.stdout)
            print(f"  IRIS: {trace['reply']}")
            for call in trace["tool_calls"]:
                args = json.dumps(call["arguments"], ensure_ascii=False)
                print(f"  tool: {call['name']}({args}) -> {call['result']}  [{call['duration_ms']:.1f} ms]")
            t = trace["timings_ms"]
            print(
                f"  path={trace['execution_path']} rounds={trace['rounds']} "
                f"tokens={trace['tokens']['prompt']}+{trace['tokens']['completion']} "
                f"first_token={t['first_token']} ms first_sentence={t['first_sentence']} ms "
                f"total={t['total']} ms"
            )
        print(f"\n{len(QUESTIONS) - failures} of {len(QUESTIONS)} questions answered.")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
