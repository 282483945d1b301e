"""IRIS over a long day: 200 mixed turns through the live daemon, its resources sampled.

The daemon runs on the PipeWire virtual devices with the scripted model server (answers
on demand, so the run is about IRIS and not about a model's speed). Every cycle of ten
turns mixes what a day brings: spoken everyday commands (fast path) and spoken questions
for the model, a typed request that sets a short timer (it fires and is dismissed with
``iris stop`` a few turns later), a barge-in ("hey Jarvis" over a long answer), and
control commands (``status``, ``timers``, ``say``, ``mute``/``unmute``). RSS, open file
descriptors and threads are sampled every ten turns.

    python -m tools.bench.soak [--turns 200]      (make soak)

Goals (hardening issue): RSS growth ≤ 10 % from turn 20 to the last, no growth in file
descriptors or threads, every timer fired exactly once.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from iris_voice.errors import IrisError
from tools.bench.abuse import proc_stats
from tools.testbed.audiobed import VirtualAudio
from tools.testbed.fixtures import ensure_fixtures, fixture
from tools.testbed.servers import scripted_server
from tools.testbed.voicebed import LiveDaemon

FAST = ["bench_time_tokyo", "bench_multiply", "bench_time_here", "bench_plus", "bench_date_today"]
MODEL = ["bench_octopus", "bench_france", "bench_spider"]
LONG_ANSWER = " ".join(f"This is sentence number {i} of a long answer about the sea." for i in range(12))


class Soak:
    """One soak run: the daemon, the scripted model and the turn mix."""

    def __init__(self, daemon: LiveDaemon, bed: VirtualAudio, url: str) -> None:
        self.daemon, self.bed, self.url = daemon, bed, url
        self.turns = 0
        self.timers_set = 0
        self.samples: list[dict[str, Any]] = []
        self.problems: list[str] = []

    def script(self, *replies: dict[str, Any]) -> None:
        """Queue the scripted model's next replies."""
        httpx.post(f"{self.url}/_script", json={"replies": list(replies)}, timeout=10).raise_for_status()

    def count(self) -> int:
        """Turns the daemon has answered (voice and typed)."""
        return int(self.daemon.status().get("turn_count", 0))

    def spoken(self, name: str, reply: str | None = None) -> None:
        """Play a question into the microphone and wait for its answer."""
        if reply is not None:
            self.script({"text": reply, "chunk": 12})
        before = self.count()
        self.bed.play_into_mic(fixture(name))
        try:
            self.daemon.wait_turn(after=before, timeout=90)
        except TimeoutError:
            self.problems.append(f"turn {self.turns + 1} ({name}): no answer within 90 s")

    def typed_timer(self) -> None:
        """A typed request whose scripted reply sets a 2-second timer."""
        call = {"name": "set_timer", "arguments": {"duration": "2 seconds", "label": f"soak {self.turns}"}}
        self.script({"text": f"<tool_call>\n{json.dumps(call)}\n</tool_call>", "chunk": 32})
        # The words ask for the call's duration: IRIS runs only calls the words ground.
        answer = self.daemon.request("ask", timeout=60, text="set a soak timer for 2 seconds")
        calls = answer.get("trace", {}).get("tool_calls") or []
        if answer.get("ok") and calls and all(c["ok"] for c in calls) and "refused" not in answer["trace"]:
            self.timers_set += 1
        else:
            self.problems.append(f"turn {self.turns + 1}: the timer was not set: {answer}")

    def barge_in(self) -> None:
        """A long spoken answer, interrupted by the wake word and a new question."""
        self.script({"text": LONG_ANSWER, "chunk": 12})
        before = self.count()
        self.bed.play_into_mic(fixture("bench_octopus"))
        try:
            self.daemon.wait_state("speaking", timeout=60)
        except TimeoutError:
            self.problems.append(f"turn {self.turns + 1}: the long answer never started")
            return
        time.sleep(1.0)
        self.bed.play_into_mic(fixture("bench_time_tokyo"))  # "Hey Jarvis, what time…": a barge-in
        try:
            self.daemon.wait_turn(after=before + 1, timeout=90)
        except TimeoutError:
            self.problems.append(f"turn {self.turns + 1}: the question after the barge-in went unanswered")

    def control(self) -> None:
        """A round of control commands; dismisses a ringing timer."""
        for cmd, fields in (("status", {}), ("timers", {"action": "list"}), ("mute", {}), ("unmute", {})):
            if not self.daemon.request(cmd, timeout=30, **fields).get("ok"):
                self.problems.append(f"iris {cmd} failed")
        self.daemon.request("say", timeout=60, text="Still here.")
        self.daemon.request("stop", timeout=10)

    def sample(self) -> None:
        """RSS, fds and threads of the daemon now."""
        assert self.daemon.proc is not None
        cpu, rss, fds, threads = proc_stats(self.daemon.proc.pid)
        self.samples.append({"turn": self.turns, "rss_mb": rss, "fds": fds, "threads": threads, "cpu_s": cpu})
        print(f"  turn {self.turns:4}: RSS {rss:6.1f} MB  fds {fds:3}  threads {threads:3}  cpu {cpu:6.1f} s",
              flush=True)  # fmt: skip

    def cycle(self, i: int) -> None:
        """Ten turns of the mix."""
        steps: list[Callable[[], None]] = [
            lambda: self.spoken(FAST[i % len(FAST)]),
            lambda: self.spoken(MODEL[i % len(MODEL)], "Here is a short answer. It has two sentences."),
            self.typed_timer,
            lambda: self.spoken(FAST[(i + 1) % len(FAST)]),
            self.barge_in,
            lambda: self.spoken(FAST[(i + 2) % len(FAST)]),
            self.control,
            lambda: self.spoken(MODEL[(i + 1) % len(MODEL)], "Yes."),
            lambda: self.spoken(FAST[(i + 3) % len(FAST)]),
        ]
        for step in steps:
            step()
            self.turns = self.count()


def fired_once(db: Path) -> tuple[int, int, int]:
    """(timers stored, fired exactly once, still pending) from the daemon's database."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT state, fired_at FROM timers WHERE kind = 'timer'").fetchall()
    fired = sum(1 for state, at in rows if state == "fired" and at is not None)
    pending = sum(1 for state, _ in rows if state in ("pending", "paused"))
    return len(rows), fired, pending


def main() -> int:
    """Run the soak and print the resource figures against the goals."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    args = ap.parse_args()
    ensure_fixtures()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="iris-soak-")))
        url = scripted_server(stack)
        bed = stack.enter_context(VirtualAudio())
        config = {"audio": {"alarm_repeat_s": 5.0, "alarm_timeout_s": 20.0, "follow_up_s": 0.0}}
        daemon = stack.enter_context(LiveDaemon(bed, url, tmp / "daemon", config=config))
        soak = Soak(daemon, bed, url)
        soak.sample()
        t0, i = time.monotonic(), 0
        while soak.turns < args.turns:
            try:
                soak.cycle(i)
            except (IrisError, OSError, httpx.HTTPError) as exc:
                soak.problems.append(f"cycle {i}: {type(exc).__name__}: {exc}")
                if daemon.proc is not None and daemon.proc.poll() is not None:
                    soak.problems.append("the daemon exited")
                    break
            i += 1
            soak.sample()
        time.sleep(5)  # the last timer falls due
        daemon.request("stop", timeout=10)
        stored, fired, pending = fired_once(tmp / "daemon" / "state" / "iris" / "timers.db")
        report(soak, time.monotonic() - t0, stored, fired, pending)
    return 0


def report(soak: Soak, took: float, stored: int, fired: int, pending: int) -> None:
    """The figures against the goals."""
    at20 = next((s for s in soak.samples if s["turn"] >= 20), soak.samples[0])
    last = soak.samples[-1]
    growth = (last["rss_mb"] - at20["rss_mb"]) / at20["rss_mb"] * 100
    print(f"\n{soak.turns} turns in {took / 60:.1f} min; timers set {soak.timers_set}, stored {stored}, "
          f"fired once {fired}, still pending {pending}")  # fmt: skip
    print(f"RSS turn {at20['turn']} → {last['turn']}: {at20['rss_mb']:.1f} → {last['rss_mb']:.1f} MB "
          f"({growth:+.1f} %, goal ≤ 10 %)")  # fmt: skip
    # A sample may catch a control connection or an HTTP request open (one fd more): growth
    # is the most seen in the last five samples against the most in the first five from turn 20.
    after20 = [s for s in soak.samples if s["turn"] >= at20["turn"]]
    early, late = after20[:5], after20[-5:]
    grew = {k: max(s[k] for s in late) - max(s[k] for s in early) for k in ("fds", "threads")}
    print(
        f"fds {at20['fds']} → {last['fds']} (most: {max(s['fds'] for s in early)} early, "
        f"{max(s['fds'] for s in late)} late), threads {at20['threads']} → {last['threads']} "
        "(goal: no growth)"
    )
    for problem in soak.problems:
        print(f"  problem: {problem}")
    ok = growth <= 10 and grew["fds"] <= 0 and grew["threads"] <= 0
    ok = ok and fired == soak.timers_set == stored and not soak.problems
    print(f"-> {'OK' if ok else 'MISS'}")


if __name__ == "__main__":
    sys.exit(main())
