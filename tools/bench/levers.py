"""The latency levers, each on and off, in one run: the live daemon on virtual devices.

The levers (issue: "questions for the model as fast as everyday commands"):

- ``warm_cache`` — the model's prompt cache kept in step with the conversation while idle
  (``llm.warm_cache``);
- ``speculative`` — decoding, and answering, at the speaker's pause before the end of the
  question is decided (``stt.speculative``);
- ``smart_turn`` — the end of turn decided by Smart Turn at each pause instead of 400 ms of
  silence (``audio.end_of_turn``);
- ``first_clause`` — the reply's first clause spoken before its sentence is complete
  (``tts.first_clause_words``).

Configurations: ``none`` (every lever off), each lever alone, ``all``. For each, a fresh
daemon (``iris run``) answers, with the spoken questions played into the virtual microphone:

- **first-after-start**: a chat question as the first thing after the daemon is ready;
- **everyday** and **chat**: the 34 benchmark questions, each in a new conversation;
- **after-fast-path**: four fast-path commands, then a chat question, in one conversation;
- **after-announcement**: ``iris say`` speaks, then a chat question.

First audio is the daemon's own (end of speech to the first sample handed to the
speaker); the speaker recording's figure is printed beside it. The naive pipeline
(tools/bench/naive_pipeline.py) answers the 34 questions once, for the ratio. The report
(tools/bench/lever_report.py) prints p50/p95 by group and configuration, the naive ratio,
the cost of a turn after turns the model never saw against the same question with an
empty history, correctness, timers set twice and what speculation started and dropped.

    python -m tools.bench.levers [--configs none,all] [--questions N] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from iris_voice.config import Config, LlmConfig, ToolsConfig
from tools.bench.lever_report import report
from tools.bench.report import right
from tools.bench.timer_state import pasta_left, prepare
from tools.testbed.fixtures import BENCH, ensure_fixtures, fixture, load_manifest

LEVERS: dict[str, dict[bool, dict[str, dict[str, Any]]]] = {
    "warm_cache": {True: {"llm": {"warm_cache": True}}, False: {"llm": {"warm_cache": False}}},
    "speculative": {True: {"stt": {"speculative": True}}, False: {"stt": {"speculative": False}}},
    "smart_turn": {
        True: {"audio": {"end_of_turn": "smart_turn"}},
        False: {"audio": {"end_of_turn": "silence"}},
    },
    "first_clause": {True: {"tts": {"first_clause_words": 4}}, False: {"tts": {"first_clause_words": 0}}},
}
CONFIGS = ["none", *LEVERS, "all"]
AFTER_FAST = [
    (["time_tokyo", "multiply", "pasta_timer", "left_pasta"], "france"),
    (["time_berlin", "plus", "ten_minute_timer", "list_timers"], "planet"),
]
"""Four fast-path turns, then a chat question, in one conversation."""
AFTER_ANNOUNCEMENT = ("Your pasta timer is done.", "spider")
FIRST_AFTER_START = ("octopus", "romeo")
"""The first question after the daemon is ready (one per start)."""


def config_for(name: str) -> dict[str, dict[str, Any]]:
    """The daemon's config sections with the levers of configuration ``name`` set."""
    on = set(LEVERS) if name == "all" else {name} & set(LEVERS)
    sections: dict[str, dict[str, Any]] = {}
    for lever, states in LEVERS.items():
        for section, keys in states[lever in on].items():
            sections.setdefault(section, {}).update(keys)
    return sections


class Asker:
    """Plays questions into one running daemon and collects its traces."""

    def __init__(self, bed: Any, iris: Any, db: str) -> None:
        self.bed, self.iris, self.db = bed, iris, db
        self.manifest = load_manifest()

    def ask(self, name: str, group: str) -> dict[str, Any]:
        """Play ``bench_<name>``; its trace, with the speaker's first audio and the verdict."""
        from iris_voice.timers.service import TimerService
        from iris_voice.timers.store import TimerStore

        service = TimerService(TimerStore(self.db), lambda e: None)
        asyncio.run(prepare(name, service))
        left = asyncio.run(pasta_left(service))
        service.store.close()
        count = self.iris.status()["turn_count"]
        rec = self.bed.record_speaker()
        played = time.monotonic()
        self.bed.play_into_mic(fixture(f"bench_{name}"))
        try:
            turn = self.iris.wait_turn(after=count, timeout=60.0)
        except TimeoutError:  # heard as nothing, or cut so that no turn came of it: count it, go on
            rec.stop()
            row = {"name": name, "group": group, "first_audio_ms": None, "speaker_first_audio_ms": None,
                   "reply": "(no turn within 60 s)", "correct": False, "timings_ms": {}}  # fmt: skip
            time.sleep(1.5)
            return row
        samples = rec.stop()
        speech_end = played + self.manifest[f"bench_{name}"]["speech_end"] / 16000
        first = int(max(0.0, speech_end - rec.wall_time(0)) * 16000)
        block = 320
        loud = [i for i in range(first, len(samples) - block, block)
                if np.sqrt(np.mean(samples[i:i + block].astype(np.float32) ** 2)) > 300]  # fmt: skip
        heard = round((rec.wall_time(loud[0]) - speech_end) * 1000, 1) if loud else None
        turn.update(name=name, group=group, speaker_first_audio_ms=heard, pasta_left_s=left)
        turn["correct"] = right(turn)
        time.sleep(1.5)  # the user listens, then speaks again: IRIS is idle meanwhile
        return turn


def run_config(
    name: str, server_url: str, questions: list[str], workdir: Path, sequences: bool = True
) -> dict[str, Any]:
    """One configuration on a fresh daemon (restarted once for a second first question)."""
    from tools.testbed.audiobed import VirtualAudio
    from tools.testbed.voicebed import LiveDaemon

    workdir.mkdir(parents=True, exist_ok=True)
    db = str(workdir / "timers.db")
    config = {"llm": {"temperature": 0.0}, "tools": {"timezone": "UTC", "timers_db": db}}
    for section, keys in config_for(name).items():
        config.setdefault(section, {}).update(keys)
    rows: list[dict[str, Any]] = []
    speculation: dict[str, int] = {}

    def show(row: dict[str, Any]) -> None:
        print(f"  [{name}] {row['group']:18} {row['name']:17} {row['first_audio_ms']!s:>7} ms "
              f"(speaker {row['speaker_first_audio_ms']!s:>7})  {'ok' if row['correct'] else 'WRONG'} "
              f"{row['reply'][:50]!r}", flush=True)  # fmt: skip

    with VirtualAudio() as bed:
        for start, first in enumerate(FIRST_AFTER_START):
            with LiveDaemon(bed, server_url, workdir, config, log_name=f"iris-{start}.log") as iris:
                asker = Asker(bed, iris, db)
                time.sleep(2.0)  # READY: models loaded, prompt cached; the user starts talking
                rows.append(asker.ask(first, "first-after-start"))
                show(rows[-1])
                if start or not sequences:
                    if not sequences:
                        for q in questions:
                            iris.request("forget")
                            rows.append(asker.ask(q, BENCH[q][0] if BENCH[q][0] == "chat" else "everyday"))
                            show(rows[-1])
                        speculation = iris.status().get("speculation") or {}
                    break
                for q in questions:
                    iris.request("forget")
                    rows.append(asker.ask(q, BENCH[q][0] if BENCH[q][0] == "chat" else "everyday"))
                    show(rows[-1])
                for commands, chat in AFTER_FAST:
                    iris.request("forget")
                    for command in commands:
                        rows.append(asker.ask(command, "(fast-path turn)"))
                    rows.append(asker.ask(chat, "after-fast-path"))
                    show(rows[-1])
                iris.request("forget")
                said, chat = AFTER_ANNOUNCEMENT
                iris.request("say", text=said)
                time.sleep(1.5)
                rows.append(asker.ask(chat, "after-announcement"))
                show(rows[-1])
                iris.request("timers", action="cancel", which="all")
                speculation = iris.status().get("speculation") or {}
    return {"config": name, "rows": rows, "speculation": speculation}


async def naive_rows(server_url: str, questions: list[str]) -> list[dict[str, Any]]:
    """The naive pipeline over the same questions (for the ratio)."""
    from tools.bench.voice import file_and_naive

    with tempfile.TemporaryDirectory(prefix="iris-bench-naive-") as tmp:
        llm = LlmConfig(host=server_url, temperature=0.0)
        cfg = Config(llm=llm, tools=ToolsConfig(timezone="UTC", timers_db=f"{tmp}/timers.db"))
        _, rows = await file_and_naive(cfg, questions, {"naive"})
    return rows


def main() -> int:
    """Command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, of {', '.join(CONFIGS)}")
    p.add_argument("--questions", type=int, default=0, help="only the first N benchmark questions")
    p.add_argument("--no-naive", action="store_true", help="leave out the naive pipeline")
    p.add_argument(
        "--no-sequences", action="store_true", help="only the questions (no after-fast-path, restart…)"
    )
    p.add_argument("--json", help="also write every row to this file")
    p.add_argument("--workdir", help="keep the daemons' configs, timers and logs here (default: temporary)")
    args = p.parse_args()
    configs = args.configs.split(",")
    if set(configs) - set(CONFIGS):
        p.error(f"unknown configuration: {sorted(set(configs) - set(CONFIGS))}")
    questions = list(BENCH)[: args.questions] if args.questions else list(BENCH)
    ensure_fixtures()
    from tools.testbed.servers import start_server

    results, naive = [], []
    with start_server() as server, tempfile.TemporaryDirectory(prefix="iris-levers-") as scratch:
        tmp = args.workdir or scratch  # the daemons' configs, timers and logs (iris-N.log)
        if not args.no_naive:
            print("== the naive pipeline (once)", flush=True)
            naive = asyncio.run(naive_rows(server.url, questions))
        for name in configs:
            print(f"== configuration {name}: {config_for(name)}", flush=True)
            results.append(run_config(name, server.url, questions, Path(tmp) / name, not args.no_sequences))
    figures = report(results, naive)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "naive": naive, **figures},
                                              indent=1, default=str))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
