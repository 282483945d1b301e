"""Host-side helpers of the .deb install test (``tools.deb.install_test``): the test
server on demand, the spoken question from the test bed, work done in the background
while the container runs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Below the container's own wait for llm.json (tools.deb.checks.voice.LLM_WAIT_S, 1500 s), so the
# container hears why instead of timing out.
LOCK_WAIT_S = 1200
LLM_LOCK = "/tmp/iris-llm.lock"  # the machine-wide lock every model-heavy job takes


class LlmOnDemand:
    """The Ollama-protocol test server, started when the container writes ``llm-request``
    into its test directory and stopped when it writes ``llm-done``. It runs under the
    machine's LLM lock, so it holds that lock only for the spoken turn. The answer goes
    to ``llm.json``: ``{"url": …}`` or ``{"error": …}``."""

    def __init__(self, test_dir: Path, log: Path) -> None:
        self.dir, self.log = test_dir, log
        self.proc: subprocess.Popen | None = None
        self.thread: threading.Thread | None = None
        self.asked_at = self.ready_at = self.stopped_at = 0.0

    def poll(self) -> None:
        """Act on the container's requests (called from the boot loop)."""
        if self.thread is None and (self.dir / "llm-request").exists():
            self.asked_at = time.monotonic()
            print(f"host: the container asks for the test server (waiting for {LLM_LOCK})", flush=True)
            self.thread = threading.Thread(target=self._start, name="llm-server", daemon=True)
            self.thread.start()
        if self.ready_at and not self.stopped_at and (self.dir / "llm-done").exists():
            self.stop()

    def _start(self) -> None:
        url, error = None, ""
        python = ROOT / ".venv" / "bin" / "python"
        if not python.exists():
            error = f"no {python} (run make setup)"
        else:
            # A bounded wait: a caller already holding the lock (``flock … .ci/run``) would
            # otherwise hang the install test until CI's own time limit.
            lock = ["flock", "--timeout", str(LOCK_WAIT_S), "--conflict-exit-code", "75", LLM_LOCK]
            cmd = [*lock, str(python), "-m", "tools.testbed.ollama_server", "--port", "0"]
            with self.log.open("wb") as log:
                proc = self.proc = subprocess.Popen(
                    cmd, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True, cwd=ROOT
                )
            for line in proc.stdout:
                if m := re.match(r"^listening on (http://\S+)$", line.strip()):
                    url = m.group(1)
                    break
            else:
                code = proc.wait()
                if code == 75:
                    error = f"{LLM_LOCK} still held after {LOCK_WAIT_S} s (is the caller holding it?)"
                else:
                    error = f"the test server exited ({code}): {self.log_tail()}"
        self.ready_at = time.monotonic()
        print(f"host: test server {url or error} after {self.ready_at - self.asked_at:.0f} s", flush=True)
        answer = self.dir / "llm.json"
        answer.with_suffix(".tmp").write_text(json.dumps({"url": url, "error": error}))
        answer.with_suffix(".tmp").chmod(0o644)
        answer.with_suffix(".tmp").replace(answer)

    def log_tail(self) -> str:
        """The server's last log lines."""
        return self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""

    def stop(self) -> None:
        """Stop the server (and a flock still waiting for the lock)."""
        self.stopped_at = self.stopped_at or time.monotonic()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            print("host: test server stopped", flush=True)
            self.proc = None

    def note(self) -> str:
        """How long the server was waited for and up."""
        if not self.asked_at:
            return "(never asked for)"
        wait = (self.ready_at or time.monotonic()) - self.asked_at
        up = (self.stopped_at or time.monotonic()) - (self.ready_at or time.monotonic())
        return f"(lock + model load {wait:.0f} s, then up {up:.0f} s, during the spoken turn)"


def spoken_question() -> tuple[Path, str]:
    """The test bed's spoken fixture ``jarvis_multiply`` (made by ``make setup``)."""
    python = ROOT / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"deb_install_test: no {python}: run make setup")
    code = (
        "import json; from tools.testbed.fixtures import ensure_fixtures, fixture, load_manifest; "
        "ensure_fixtures(); "
        "print(json.dumps([str(fixture('jarvis_multiply')), load_manifest()['jarvis_multiply']['text']]))"
    )
    out = subprocess.run([str(python), "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    path, text = json.loads(out.stdout.strip().splitlines()[-1])
    return Path(path), text


class Background:
    """A function run in a thread while the container runs; its result, error and time."""

    def __init__(self, fn) -> None:
        self.result, self.error, self.seconds = None, None, 0.0
        self._fn = fn
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        start = time.monotonic()
        try:
            self.result = self._fn()
        except Exception as exc:  # reported by the main thread
            self.error = exc
        self.seconds = time.monotonic() - start

    def join(self) -> None:
        """Wait for it; re-raise its error."""
        self._thread.join()
        if self.error is not None:
            raise self.error
