"""Run the real voice daemon (``iris run``) on the virtual audio bed, for tests and benchmarks.

``LiveDaemon`` starts ``python -m iris_voice.cli run`` as a child process with the bed's
environment (PipeWire in a private ``XDG_RUNTIME_DIR``), a private state directory and a
config file of its own, and waits for systemd's readiness message on a ``NOTIFY_SOCKET``
it owns — the same signal ``Type=notify`` units wait for. Commands go through the real
control socket::

    with VirtualAudio() as bed, LiveDaemon(bed, ollama_url, tmp) as iris:
        rec = bed.record_speaker()
        bed.play_into_mic(fixture("jarvis_time"))
        turn = iris.wait_turn()
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from iris_voice.app.control import request
from iris_voice.errors import IrisError

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.1
"""How often the waits ask ``iris status``. Each status probes the model server on the
daemon's loop: asked every 20 ms on two busy cores it competes with the listener it watches
(a wake word went unheard while it polled), so no faster than this."""


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return repr(value)


def write_config(path: Path, sections: dict[str, dict[str, Any]]) -> Path:
    """Write a small TOML config (section → key → value); a list of dicts under a key is an
    array of tables (``{"mcp": {"servers": [{…}]}}`` → ``[[mcp.servers]]``)."""
    lines = []
    for section, keys in sections.items():
        tables = {k: v for k, v in keys.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
        lines.append(f"[{section}]")
        lines.extend(f"{k} = {_toml(v)}" for k, v in keys.items() if k not in tables)
        for key, items in tables.items():
            for item in items:
                lines.append(f"[[{section}.{key}]]")
                lines.extend(f"{k} = {_toml(v)}" for k, v in item.items())
    path.write_text("\n".join(lines) + "\n")
    return path


class LiveDaemon:
    """The voice daemon as a child process on a ``VirtualAudio`` bed."""

    def __init__(
        self,
        bed: Any,
        ollama_url: str,
        workdir: Path,
        config: dict[str, dict[str, Any]] | None = None,
        log_name: str = "iris.log",
    ) -> None:
        self.bed = bed
        self.ollama_url = ollama_url
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        # No late cue unless a test asks for it: tests that hear the speaker time and
        # transcribe the reply, and on a loaded machine "One moment." would come first.
        sections: dict[str, dict[str, Any]] = {
            "llm": {"keep_alive": "-1"}, "audio": {"notifications": False}, "tts": {"late_cue_s": 0},
        }  # fmt: skip
        for name, keys in (config or {}).items():
            sections.setdefault(name, {}).update(keys)
        self.config_path = write_config(self.workdir / "config.toml", sections)
        self.log_path = self.workdir / log_name
        self.proc: subprocess.Popen | None = None
        self.notices: list[str] = []
        self._notify: socket.socket | None = None

    @property
    def socket_path(self) -> Path:
        """The daemon's control socket."""
        return Path(self.bed.env["XDG_RUNTIME_DIR"]) / "iris" / "control.sock"

    def env(self) -> dict[str, str]:
        """The daemon's environment: the bed's audio session, our model server and state dir."""
        env = self.bed.child_env()
        env.update(
            OLLAMA_HOST=self.ollama_url,
            XDG_STATE_HOME=str(self.workdir / "state"),
            IRIS_CONFIG=str(self.config_path),
            PYTHONUNBUFFERED="1",
        )
        if self._notify is not None:
            env["NOTIFY_SOCKET"] = self._notify.getsockname()
        return env

    def start(self, timeout: float = 180.0) -> LiveDaemon:
        """Start ``iris run`` and wait for READY=1; raises with the log tail if it never comes."""
        notify_path = self.workdir / "notify.sock"
        notify_path.unlink(missing_ok=True)
        if self._notify is not None:
            self._notify.close()
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._notify.bind(str(notify_path))
        self.notices = []
        log = self.log_path.open("ab")
        cmd = [sys.executable, "-m", "iris_voice.cli", "-v", "run"]
        self.proc = subprocess.Popen(cmd, env=self.env(), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        if not self.wait_notice("READY=1", timeout):
            code = self.proc.poll()
            self.kill()
            tail = self.log_tail()
            raise RuntimeError(f"iris run sent no READY=1 in {timeout:.0f} s (exit {code}):\n{tail}")
        return self

    def wait_notice(self, wanted: str, timeout: float) -> bool:
        """Wait for an sd_notify message containing ``wanted`` (e.g. ``STOPPING=1``)."""
        if self._notify is None:
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(wanted in n for n in self.notices):
                return True
            if self.proc is not None and self.proc.poll() is not None:
                self._notify.settimeout(0.05)
            else:
                self._notify.settimeout(min(0.5, max(0.01, deadline - time.monotonic())))
            try:
                self.notices.append(self._notify.recv(4096).decode())
            except (TimeoutError, BlockingIOError):
                if self.proc is not None and self.proc.poll() is not None:
                    return any(wanted in n for n in self.notices)
        return False

    def request(self, cmd: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        """One control-socket command."""
        return request(cmd, timeout=timeout, path=self.socket_path, **fields)

    def status(self) -> dict[str, Any]:
        """``iris status --json``."""
        return self.request("status")

    def wait_turn(self, after: int = 0, timeout: float = 120.0, idle: bool = True) -> dict[str, Any]:
        """Wait until turn number ``after`` + 1 is recorded (and IRIS is idle again); its trace."""
        deadline = time.monotonic() + timeout
        st: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                st = self.status()
            except IrisError:
                st = {}
            turns = st.get("turns") or []
            count = st.get("turn_count", len(turns))
            if count > after and (not idle or st.get("state") == "idle"):
                return turns[-1]
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"iris run exited with {self.proc.returncode}:\n{self.log_tail()}")
            time.sleep(POLL_S)
        raise TimeoutError(f"no turn {after + 1} within {timeout:.0f} s ({_brief(st)}):\n{self.log_tail()}")

    def wait_state(self, state: str, timeout: float = 60.0) -> None:
        """Wait until the pipeline reports ``state``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status().get("state") == state:
                return
            time.sleep(POLL_S)
        raise TimeoutError(f"IRIS never reached state {state!r}:\n{self.log_tail()}")

    def wait_idle(self, seconds: float, timeout: float = 120.0) -> None:
        """Wait until the pipeline has been idle for ``seconds`` in a row (what was queued to
        say has been said, a follow-up window has closed)."""
        since, deadline = None, time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status().get("state") == "idle":
                since = since or time.monotonic()
                if time.monotonic() - since >= seconds:
                    return
            else:
                since = None
            time.sleep(POLL_S)
        raise TimeoutError(
            f"IRIS was not idle for {seconds} s in a row within {timeout:.0f} s:\n{self.log_tail()}"
        )

    def terminate(self, timeout: float = 10.0) -> tuple[int | None, float]:
        """SIGTERM; the exit code and the seconds it took to exit."""
        if self.proc is None:
            return None, 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        return self.proc.returncode, time.monotonic() - t0

    def kill(self) -> None:
        """SIGKILL: a crash, as far as IRIS can tell."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def log_tail(self, lines: int = 40) -> str:
        """The daemon's last log lines."""
        if not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace")
        kept = [ln for ln in text.splitlines() if "HTTP Request:" not in ln]  # (iris run -vv)
        return "\n".join(kept[-lines:])

    def __enter__(self) -> LiveDaemon:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.terminate()
        if self._notify is not None:
            self._notify.close()


def _brief(status: dict[str, Any]) -> str:
    """What a timed-out wait prints of the daemon's status: where it stood and whether it heard."""
    keys = ("state", "turn_count", "microphone", "loop_lag_ms", "llm")
    return ", ".join(f"{k}={status.get(k)!r}" for k in keys if k in status) or "no status"
