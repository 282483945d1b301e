"""Start the Ollama-protocol test server (``python -m tools.testbed.ollama_server``) as a subprocess.

Tests, the demo and the benchmarks share this: the server loads the GGUF, announces its
port on stdout as ``listening on http://HOST:PORT``, and is stopped with SIGTERM (SIGKILL
if it does not exit in time)::

    with start_server() as server:
        client = ollama.AsyncClient(host=server.url)
"""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.testbed.fetch_models import assemble, gguf_path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: the servers run as ``python -m tools.testbed.…`` from here."""
SERVER = "tools.testbed.ollama_server"
"""The test server's module."""
_LISTENING = re.compile(r"^listening on (http://\S+?:(\d+))$")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (prefer ``--port 0`` where the server picks)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class ServerHandle:
    """A running test server; a context manager that stops it on exit."""

    process: subprocess.Popen
    """The server process."""
    url: str
    """Base URL for ``ollama.AsyncClient(host=…)`` / ``OLLAMA_HOST``."""
    port: int
    """The TCP port it listens on."""
    output: list[str] = field(default_factory=list)
    """Lines the server printed on stdout after the announcement (drained so the pipe never fills)."""

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _pump(stream, lines: queue.Queue, sink: list[str]) -> None:
    # Runs for the server's lifetime: hands the first lines to start_server, keeps the rest.
    for line in stream:
        lines.put(line.rstrip("\n"))
        sink.append(line.rstrip("\n"))
    lines.put(None)


def start_server(
    model_path: str | os.PathLike | None = None, *, extra_args: Sequence[str] = (), timeout: float = 180
) -> ServerHandle:
    """Start the server on a free port and wait until it announces it is listening.

    ``model_path`` defaults to the GGUF assembled by ``tools.testbed.fetch_models``. Raises
    ``RuntimeError`` if the server exits or stays silent for ``timeout`` seconds.
    """
    if model_path is None:
        model_path = gguf_path()
    # From the repository root (``-m``), so a relative model path is made absolute first.
    model_path = os.path.abspath(model_path)
    cmd = [sys.executable, "-m", SERVER, "--model-path", model_path, "--port", "0", *extra_args]
    # stderr is inherited: the server's log (load time, per-request timings) lands in the caller's output.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1, cwd=ROOT)
    lines: queue.Queue[str | None] = queue.Queue()
    output: list[str] = []
    threading.Thread(target=_pump, args=(proc.stdout, lines, output), daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        while True:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                raise RuntimeError(f"test server exited with code {proc.wait()} before listening: {cmd}")
            if m := _LISTENING.match(line):
                output.clear()
                return ServerHandle(proc, m.group(1), int(m.group(2)), output)
    except BaseException as exc:
        proc.kill()
        proc.wait()
        if isinstance(exc, queue.Empty):
            raise RuntimeError(f"test server did not start within {timeout} s: {cmd}") from None
        raise


def start_openai_server(
    model_path: str | os.PathLike | None = None, *, alias: str = "planner", timeout: float = 180
) -> ServerHandle:
    """llama-cpp-python's own OpenAI-compatible server on the GGUF, on a free port.

    ``url`` is the API root (``http://127.0.0.1:PORT/v1``) and ``alias`` the model name
    it answers to. Ready once ``GET /v1/models`` answers; stopped like ``start_server``.
    """
    import httpx

    if model_path is None:
        model_path = gguf_path()
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--model_alias", alias,
        "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2", "--n_ctx", "4096",
        "--verbose", "False",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines: queue.Queue[str | None] = queue.Queue()
    output: list[str] = []
    threading.Thread(target=_pump, args=(proc.stdout, lines, output), daemon=True).start()
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with code {proc.returncode}: {output[-5:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                return ServerHandle(proc, url, port, output)
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    ServerHandle(proc, url, port, output).stop()
    raise RuntimeError(f"llama_cpp.server did not start within {timeout} s: {cmd}")


def ollama_answers(host: str) -> bool:
    """True when an Ollama(-protocol) server answers at ``host``."""
    import httpx

    try:
        return httpx.get(f"{host}/api/version", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def bench_target() -> tuple[str, str]:
    """The model and Ollama host a benchmark asks for: ``IRIS_BENCH_MODEL`` and ``OLLAMA_HOST``,
    else IRIS's own defaults."""
    from iris_voice.config import LlmConfig

    default = LlmConfig()
    return os.environ.get("IRIS_BENCH_MODEL", default.model), os.environ.get("OLLAMA_HOST", default.host)


def model_server(stack, model: str, host: str, label: str = "test server") -> str:
    """The Ollama server at ``host`` when one answers; otherwise the test server serving the
    packaged GGUF as ``model``, started on ``stack`` (an ExitStack). Its URL."""
    if ollama_answers(host):
        return host
    t0 = time.monotonic()
    url = stack.enter_context(start_server(assemble(), extra_args=["--model", model])).url
    print(f"{label} at {url} ready in {time.monotonic() - t0:.1f} s")
    return url


def scripted_server(stack) -> str:
    """The test server in ``--scripted`` mode (replies set by the caller over HTTP: a broken
    model on demand), started on ``stack`` (an ExitStack) and stopped with it. Its URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tools.testbed.ollama_server", "--scripted", "--port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    stack.callback(server.terminate)
    return server.stdout.readline().split()[-1]  # type: ignore[union-attr]
