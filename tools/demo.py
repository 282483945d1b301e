"""IRIS's demo: spoken questions in, spoken answers out, on a machine with no microphone.

The questions are WAVs synthesized at set-up (``make fixtures``: "Hey Jarvis, what time
is it in Tokyo?"…). Each goes through the same stages as the live daemon — VAD
endpointing, Whisper, the tool-calling chat loop, Piper — with a file as the
microphone and another as the speaker. The answers are written to ``demo-output/``;
the demo prints what IRIS heard, the tools it called, what it said and how long each
stage took.

Uses the Ollama server at the configured address when one answers; otherwise it serves
the packaged Qwen2.5-Coder-1.5B model through IRIS's Ollama-protocol test server on a
private loopback port. Timers set by the demo go to a throw-away state directory.

Run from the repository root: ``python -m tools.demo`` (``make demo``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from iris_voice import config as config_mod

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ["bench_time_tokyo", "bench_multiply", "bench_pasta_timer", "bench_list_timers", "bench_octopus"]
OUT = ROOT / "demo-output"


def show(name: str, turn: dict, out: Path) -> None:
    """Print one turn."""
    t = turn["timings_ms"]
    print(f"\n> (spoken) {turn['transcript']}")
    for call in turn["tool_calls"]:
        args = json.dumps(call["arguments"], ensure_ascii=False)
        print(f"  tool: {call['name']}({args}) -> {call['result']}")
    print(f"  IRIS (spoken, {out.relative_to(ROOT)}): {turn['reply']}")
    stages = " ".join(
        f"{k}={t.get(k)}" for k in ("vad_hangover", "stt", "llm_first_token", "tts_first_audio")
    )
    print(f"  path={turn['execution_path']} {stages} ms")
    print(f"  first audio {turn['first_audio_ms']} ms after the end of speech; whole turn {t['total']} ms")


async def run(cfg: config_mod.Config) -> int:
    """Answer each question; non-zero when one could not be answered."""
    from iris_voice.app.filemode import FileTurns
    from tools.testbed.fixtures import fixture

    async with FileTurns(cfg) as turns:  # the daemon's parts, from the one assembly
        t0 = time.perf_counter()
        await turns.warmup()
        print(f"Speech and language models ready in {time.perf_counter() - t0:.1f} s.")
        OUT.mkdir(exist_ok=True)
        failures = 0
        for name in QUESTIONS:
            out = OUT / f"{name.removeprefix('bench_')}.wav"
            answered = await turns.run(fixture(name), out)
            if not answered:
                failures += 1
                print(f"\n> {name}: no question heard")
                continue
            show(name, answered[0], out)
    print(f"\n{len(QUESTIONS) - failures} of {len(QUESTIONS)} spoken questions answered; "
          f"the answers are in {OUT.relative_to(ROOT)}/.")  # fmt: skip
    return 1 if failures else 0


def main() -> int:
    """Run the demo."""
    from tools.testbed.fixtures import ensure_fixtures

    cfg, _ = config_mod.load()
    ensure_fixtures()  # synthesizes with its own event loop: before ours starts
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="iris-demo-"))
        tools = cfg.tools.model_copy(update={"timers_db": f"{tmp}/timers.db"})
        from tools.testbed.servers import ollama_answers

        if ollama_answers(cfg.llm.host):
            print(f"Using the Ollama server at {cfg.llm.host} (model {cfg.llm.model}).")
        else:
            from tools.testbed.fetch_models import assemble
            from tools.testbed.servers import start_server

            print(f"No Ollama server at {cfg.llm.host}: serving the packaged model on a private port.")
            server = stack.enter_context(start_server(assemble(), extra_args=["--model", cfg.llm.model]))
            cfg = cfg.model_copy(update={"llm": cfg.llm.model_copy(update={"host": server.url})})
        cfg = cfg.model_copy(update={"tools": tools})
        return asyncio.run(run(cfg))


if __name__ == "__main__":
    sys.exit(main())
