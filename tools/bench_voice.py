#!/usr/bin/env python3
"""IRIS's voice latency benchmark: IRIS against a naive sequential pipeline, in one run.

Spoken questions (tools/fixtures.py ``BENCH``: time, arithmetic, timers, chat) go
through:

- **file mode** (``iris ask --wav``'s ``FileTurns``): per-stage timings and first audio;
- **the naive pipeline** (tools/naive_pipeline.py) over the same endpointed utterances
  and the same engines and model server: full transcription, ``stream=False`` chat,
  synthesis of the whole reply, then playback;
- **the live daemon** (``iris run``) on PipeWire virtual devices: the question is
  played into the virtual microphone and first audio is measured on the recording of
  the virtual speaker (an upper bound: both clocks err late), then its idle CPU.

Every conversation starts fresh, so IRIS and the naive pipeline see the same prompt.
Prints per-stage medians, first-audio p50/p95, IRIS's own overhead and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from iris_voice.config import Config, LlmConfig, ToolsConfig  # noqa: E402
from iris_voice.status import percentile  # noqa: E402
from tools.bench_checks import correct  # noqa: E402
from tools.fixtures import BENCH, ensure_fixtures, fixture, load_manifest  # noqa: E402

STAGES = ("vad_hangover", "stt", "llm_first_token", "first_sentence", "tts_first_audio")


def med(values: list[float]) -> float | None:
    """Median, or None for no values."""
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 1) if values else None


async def endpoint(cfg: Config, engines, wav: Path):
    """The utterance IRIS's listener cuts from a file (the naive pipeline gets the same)."""
    from iris_voice.audio.files import WavSource
    from iris_voice.listener import Listener

    queue: asyncio.Queue = asyncio.Queue(4)
    engines.vad.reset()
    listener = Listener(
        cfg.audio.model_copy(update={"activation": "always"}), engines.vad, None, lambda e: None
    )
    await listener.run(WavSource(wav, trailing_silence_s=1.0), queue, lambda how: None)
    return queue.get_nowait()


async def file_and_naive(cfg: Config, names: list[str]) -> tuple[list[dict], list[dict]]:
    """IRIS's file mode and the naive pipeline, question by question, interleaved."""
    from iris_voice.filemode import FileTurns
    from tools.naive_pipeline import NaivePipeline

    turns = FileTurns(cfg)
    await turns.warmup()
    naive = NaivePipeline(turns.cfg, turns.engines.stt, turns.engines.tts, turns.registry)
    iris_rows, naive_rows = [], []
    for name in names:
        turns.chat.reset()
        (row,) = await turns.run(fixture(f"bench_{name}"))
        row["name"] = name
        iris_rows.append(row)
        utt = await endpoint(turns.cfg, turns.engines, fixture(f"bench_{name}"))
        nrow = await naive.turn(utt.audio, round(utt.hangover_s * 1000, 1))
        nrow["name"] = name
        naive_rows.append(nrow)
        print(f"  {name:18} iris {row['first_audio_ms']:7.0f} ms   naive {nrow['first_audio_ms']:7.0f} ms"
              f"   {row['reply'][:60]!r}", flush=True)  # fmt: skip
    return iris_rows, naive_rows


def live(server_url: str, names: list[str], idle_s: float) -> tuple[list[dict], float]:
    """The daemon on virtual devices: first audio measured on the speaker; idle CPU %."""
    import numpy as np

    from tools.audiobed import VirtualAudio
    from tools.voicebed import LiveDaemon

    manifest = load_manifest()
    rows = []
    config = {"llm": {"temperature": 0.0}, "tools": {"timezone": "UTC"}}
    tmp = tempfile.mkdtemp(prefix="iris-bench-live-")  # kept: the daemon's log is the evidence
    with VirtualAudio() as bed:
        with LiveDaemon(bed, server_url, Path(tmp), config) as iris:
            for name in names:
                iris.request("forget")
                count = iris.status()["turn_count"]
                rec = bed.record_speaker()
                played = time.monotonic()
                bed.play_into_mic(fixture(f"bench_{name}"))
                turn = iris.wait_turn(after=count)
                samples = rec.stop()
                speech_end = played + manifest[f"bench_{name}"]["speech_end"] / 16000
                start = rec.wall_time(0)
                first = int(max(0.0, speech_end - start) * 16000)
                block = 320
                loud = [i for i in range(first, len(samples) - block, block)
                        if np.sqrt(np.mean(samples[i:i + block].astype(np.float32) ** 2)) > 300]  # fmt: skip
                heard_ms = round((rec.wall_time(loud[0]) - speech_end) * 1000, 1) if loud else None
                turn.update(name=name, speaker_first_audio_ms=heard_ms)
                rows.append(turn)
                print(f"  {name:18} daemon {turn['first_audio_ms']!s:>7} ms   speaker {heard_ms!s:>7} ms",
                      flush=True)  # fmt: skip
            iris.request("timers", action="cancel", which="all")
            iris.request("forget")
            time.sleep(2.0)
            tick = os.sysconf("SC_CLK_TCK")

            def cpu() -> float:
                fields = Path(f"/proc/{iris.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / tick

            c0, t0 = cpu(), time.monotonic()
            time.sleep(idle_s)
            idle = 100 * (cpu() - c0) / (time.monotonic() - t0)
    print(f"  (daemon log: {iris.log_path})")
    return rows, round(idle, 2)


def report(iris_rows: list[dict], naive_rows: list[dict], live_rows: list[dict], idle: float | None) -> dict:
    """Print the tables; the figures as a dict."""
    out: dict[str, Any] = {}
    print("\n== Per-stage medians, IRIS file mode (ms)")
    for stage in STAGES:
        print(f"  {stage:18} {med([r['timings_ms'].get(stage) for r in iris_rows])}")
    overhead = [
        r["first_audio_ms"] - sum(r["timings_ms"][k] or 0 for k in
                                  ("vad_hangover", "stt", "first_sentence", "tts_first_audio"))
        for r in iris_rows
    ]  # fmt: skip
    print(f"  {'IRIS overhead':18} p50 {med(overhead)}  (first audio minus hangover + STT + LLM to first "
          "sentence + TTS of it)")  # fmt: skip
    print("\n== First audio (ms): p50 / p95, by group")
    groups = sorted({BENCH[r["name"]][0] for r in iris_rows or live_rows})
    for group in [*groups, "all"]:

        def pick(rows, key="first_audio_ms", g=group):
            return [
                r[key] for r in rows if (g == "all" or BENCH[r["name"]][0] == g) and r.get(key) is not None
            ]

        i, n = pick(iris_rows), pick(naive_rows)
        line = f"  {group:6} iris {percentile(i, 50)!s:>7} / {percentile(i, 95)!s:>7}"
        line += f"   naive {percentile(n, 50)!s:>7} / {percentile(n, 95)!s:>7}"
        if live_rows:
            d, s = pick(live_rows), pick(live_rows, "speaker_first_audio_ms")
            line += f"   daemon {percentile(d, 50)!s:>7}"
            line += f"   speaker {percentile(s, 50)!s:>7} / {percentile(s, 95)!s:>7}"
        print(line)
    ratio = 0.0
    if iris_rows and naive_rows:
        ratio = med([r["first_audio_ms"] for r in naive_rows]) / med([r["first_audio_ms"] for r in iris_rows])
    print(f"\n== naive / IRIS first audio (medians): {ratio:.2f}x   (goal >= 2.5x)")
    print(f"== IRIS overhead p50: {med(overhead)} ms   (goal <= 50 ms)")
    if idle is not None:
        print(f"== idle listening (wake word): {idle:.2f} % of one core   (goal <= 5 %)")
    ok_iris = sum(correct(r["name"], r["reply"]) for r in iris_rows)
    ok_naive = sum(correct(r["name"], r["reply"]) for r in naive_rows)
    print(f"== correct answers: IRIS {ok_iris}/{len(iris_rows)}, naive {ok_naive}/{len(naive_rows)}")
    out.update(ratio=round(ratio, 2), overhead_p50=med(overhead), idle_cpu=idle)
    return out


async def amain(args: argparse.Namespace) -> int:
    names = args.only or (list(BENCH)[: args.questions] if args.questions else list(BENCH))
    from tools.testbed import start_server

    with tempfile.TemporaryDirectory(prefix="iris-bench-") as tmp, start_server() as server:
        llm = LlmConfig(host=server.url, temperature=0.0)
        cfg = Config(llm=llm, tools=ToolsConfig(timezone="UTC", timers_db=f"{tmp}/timers.db"))
        print(
            f"== {len(names)} spoken questions; file mode and the naive pipeline (same engines, same server)"
        )
        iris_rows, naive_rows = await file_and_naive(cfg, names)
        live_rows, idle = [], None
        if not args.no_live:
            print("== the live daemon on virtual PipeWire devices")
            live_rows, idle = await asyncio.to_thread(live, server.url, names, args.idle_seconds)
    figures = report(iris_rows, naive_rows, live_rows, idle)
    if args.json:
        Path(args.json).write_text(json.dumps({"iris": iris_rows, "naive": naive_rows, "live": live_rows,
                                               **figures}, indent=1, default=str))  # fmt: skip
    return 0


def main() -> int:
    """Command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=int, default=0, help="only the first N questions")
    p.add_argument("--only", nargs="*", help="only these questions (names from tools/fixtures.py BENCH)")
    p.add_argument("--no-live", action="store_true", help="skip the live daemon on virtual devices")
    p.add_argument("--live-only", action="store_true", help="only the live daemon")
    p.add_argument("--idle-seconds", type=float, default=30.0)
    p.add_argument("--json", help="also write every row to this file")
    args = p.parse_args()
    ensure_fixtures()  # synthesizes with its own event loop: before ours starts
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
