"""One hub serving 1, 2, 3 and 4 satellites at once: turns per minute and first audio.

The hub is a process of its own: ``iris serve`` (Whisper tiny.en, Piper, its
``SatellitePart`` among the Wyoming service's parts). Each
satellite is a protocol-level client from the ``wyoming`` package that sends recorded
spoken questions (the fixtures, cut to what a satellite's endpointing would send: 0.4 s
before the speech, 0.4 s after) in a loop, the way ``iris satellite`` sends an utterance
once its VAD has decided the end. No audio devices are needed.

First audio is measured at the satellite: from the moment the last ``audio-chunk`` and
``audio-stop`` of the question are sent to the first ``audio-chunk`` of the answer.

Two question sets: ``fast`` (times, dates and arithmetic the intent fast path answers —
no language model) and ``model`` (general questions only the model answers; the test
server with the real GGUF, one request at a time on the hub). Run the model set under
``flock /tmp/iris-llm.lock``::

    python -m tools.bench.wyoming_hub --sets fast
    flock /tmp/iris-llm.lock python -m tools.bench.wyoming_hub --sets model --turns 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.pipeline import PipelineStage, RunPipeline

from tools.bench.stats import p50, p95
from tools.testbed.hubs import hub_process, stop_process

ROOT = Path(__file__).resolve().parents[2]
SETS = {
    "fast": ["bench_time_tokyo", "bench_time_berlin", "bench_multiply", "bench_plus", "bench_date_today",
             "bench_time_london", "bench_percent", "bench_divide"],
    "model": ["bench_france", "bench_romeo", "bench_planet", "bench_spider", "bench_gold", "bench_mona_lisa"],
}  # fmt: skip
"""Fixture names per question set (``tools/testbed/fixtures.py`` BENCH)."""
EDGE = 6400
"""Samples kept before and after the speech (0.4 s: the listener's pre-roll and hangover)."""


def utterances(names: list[str]) -> list[tuple[str, np.ndarray]]:
    """The spoken fixtures as a satellite would send them."""
    from tools.testbed.fixtures import ensure_fixtures, load_manifest, read_wav

    ensure_fixtures()
    manifest = load_manifest()
    out = []
    for name in names:
        audio, entry = read_wav(name), manifest[name]
        start, end = max(0, entry["speech_start"] - EDGE), entry["speech_end"] + EDGE
        out.append((name, audio[start:end].astype(np.int16)))
    return out


async def satellite(port: int, name: str, questions: list[tuple[str, np.ndarray]], turns: int,
                    offset: int, results: list[dict[str, Any]]) -> None:  # fmt: skip
    """Connect as ``name`` and ask ``turns`` questions one after another."""
    client = AsyncTcpClient("127.0.0.1", port)
    await client.connect()
    try:
        await client.write_event(Event("run-satellite", {"name": name}))
        hello = await client.read_event()
        if hello is None or hello.type != "satellite-connected":
            raise RuntimeError(f"the hub refused {name}: {hello}")
        fmt = {"rate": 16000, "width": 2, "channels": 1}
        for i in range(turns):
            qname, audio = questions[(i + offset) % len(questions)]
            run = RunPipeline(
                start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS, wake_word_name="hey_jarvis"
            )
            events = [run.event(), AudioStart(**fmt).event()]
            events += [
                AudioChunk(audio=audio[j : j + 1600].tobytes(), **fmt).event()
                for j in range(0, len(audio), 1600)
            ]
            events.append(AudioStop().event())
            for event in events:
                await client.write_event(event)
            sent = time.perf_counter()
            first = None
            transcript, end = "", ""
            while True:
                event = await asyncio.wait_for(client.read_event(), 300)
                if event is None:
                    raise RuntimeError(f"the hub closed {name}'s connection")
                if event.type == "transcript":
                    transcript = event.data.get("text", "")
                elif event.type == "audio-chunk" and first is None:
                    first = time.perf_counter()
                elif event.type in ("handled", "not-handled", "error"):
                    end = event.type
                    reply = (event.data or {}).get("text", "")
                    break
            done = time.perf_counter()
            first_ms = None if first is None else (first - sent) * 1000
            results.append({"satellite": name, "question": qname, "transcript": transcript, "end": end,
                            "reply": reply, "first_audio_ms": first_ms, "turn_s": done - sent})  # fmt: skip
    finally:
        await client.disconnect()


async def run_level(port: int, n: int, questions: list[tuple[str, np.ndarray]], turns: int) -> dict[str, Any]:
    """``n`` satellites at once, each asking ``turns`` questions; the figures."""
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    names = ["kitchen", "office", "bedroom", "garage"]
    await asyncio.gather(*(satellite(port, names[k], questions, turns, k * 3, results) for k in range(n)))
    wall = time.perf_counter() - started
    firsts = [r["first_audio_ms"] for r in results if r["first_audio_ms"] is not None]
    return {
        "n": n, "turns": len(results), "wall_s": wall, "turns_per_min": len(results) / wall * 60,
        "p50": p50(firsts) if firsts else float("nan"), "p95": p95(firsts) if firsts else float("nan"),
        "turn_p50_s": p50(r["turn_s"] for r in results),
        "handled": sum(r["end"] == "handled" for r in results), "results": results,
    }  # fmt: skip


def start_hub(env: dict[str, str], workdir: Path, jobs: int) -> tuple[subprocess.Popen, int, Path]:
    """The hub process (``jobs``: ``satellite.hub_speech_jobs``); returns once its models
    are loaded and it listens."""
    cfg = workdir / "hub.toml"
    cfg.write_text(
        f'[tools]\ntimezone = "UTC"\n[llm]\nkeep_alive = "-1"\n[satellite]\nhub_speech_jobs = {jobs}\n'
    )
    log = workdir / "hub.log"
    proc, port = hub_process(cfg, env, log)
    return proc, port, log


def bench_set(
    set_name: str, levels: list[int], turns: int, model_url: str | None, jobs_list: list[int]
) -> list[dict[str, Any]]:
    """One question set: a hub per ``satellite.hub_speech_jobs`` value, all started first,
    then at each level every hub in turn, so a machine whose load drifts (shared cores)
    touches the compared hubs alike."""
    questions = utterances(SETS[set_name])
    rows = []
    with tempfile.TemporaryDirectory(prefix="iris-bench-hub-") as tmp:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["OLLAMA_HOST"] = model_url or "http://127.0.0.1:9"  # the fast set never asks the model
        hubs = {}
        try:
            for jobs in jobs_list:
                work = Path(tmp) / f"jobs{jobs}"
                work.mkdir()
                env["XDG_STATE_HOME"] = str(work / "state")
                hubs[jobs] = start_hub(env, work, jobs)
                if set_name == "model":  # load the model and its prompt before measuring
                    asyncio.run(run_level(hubs[jobs][1], 1, questions[:1], 1))
            for n in levels:
                for jobs, (_proc, port, _log) in hubs.items():
                    row = asyncio.run(run_level(port, n, questions, turns))
                    row["set"], row["jobs"] = set_name, jobs
                    rows.append(row)
                    print(f"  {set_name} jobs={jobs} N={n}: {row['turns']} turns in {row['wall_s']:.1f} s, "
                          f"first audio p50 {row['p50']:.0f} ms p95 {row['p95']:.0f} ms",
                          flush=True)  # fmt: skip
        finally:
            for proc, _port, log in hubs.values():
                stop_process(proc)
                tracebacks = log.read_text(errors="replace").count("Traceback")
                if tracebacks:
                    print(f"  a hub logged {tracebacks} tracebacks ({log})", file=sys.stderr)
    rows.sort(key=lambda r: (r["jobs"] == 0, r["n"]))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the sets and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="fast,model", help="comma-separated: fast, model")
    parser.add_argument("--levels", default="1,2,3,4", help="satellites at once, comma-separated")
    parser.add_argument("--turns", type=int, default=6, help="questions per satellite per level")
    parser.add_argument("--speech-jobs", default="1,0",
                        help="satellite.hub_speech_jobs values to compare (0: no bound)")  # fmt: skip
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        url = None
        if "model" in sets:
            from tools.testbed.servers import start_server

            print("starting the Ollama-protocol test server (the real GGUF)...", flush=True)
            url = stack.enter_context(start_server()).url
        for set_name in sets:
            rows += bench_set(
                set_name, levels, args.turns, url, [int(x) for x in args.speech_jobs.split(",")]
            )
    print(f"\nOne hub (Whisper tiny.en, Piper joe, fast path; model: Qwen2.5-Coder-1.5B Q4_K_M on the test "
          f"server), protocol-level satellites on loopback, {args.turns} questions each per level; "
          f"{os.cpu_count()} CPU cores.")  # fmt: skip
    print("First audio: end of the question sent → first audio chunk of the answer received.\n")
    print("| questions | speech jobs | satellites | turns | turns/min | first audio p50 | p95 | turn p50 "
          "| handled |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['set']} | {r['jobs'] or 'any'} | {r['n']} | {r['turns']} | {r['turns_per_min']:.1f} | "
              f"{r['p50']:.0f} ms | {r['p95']:.0f} ms | {r['turn_p50_s']:.2f} s | "
              f"{r['handled']}/{r['turns']} |")  # fmt: skip
    base = {(r["set"], r["jobs"]): r for r in rows if r["n"] == levels[0]}
    for r in rows:
        first = base.get((r["set"], r["jobs"]))
        if r["n"] != levels[0] and first is not None and first["p50"]:
            slower, rate = r["p50"] / first["p50"], r["turns_per_min"] / first["turns_per_min"]
            print(f"{r['set']} jobs={r['jobs']} N={r['n']}: first audio p50 x{slower:.2f} of N={levels[0]}, "
                  f"turns/min x{rate:.2f}")  # fmt: skip
    odd = [x for r in rows for x in r["results"] if x["end"] != "handled"]
    for x in odd[:5]:
        print(f"not handled: {x['question']} heard {x['transcript']!r} → {x['end']} {x['reply']!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
