"""IRIS's voice latency benchmark: IRIS against a naive sequential pipeline, in one run.

Spoken questions (tools/testbed/fixtures.py ``BENCH``: ≥ 20 everyday commands — time, date,
timers, arithmetic, reminders — and ≥ 10 for the language model) go through
(``--modes``, all three by default):

- **file mode** (``iris ask --wav``'s ``FileTurns``): per-stage timings and first audio;
- **the naive pipeline** (tools/bench/naive_pipeline.py) over the same endpointed utterances
  and the same engines and model server: full transcription, ``stream=False`` chat,
  synthesis of the whole reply, then playback;
- **the live daemon** (``iris run``) on PipeWire virtual devices: the question is
  played into the virtual microphone and first audio is measured on the recording of
  the virtual speaker (an upper bound: both clocks err late), then its idle CPU.

Every conversation starts fresh, so IRIS and the naive pipeline see the same prompt;
timers persist from question to question (tools/bench/timer_state.py makes the state each
timer question assumes), IRIS and the naive pipeline each with their own. The report
(tools/bench/report.py) prints each question's execution path and whether it was right,
per-stage medians, first-audio p50/p95 by group and for the everyday commands, the VAD
hangover's share, and the latency goals beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from iris_voice.config import Config, LlmConfig, ToolsConfig
from tools.bench.report import path_of, report, right
from tools.bench.timer_state import pasta_left, prepare
from tools.testbed.fixtures import BENCH, ensure_fixtures, fixture, load_manifest

MODES = ("file", "naive", "live")


async def endpoint(cfg: Config, engines, wav: Path):
    """The utterance IRIS's listener cuts from a file (the naive pipeline gets the same)."""
    from iris_voice.audio.files import WavSource
    from iris_voice.voice.heard import UtteranceReady
    from iris_voice.voice.listener import Listener

    queue: asyncio.Queue = asyncio.Queue(16)
    engines.vad.reset()
    listener = Listener(
        cfg.audio.model_copy(update={"activation": "always"}), engines.vad, None, lambda e: None
    )
    await listener.run(WavSource(wav, trailing_silence_s=1.0), queue)
    while not queue.empty():
        heard = queue.get_nowait()
        if isinstance(heard, UtteranceReady):
            return heard.utterance
    raise RuntimeError(f"no utterance in {wav}")


async def file_and_naive(cfg: Config, names: list[str], modes: set[str]) -> tuple[list[dict], list[dict]]:
    """IRIS's file mode and the naive pipeline, question by question, interleaved."""
    import httpx
    import ollama

    from iris_voice.app.assembly import build_app
    from iris_voice.app.filemode import FileTurns
    from tools.bench.naive_pipeline import NaivePipeline

    turns = FileTurns(cfg)
    await turns.warmup()
    # The naive pipeline's own timers: IRIS's "pause the pasta timer" must not find the
    # naive run's pasta timer, nor the other way round.
    naive_cfg = turns.cfg.model_copy(
        update={"tools": turns.cfg.tools.model_copy(update={"timers_db": cfg.tools.timers_db + ".naive"})}
    )
    naive_app = build_app(naive_cfg)  # the same assembly: tools, timers, MCP
    naive_timers = naive_app.timers
    naive = NaivePipeline(naive_cfg, turns.engines.stt, turns.engines.tts, naive_app.registry)
    iris_rows, naive_rows = [], []
    for name in names:
        line = f"  {name:17}"
        if "file" in modes:
            if setup := await prepare(name, turns.timers):
                print(f"  ({name}: IRIS's timers: {setup})")
            turns.responder.conversation.reset()
            left = await pasta_left(turns.timers)
            (row,) = await turns.run(fixture(f"bench_{name}"))
            row.update(name=name, pasta_left_s=left)
            row["correct"] = right(row)  # now: "in ten minutes" means ten minutes from the answer
            iris_rows.append(row)
            line += f" {path_of(row):6} iris {row['first_audio_ms']!s:>7} ms"
        if "naive" in modes:
            if setup := await prepare(name, naive_timers):
                print(f"  ({name}: naive timers: {setup})")
            utt = await endpoint(turns.cfg, turns.engines, fixture(f"bench_{name}"))
            left = await pasta_left(naive_timers)
            try:
                nrow = await naive.turn(utt.audio, round(utt.hangover_s * 1000, 1))
            except (httpx.HTTPError, ollama.ResponseError) as exc:  # a busy machine: count it, go on
                nrow = {"reply": f"(failed: {exc!r})", "first_audio_ms": None, "error": repr(exc)}
            nrow.update(name=name, pasta_left_s=left)
            nrow["correct"] = right(nrow)
            naive_rows.append(nrow)
            line += f"   naive {nrow['first_audio_ms']!s:>7} ms"
        reply = (iris_rows or naive_rows)[-1]["reply"]
        print(f"{line}   {reply[:60]!r}", flush=True)
    return iris_rows, naive_rows


def live(server_url: str, names: list[str], idle_s: float) -> tuple[list[dict], float]:
    """The daemon on virtual devices: first audio measured on the speaker; idle CPU %."""
    import numpy as np

    from iris_voice.timers.service import TimerService
    from iris_voice.timers.store import TimerStore
    from tools.testbed.audiobed import VirtualAudio
    from tools.testbed.voicebed import LiveDaemon

    manifest = load_manifest()
    rows = []
    tmp = tempfile.mkdtemp(prefix="iris-bench-live-")  # kept: the daemon's log is the evidence
    db = f"{tmp}/timers.db"
    config = {"llm": {"temperature": 0.0}, "tools": {"timezone": "UTC", "timers_db": db}}
    with VirtualAudio() as bed:
        with LiveDaemon(bed, server_url, Path(tmp), config) as iris:
            for name in names:
                # The daemon reads the timers from this store on every request.
                service = TimerService(TimerStore(db), lambda e: None)
                if setup := asyncio.run(prepare(name, service)):
                    print(f"  ({name}: the daemon's timers: {setup})")
                left = asyncio.run(pasta_left(service))
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
                turn.update(name=name, speaker_first_audio_ms=heard_ms, pasta_left_s=left)
                turn["correct"] = right(turn)
                rows.append(turn)
                print(f"  {name:17} {path_of(turn):6} daemon {turn['first_audio_ms']!s:>7} ms   "
                      f"speaker {heard_ms!s:>7} ms   {turn['reply'][:50]!r}", flush=True)  # fmt: skip
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


async def amain(args: argparse.Namespace) -> int:
    """Run the chosen modes against one test server, then print (and with ``--json`` write) the report."""
    names = [n for n in BENCH if n in args.only] if args.only else list(BENCH)  # BENCH order
    names = names[: args.questions] if args.questions else names
    modes = set(args.modes.split(","))
    from tools.testbed.servers import start_server

    with tempfile.TemporaryDirectory(prefix="iris-bench-") as tmp, start_server() as server:
        llm = LlmConfig(host=server.url, temperature=0.0)
        cfg = Config(llm=llm, tools=ToolsConfig(timezone="UTC", timers_db=f"{tmp}/timers.db"))
        iris_rows, naive_rows, live_rows, idle = [], [], [], None
        if modes & {"file", "naive"}:
            print(f"== {len(names)} spoken questions: {' and '.join(sorted(modes - {'live'}))} "
                  "(same engines, same server)")  # fmt: skip
            iris_rows, naive_rows = await file_and_naive(cfg, names, modes)
        if "live" in modes:
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
    p.add_argument("--only", nargs="*", help="only these questions (names from tools.testbed.fixtures BENCH)")
    p.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated: file (IRIS file mode), naive, live (the daemon on virtual devices)",
    )
    p.add_argument("--idle-seconds", type=float, default=30.0)
    p.add_argument("--json", help="also write every row to this file")
    args = p.parse_args()
    unknown = set(args.modes.split(",")) - set(MODES)
    if unknown or args.only and set(args.only) - set(BENCH):
        p.error(f"unknown mode or question: {sorted(unknown | set(args.only or []) - set(BENCH))}")
    ensure_fixtures()  # synthesizes with its own event loop: before ours starts
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
