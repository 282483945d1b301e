"""IRIS under hostile input: the worst event-loop lag, CPU, memory and what the user got.

The live daemon (``iris run``) on the PipeWire virtual devices, with a scripted model
server (``ollama_server --scripted``: a broken model on demand) and a misbehaving MCP
server, is fed each class of hostile input an adversarial pass found — a broken model's
replies, a hostile local user on the control socket and the command line, a broken MCP
server, a damaged timers database, a planted runtime directory, a bad config file.
For each class it prints:

- **loop lag**: the worst delay the daemon's own loop-lag monitor saw while the input
  was processed (``iris status``), and the worst latency of a ``ping`` sent over the
  control socket every 20 ms from outside (a second, independent view);
- **CPU**: the daemon's CPU seconds (``/proc/PID/stat``), **RSS** growth (MB);
- **outcome**: what the user heard or saw, and whether the daemon is still up.

    python -m tools.bench.abuse [--classes model,socket,...]      (make bench-abuse)

Goals (hardening issue): loop lag ≤ 100 ms p99 and ≤ 250 ms max under every class, no
traceback, no daemon exit.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from iris_voice.errors import IrisError
from tests.support.hostile import replies as hostile_text
from tools.bench.abuse_local import cli_classes, socket_classes
from tools.bench.stats import percentile
from tools.testbed.audiobed import VirtualAudio
from tools.testbed.servers import scripted_server
from tools.testbed.voicebed import LiveDaemon

PING_EVERY_S = 0.02


@dataclass
class Figures:
    """What one hostile class cost the daemon."""

    name: str
    lag_max_ms: float | None = None
    """Worst event-loop lag the daemon's own monitor saw during the class."""
    lag_p99_ms: float | None = None
    ping_max_ms: float = 0.0
    """Worst control-socket ping latency seen from outside."""
    ping_p99_ms: float = 0.0
    cpu_s: float = 0.0
    rss_mb: float = 0.0
    outcome: str = ""
    alive: bool = True
    notes: list[str] = field(default_factory=list)


def proc_stats(pid: int) -> tuple[float, float, int, int]:
    """(CPU seconds, RSS MB, open fds, threads) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024
    threads = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Threads:"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return cpu, rss, fds, threads


class PingProbe:
    """A thread that pings the control socket every 20 ms and keeps each round trip's latency."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.latencies: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ping-probe", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.settimeout(10)
                    s.connect(str(self.path))
                    s.sendall(b'{"cmd": "ping"}\n')
                    buf = b""
                    while not buf.endswith(b"\n"):
                        part = s.recv(4096)
                        if not part:
                            break
                        buf += part
                self.latencies.append((time.monotonic() - t0) * 1000)
            except OSError:
                self.failures += 1
            self._stop.wait(PING_EVERY_S)

    def __enter__(self) -> PingProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)


def _lag(daemon: LiveDaemon, seconds: float) -> tuple[float | None, float | None]:
    """(p99, max) of the daemon's own loop-lag monitor over the last ``seconds`` (None: no monitor)."""
    try:
        answer = daemon.request("status", timeout=30, lag_window_s=min(60.0, max(0.5, seconds)))
    except (IrisError, OSError):
        return None, None
    window = (answer.get("loop_lag_ms") or {}).get("window") or {}
    return window.get("p99"), window.get("max")


def measure(daemon: LiveDaemon, name: str, action: Callable[[], str]) -> Figures:
    """Run ``action`` (which returns what the user got) and take the figures around it."""
    assert daemon.proc is not None
    pid = daemon.proc.pid
    cpu0, rss0, _, _ = proc_stats(pid)
    fig = Figures(name)
    t0 = time.monotonic()
    with PingProbe(daemon.socket_path) as probe:
        try:
            fig.outcome = action()
        except Exception as exc:  # the bench reports; a broken class must not end the run
            fig.outcome = f"bench error: {type(exc).__name__}: {exc}"[:200]
        time.sleep(0.3)
    fig.alive = daemon.proc.poll() is None
    if fig.alive:
        cpu1, rss1, _, _ = proc_stats(pid)
        fig.cpu_s, fig.rss_mb = cpu1 - cpu0, rss1 - rss0
        fig.lag_p99_ms, fig.lag_max_ms = _lag(daemon, time.monotonic() - t0)
    if probe.latencies:
        fig.ping_max_ms = max(probe.latencies)
        fig.ping_p99_ms = percentile(probe.latencies, 99)
    if probe.failures:
        fig.notes.append(f"{probe.failures} pings failed")
    return fig


# -- the hostile classes ------------------------------------------------------------------------
def _script(url: str, *replies: dict[str, Any]) -> None:
    httpx.post(f"{url}/_script", json={"replies": list(replies)}, timeout=10).raise_for_status()


def _ask(daemon: LiveDaemon, text: str, timeout: float = 120) -> str:
    answer = daemon.request("ask", timeout=timeout, text=text)
    if not answer.get("ok"):
        return f"error: {answer.get('error')}"[:120]
    reply = answer["trace"]["reply"]
    return f"replied {len(reply)} chars: {reply[:60]!r}"


def model_classes(url: str) -> dict[str, Callable[[LiveDaemon], str]]:
    """A broken model's streamed replies (through the chat loop's splitter and call filter)."""

    def reply(text: str, chunk: int = 4) -> Callable[[LiveDaemon], str]:
        def run(daemon: LiveDaemon) -> str:
            _script(url, {"text": text, "chunk": chunk})
            return _ask(daemon, "tell me something")

        return run

    return {name: reply(text) for name, text in hostile_text.model_replies().items()}


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted reply that calls ``tool`` the way a Qwen model writes it."""
    call = {"name": tool, "arguments": arguments}
    return {"text": f"<tool_call>\n{json.dumps(call)}\n</tool_call>", "chunk": 64}


def mcp_classes(url: str) -> dict[str, Callable[[LiveDaemon], str]]:
    """A broken MCP server: a schema pattern that backtracks for ever, a 20 MB answer, and
    (configured at start, see ``MCP_SERVERS``) evil tool names and bloated definitions."""

    def execute(path: str, arguments: dict[str, Any]) -> Callable[[LiveDaemon], str]:
        def run(daemon: LiveDaemon) -> str:
            # A lazy server's tools are hidden from the prompt but callable by their path.
            call = _call(path, arguments)
            _script(url, call, {"text": "Done.", "chunk": 8})
            answer = daemon.request("ask", timeout=120, text="use the tool")
            if not answer.get("ok"):
                return f"error: {answer.get('error')}"[:120]
            calls = answer["trace"]["tool_calls"]
            result = calls[0]["result"] if calls else "(no call)"
            return f"tool result {len(result)} chars: {result[:70]!r}"

        return run

    def prompt(daemon: LiveDaemon) -> str:
        _script(url, {"text": "Fine.", "chunk": 8})
        daemon.request("ask", timeout=60, text="hello")
        seen = httpx.get(f"{url}/_script", timeout=10).json()["requests"][-1]
        return f"the model was shown {seen['tools']} tools, {seen['tool_chars']:,} characters of definitions"

    return {
        "mcp: pattern ^(a+)+$ on 30 chars": execute("test/flaky/match", {"text": "a" * 29 + "!"}),
        "mcp: a 20 MB answer": execute("test/flaky/huge", {"megabytes": 20}),
        "mcp: evil names, bloated schemas": prompt,
    }


def mcp_servers() -> list[dict[str, Any]]:
    """The daemon's MCP servers: the flaky test server (lazy) and a hostile one (eager)."""
    from tests.support.mcp_servers import flaky, hostile

    return [s.model_dump(exclude_defaults=True) for s in (flaky(), hostile("names", "schemas"))]


def timer_classes(url: str) -> dict[str, Callable[[LiveDaemon], str]]:
    """A damaged timers database: every bad row a foreign writer could leave, while IRIS runs;
    then a good timer must still fire (``timers: a damaged file at start`` is run last)."""
    from tests.support.hostile.timer_db import BAD_ROWS, insert_raw_row

    def bad_rows(daemon: LiveDaemon) -> str:
        db = daemon.workdir / "state" / "iris" / "timers.db"
        soon = time.time() + 1
        for overrides in BAD_ROWS.values():
            insert_raw_row(db, soon, **overrides)
        call = {"name": "set_timer", "arguments": {"duration": "2 seconds", "label": "good"}}
        _script(url, {"text": f"<tool_call>\n{json.dumps(call)}\n</tool_call>", "chunk": 32})
        # The words give the duration: IRIS runs only the calls they ground.
        set_reply = daemon.request("ask", timeout=60, text="set a good timer for 2 seconds")["trace"]["reply"]
        time.sleep(4)
        daemon.request("stop", timeout=10)  # dismiss it
        with sqlite3.connect(db) as conn:
            fired = conn.execute(
                "SELECT COUNT(*) FROM timers WHERE label = 'good' AND state = 'fired'"
            ).fetchone()
        return f"{len(BAD_ROWS)} bad rows inserted; {set_reply!r}; the good timer fired: {fired[0] == 1}"

    return {"timers: 17 bad rows while running": bad_rows}


def damaged_file_at_start(daemon: LiveDaemon) -> Figures:
    """Stop IRIS, leave garbage where its database was, start it again: the figures of the new daemon."""
    from tests.support.hostile.timer_db import write_random_bytes

    daemon.terminate()
    db = daemon.workdir / "state" / "iris" / "timers.db"
    for side in ("-wal", "-shm"):
        db.with_name(db.name + side).unlink(missing_ok=True)
    write_random_bytes(db)
    t0 = time.monotonic()
    fig = Figures("timers: a damaged file at start")
    try:
        daemon.start()
    except RuntimeError as exc:
        fig.alive, fig.outcome = False, f"did not start: {exc}"[:160]
        return fig
    ready = time.monotonic() - t0
    time.sleep(3)  # the announcement
    kept = sorted(p.name for p in db.parent.glob("timers.db.corrupt-*"))
    said = [line for line in daemon.log_tail(200).splitlines() if "damaged" in line.lower()]
    fig.lag_p99_ms, fig.lag_max_ms = _lag(daemon, 60)
    fig.outcome = f"READY in {ready:.1f} s; old file kept as {kept[:1]}; {len(said)} log lines about it"
    return fig


CLASSES = ("model", "mcp", "socket", "cli", "timers")


def report(rows: list[Figures]) -> None:
    """The table, and the goals beside it."""
    head = f"{'lag p99':>8} {'lag max':>8} {'ping max':>9} {'ping p99':>9} {'CPU s':>7} {'RSS MB':>7}"
    print(f"\n{'class':34} {head}  outcome")
    for r in rows:
        lag = f"{r.lag_max_ms:.0f}" if r.lag_max_ms is not None else "-"
        p99 = f"{r.lag_p99_ms:.0f}" if r.lag_p99_ms is not None else "-"
        up = "" if r.alive else "  DAEMON EXITED"
        notes = "  (" + "; ".join(r.notes) + ")" if r.notes else ""
        print(
            f"{r.name[:34]:34} {p99:>8} {lag:>8} {r.ping_max_ms:9.0f} {r.ping_p99_ms:9.0f} {r.cpu_s:7.2f}"
            f" {r.rss_mb:+7.1f}  {r.outcome}{up}{notes}"
        )
    lags = [r.lag_max_ms for r in rows if r.lag_max_ms is not None]
    p99s = [r.lag_p99_ms for r in rows if r.lag_p99_ms is not None]
    worst = max(lags) if lags else None
    worst_p99 = max(p99s) if p99s else None
    alive = all(r.alive for r in rows)
    ok = worst is not None and worst <= 250 and (worst_p99 or 0) <= 100 and alive
    print(f"\nworst loop lag: p99 {worst_p99} ms (goal ≤ 100), max {worst} ms (goal ≤ 250)")
    print(f"daemon up after every class: {alive}\n-> {'OK' if ok else 'MISS'}")


def main() -> int:
    """Run the classes against one daemon and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", default=",".join(CLASSES), help=f"subset of {','.join(CLASSES)}")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args()
    wanted = set(args.classes.split(","))
    rows: list[Figures] = []
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="iris-abuse-")))
        url = scripted_server(stack)
        bed = stack.enter_context(VirtualAudio())
        config: dict[str, dict[str, Any]] = {"intents": {"enabled": False}, "llm": {"warmup": True}}
        if "mcp" in wanted:
            config["mcp"] = {"start_wait_s": 10.0, "servers": mcp_servers()}
        daemon = stack.enter_context(LiveDaemon(bed, url, tmp / "daemon", config=config))
        time.sleep(1.0)
        plan: dict[str, Callable[[LiveDaemon], str]] = {}
        if "model" in wanted:
            plan.update(model_classes(url))
        if "mcp" in wanted:
            plan.update(mcp_classes(url))
        if "socket" in wanted:
            plan.update(socket_classes())
        if "cli" in wanted:
            plan.update(cli_classes(daemon.env()))
        if "timers" in wanted:
            plan.update(timer_classes(url))
        for name, action in plan.items():
            fig = measure(daemon, name, lambda action=action: action(daemon))
            rows.append(fig)
            print(f"  {name}: {fig.outcome}", flush=True)
            if not fig.alive:
                print(daemon.log_tail(20))
                daemon.start()
        if "timers" in wanted:
            rows.append(damaged_file_at_start(daemon))
            print(f"  {rows[-1].name}: {rows[-1].outcome}", flush=True)
        report(rows)
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
