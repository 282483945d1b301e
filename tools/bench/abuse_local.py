"""The hostile local user of ``tools.bench.abuse``: the control socket and the command line.

Each class is a callable taking the live daemon and returning what the user got; the
benchmark takes the loop lag, pings, CPU and memory around it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from iris_voice.errors import IrisError
from tests.support.hostile import local_user as hostile_local
from tools.bench.stats import p50
from tools.testbed.voicebed import ROOT, LiveDaemon

STATUS_EVERY_S = 0.1
"""How often the status class asks: a status-bar widget, or the test bed waiting for a turn."""


def _ping(daemon: LiveDaemon) -> str:
    try:
        answer = daemon.request("ping", timeout=10)
    except (IrisError, OSError) as exc:
        return f"failed ({exc})"[:80]
    return "answered" if answer.get("ok") else f"refused ({answer.get('error')})"[:80]


def socket_classes() -> dict[str, Callable[[LiveDaemon], str]]:
    """A hostile local user on the control socket."""

    def deep(daemon: LiveDaemon) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(str(daemon.socket_path))
            s.sendall(hostile_local.deep_json(100_000).encode() + b"\n")
            try:
                return "answered: " + s.recv(200).decode(errors="replace").strip()[:80]
            except TimeoutError:
                return "no answer within 30 s"

    def idle(daemon: LiveDaemon) -> str:
        held = []
        refused = 0
        for _ in range(1100):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(daemon.socket_path))
                held.append(s)
            except OSError:
                refused += 1
                s.close()
        during = _ping(daemon)
        for s in held:
            s.close()
        time.sleep(0.5)
        return (
            f"1,100 idle connections ({refused} refused at connect); a ping while they are held: "
            f"{during}; once they are gone: {_ping(daemon)}"
        )

    def status_polled(daemon: LiveDaemon) -> str:
        # ``iris status`` probes the model server each time: the probe must not hold the loop
        # (the listener shares it, and a loop that falls behind the microphone drops audio).
        def dropped() -> int | None:  # (None: a daemon that does not report it)
            return (daemon.status().get("microphone") or {}).get("dropped_blocks")

        before = dropped()
        took: list[float] = []
        end = time.monotonic() + 10
        while time.monotonic() < end:
            t0 = time.monotonic()
            daemon.status()
            took.append((time.monotonic() - t0) * 1000)
            time.sleep(max(0.0, STATUS_EVERY_S - (time.monotonic() - t0)))
        after = dropped()
        lost = "-" if before is None or after is None else after - before
        return (
            f"{len(took)} answered, median {p50(took):.0f} ms, "
            f"max {max(took):.0f} ms; microphone blocks dropped: {lost}"
        )

    return {
        "socket: 100k-deep JSON": deep,
        "socket: 1,100 idle connections": idle,
        "socket: iris status 10x/s for 10 s": status_polled,
    }


def cli_classes(env: dict[str, str]) -> dict[str, Callable[[LiveDaemon], str]]:
    """The command line fed hostile arguments and files."""

    def run(args: list[str], **extra: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "iris_voice.cli", *args],
            env={**env, **extra}, cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        traceback = "Traceback" in proc.stderr
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines() or [""]
        last = said[-1][:90]
        return f"exit {proc.returncode}{' WITH TRACEBACK' if traceback else ''}: {last}"

    def deep_args(daemon: LiveDaemon) -> str:
        return run(["tools", "call", "calculator", hostile_local.deep_json(30_000)])

    def bad_config(daemon: LiveDaemon) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "bad.toml"
            bad.write_bytes(hostile_local.invalid_utf8_toml())
            first = run(["check-config", str(bad)])
            bad.write_text(hostile_local.deep_toml(10_000))
            return f"invalid UTF-8: {first}; 10k-deep: {run(['check-config', str(bad)])}"

    return {"cli: 30k-deep JSON arguments": deep_args, "cli: broken config files": bad_config}
