"""IRIS in a room: its own voice leaking back into the microphone, measured with echo
cancellation off, with the software guard only, with PipeWire's canceller and with WebRTC's
AEC3 inside IRIS (``audio.echo_cancel`` = off, guard, pipewire, webrtc).

The virtual devices get a room (``tools/testbed/echopath.py``): what reaches the speaker
comes back into the microphone ``--delay-ms`` late, ``--gain-db`` quieter, with a
reverberant tail. For each ``audio.echo_cancel`` setting a fresh daemon (``iris run``)
on that bed:

- **self-triggering**: speaks ≥ 30 replies — answers to spoken fast-path questions (each
  followed by the follow-up window, when a reply's tail could open a question) and
  ``iris say`` texts, some of which contain "hey Jarvis" — and counts the turns and
  interruptions nobody asked for;
- **talking over IRIS** (``barge_in = "voice"``): while IRIS reads a long text, a person
  asks a question; how long until IRIS is silent (from the start of the person's speech
  to the last loud block in the speaker recording), and the word error rate of what IRIS
  heard against the same question's text.

No language model is needed (every question is on the fast path; the model URL is dead,
so the daemon's one "cannot reach" sentence at start is waited out and not counted).

    python -m tools.bench.rooms [--configs webrtc,pipewire,guard,off] [--gain-db -3]
        [--barge-ins 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from tools.bench.stats import p50, percentile, wer

QUESTIONS = (
    "bench_time_here", "bench_date_today", "bench_day_today", "bench_multiply", "bench_percent",
    "bench_sqrt", "bench_divide", "bench_plus", "bench_time_tokyo", "bench_time_london",
)  # fmt: skip
"""Spoken fast-path questions: each reply is followed by the follow-up window."""
SAYINGS = (
    "You can wake me any time by saying hey Jarvis, and then asking your question.",
    "Hey Jarvis is my wake word. Say it, then ask.",
    "If I do not hear you, say hey Jarvis a little louder.",
    "Your pasta timer is done. Say hey Jarvis, stop, to silence it.",
    "I heard hey Jarvis, but nothing after it.",
    "Hey Jarvis, what time is it? That is how you ask me the time.",
    "The weather is not something I can look up, but I can set timers and reminders.",
    "It is a quarter past three in the afternoon on Tuesday.",
    "Twenty three times forty seven is one thousand and eighty one.",
    "Your tea timer has three minutes and twenty seconds left.",
    "I set a reminder to call your mother at six this evening.",
    "Octopuses have three hearts and blue blood, and each arm can taste what it touches.",
    "The largest planet in our solar system is Jupiter, more than eleven times as wide as Earth.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "Sorry, I can't do that. I can tell the time, do arithmetic, and keep timers and reminders.",
    "All three of your timers are cancelled.",
    "In Tokyo it is seven minutes past four in the morning.",
    "Fifteen percent of eighty is twelve.",
    "The capital of France is Paris, on the river Seine.",
    "Good morning. You have two reminders today, the first at nine.",
)
"""``iris say`` texts: six contain the wake phrase."""
LONG_TEXT = (
    "Here is a long story about the sea. Long ago a small boat left the harbour at dawn, "
    "with a fisherman, his daughter and an old grey dog. The wind was gentle and the water "
    "was calm, and for hours they saw nothing but gulls and the line of the coast behind them. "
    "Then the sky turned dark, the waves grew tall, and the boat began to rock."
)
BARGE_INS = ("time_tokyo", "multiply", "espeak_time_tokyo", "endpoint_multiply_300", "endpoint_remind_300")
"""Questions a person asks over IRIS's voice (no wake word)."""


def _loud_ends(samples: np.ndarray, rate: int = 16000, block: float = 0.02) -> list[int]:
    """Sample indexes where a non-silent 20 ms block ends."""
    n = int(rate * block)
    blocks = samples[: len(samples) // n * n].reshape(-1, n).astype(np.float32)
    return [int((i + 1) * n) for i in np.flatnonzero(np.sqrt((blocks**2).mean(axis=1)) > 300)]


def _wait_quiet(daemon: Any, seconds: float, timeout: float = 30.0) -> bool:
    """Wait until IRIS has been idle (not speaking, not listening) for ``seconds``; False
    when it never is within ``timeout`` (it keeps answering itself)."""
    quiet_since = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = daemon.status().get("state")
        if state == "idle":
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= seconds:
                return True
        else:
            quiet_since = None
        time.sleep(0.1)
    return False


def _silence(daemon: Any) -> None:
    """Break a loop of IRIS answering itself: mute, stop, wait, unmute."""
    daemon.request("mute")
    daemon.request("stop")
    time.sleep(2.0)
    daemon.request("unmute")


def self_triggering(bed: Any, daemon: Any, follow_up_s: float) -> dict[str, Any]:
    """Speak every reply; count turns and interruptions nobody asked for."""
    from tools.testbed.fixtures import fixture

    start = daemon.status()["turn_count"]
    interrupted = 0
    for name in QUESTIONS:
        before = daemon.status()["turn_count"]
        bed.play_into_mic(fixture(name))
        turn = daemon.wait_turn(after=before, timeout=60)
        interrupted += bool(turn.get("interrupted"))
        if not _wait_quiet(daemon, follow_up_s + 1.0):  # the window closes; a tail would have opened it
            _silence(daemon)
    for text in SAYINGS:
        interrupted += bool(daemon.request("say", text=text, timeout=60).get("interrupted"))
        if not _wait_quiet(daemon, 1.5):
            _silence(daemon)
    st = daemon.status()
    extra = st["turn_count"] - start - len(QUESTIONS)
    return {
        "replies": len(QUESTIONS) + len(SAYINGS),
        "self_turns": extra,
        "self_interruptions": interrupted,
        "ignored_own_voice": (st.get("echo") or {}).get("ignored", 0),
        "echo": st.get("echo"),
    }


def barge_ins(bed: Any, daemon: Any, n: int) -> list[dict[str, Any]]:
    """Talk over IRIS ``n`` times: stop latency and what IRIS heard."""
    from tools.testbed.fixtures import fixture, load_manifest

    manifest = load_manifest()
    out = []
    for name in BARGE_INS[:n]:
        if not _wait_quiet(daemon, 1.0):
            _silence(daemon)
        before = daemon.status()["turn_count"]
        rec = bed.record_speaker()
        said: dict[str, Any] = {}

        def say(said: dict[str, Any] = said) -> None:
            said.update(daemon.request("say", text=LONG_TEXT, timeout=120))
            said["returned_at"] = time.monotonic()  # an interrupted say returns at the barge-in

        sayer = threading.Thread(target=say, daemon=True)
        sayer.start()
        daemon.wait_state("speaking", timeout=30)
        time.sleep(2.0)  # into the story
        started = time.monotonic()
        bed.play_into_mic(fixture(name), wait=False)
        speech_at = started + manifest[name]["speech_start"] / 16000
        sayer.join(120)
        turn = None
        try:
            turn = daemon.wait_turn(after=before, timeout=30)
        except TimeoutError:
            pass
        time.sleep(0.5)
        looped = not _wait_quiet(daemon, 0.5, timeout=15.0)
        audio = rec.stop()
        # The reply to the question cannot start within 1.5 s of the question's start (each
        # is longer): what is loud before then is the story.
        ends = [rec.wall_time(i) for i in _loud_ends(audio)]
        story = [t for t in ends if t < speech_at + 1.5]
        stop_ms = None
        cut = bool(said.get("interrupted"))
        if cut and story:
            stop_ms = round((max(story) - speech_at) * 1000, 1)
        text = manifest[name]["text"]
        heard = (turn or {}).get("transcript", "") if turn else ""
        # Interrupted before the person began: IRIS's own voice did it. Otherwise a negative
        # stop is IRIS pausing between sentences as the person began and not going on: 0.
        before_person = cut and said.get("returned_at", speech_at) < speech_at
        raw_ms = stop_ms
        if stop_ms is not None and not before_person:
            stop_ms = max(0.0, stop_ms)
        out.append({
            "question": name, "interrupted": cut, "stop_ms": stop_ms, "stop_raw_ms": raw_ms,
            "before_person": before_person,
            "heard": heard, "wer": round(wer(text, heard), 3) if turn else None, "self_loop": looped,
        })  # fmt: skip
    return out


def run_config(method: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One ``audio.echo_cancel`` setting on a fresh bed with the room."""
    from tools.testbed.audiobed import VirtualAudio
    from tools.testbed.echopath import EchoPath, Room, measure
    from tools.testbed.voicebed import LiveDaemon

    room = Room(delay_ms=args.delay_ms, gain_db=args.gain_db, rt60_ms=args.rt60_ms)
    result: dict[str, Any] = {"config": method}
    with VirtualAudio() as bed, EchoPath(bed, room):
        m = measure(bed)
        result["room"] = {
            "delay_ms": round(m.delay_ms, 1),
            "gain_db": round(m.gain_db, 1),
            "rt60_ms": room.rt60_ms,
        }
        config = {
            "audio": {"echo_cancel": method, "follow_up_s": args.follow_up_s, "barge_in": "wake_word"},
            "tools": {"timezone": "UTC"},
        }
        if "self" in args.phases:
            with LiveDaemon(bed, "http://127.0.0.1:9", work / f"{method}-wake", config) as daemon:
                _wait_quiet(daemon, 2.0)  # the one "cannot reach the model" sentence at start
                result["self"] = self_triggering(bed, daemon, args.follow_up_s)
        if "barge" in args.phases:
            config["audio"]["barge_in"] = "voice"
            with LiveDaemon(bed, "http://127.0.0.1:9", work / f"{method}-voice", config) as daemon:
                _wait_quiet(daemon, 2.0)
                result["barge_in"] = barge_ins(bed, daemon, args.barge_ins)
                result["barge_echo"] = daemon.status().get("echo")
    return result


def _spin() -> None:  # pragma: no cover  (a child process burning a core)
    while True:
        sum(i * i for i in range(100_000))


def busy(n: int) -> list[Any]:
    """``n`` processes each keeping a core busy (a loaded machine); terminate them after."""
    import multiprocessing

    procs = [multiprocessing.get_context("spawn").Process(target=_spin, daemon=True) for _ in range(n)]
    for proc in procs:
        proc.start()
    return procs


def report(results: list[dict[str, Any]]) -> str:
    """The table: one line per configuration, then each talk-over."""
    lines = [
        "config     room (delay, gain)  replies  self-turns  self-interrupts  own voice ignored  "
        "ERLE dB  talked over: stopped  before the person  stop p50 ms  p95 ms  WER mean"
    ]
    for r in results:
        s = r.get("self") or {
            "replies": 0,
            "self_turns": "-",
            "self_interruptions": "-",
            "ignored_own_voice": "-",
        }
        b = r.get("barge_in") or []
        stops = [x["stop_ms"] for x in b if x["stop_ms"] is not None and not x.get("before_person")]
        early = sum(1 for x in b if x.get("before_person"))
        wers = [x["wer"] for x in b if x["wer"] is not None and x["stop_ms"] is not None]
        erle = [
            e.get("erle_db") for e in (s.get("echo"), r.get("barge_echo")) if isinstance(e, dict)
        ]  # the in-process canceller's own figure (webrtc only)
        erle_text = "/".join(f"{e:.0f}" for e in erle if e is not None) or "-"
        label = r["config"] + (f" +{r['load']}" if r.get("load") else "")
        lines.append(
            f"{label:<10} "
            f"{r['room']['delay_ms']:>5.1f} ms {r['room']['gain_db']:>6.1f} dB  "
            f"{s['replies']:>7}  {s['self_turns']:>10}  {s['self_interruptions']:>15}  "
            f"{s['ignored_own_voice']:>17}  {erle_text:>7}  {len(stops):>14}/{len(b):<5}  {early:>17}  "
            f"{p50(stops) if stops else float('nan'):>11.0f}  "
            f"{percentile(stops, 95) if stops else float('nan'):>6.0f}  "
            f"{(sum(wers) / len(wers)) if wers else float('nan'):>8.2f}"
        )
    lines.append("(stop: from the start of the person's speech to IRIS's last loud 20 ms; WER over")
    lines.append(" the questions that stopped IRIS, against the question's text; ERLE: what the")
    lines.append(" in-process canceller removed while IRIS spoke, self-triggering / talk-over runs;")
    lines.append(" +N: N cores kept busy meanwhile)")
    for r in results:
        for x in r.get("barge_in") or []:
            lines.append(
                f"  {r['config']:<9} {x['question']:<22} stop {x['stop_ms']} ms"
                f"{' BEFORE THE PERSON' if x.get('before_person') else ''}  wer {x['wer']}  "
                f"heard {x['heard']!r}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the room benchmark and print its table."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default="webrtc,pipewire,guard,off")
    p.add_argument("--barge-ins", type=int, default=5)
    p.add_argument("--phases", default="self,barge", help="self (self-triggering), barge (talking over)")
    p.add_argument("--delay-ms", type=float, default=40.0)
    p.add_argument("--gain-db", type=float, default=-10.0)
    p.add_argument("--rt60-ms", type=float, default=250.0)
    p.add_argument("--follow-up-s", type=float, default=3.0)
    p.add_argument("--json", type=Path)
    p.add_argument("--load", type=int, default=0, help="keep this many cores busy meanwhile")
    p.add_argument("--workdir", type=Path, help="keep the daemons' logs here")
    p.add_argument("--report", type=Path, metavar="JSON", help="print the table of an earlier run's --json")
    args = p.parse_args(argv)
    if args.report:
        print(report(json.loads(args.report.read_text())))
        return 0
    work = args.workdir or Path(tempfile.mkdtemp(prefix="iris-rooms-"))
    results = []
    load = busy(args.load)
    try:
        for method in args.configs.split(","):
            t0 = time.monotonic()
            results.append(run_config(method, args, work))
            results[-1]["load"] = args.load
            print(f"{method}: {time.monotonic() - t0:.0f} s", flush=True)
            print(json.dumps(results[-1].get("self")), flush=True)
    finally:
        for proc in load:
            proc.terminate()
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
