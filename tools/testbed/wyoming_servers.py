"""Real ``wyoming-faster-whisper`` and ``wyoming-piper`` servers on loopback, with IRIS's
packaged models (nothing is fetched from a model hub).

How each is pointed at local files (read from their 3.8.1 / 2.5.2 sources):

- faster-whisper: ``--model`` is the CTranslate2 directory itself (``whisper_model_dir``),
  ``--stt-library faster-whisper`` (no per-language auto-pick) and ``--local-files-only``
  (``WhisperModel(..., local_files_only=True)``: a path is loaded as is, no hub check).
  Decoding as IRIS does: ``--beam-size 1 --compute-type int8 --language en``, no
  ``--vad-filter``. What still differs from IRIS's own decode: the server keeps Whisper's
  defaults ``condition_on_previous_text=True`` and timestamps on, and reads the audio
  back from a WAV file it wrote.
- piper: ``--voice`` is the path of the packaged ``.onnx`` (its ``.onnx.json`` beside
  it): a name that is not in the server's voices.json is looked up as a file, never
  downloaded; ``--data-dir`` is an empty scratch folder and ``--local-files-only`` is set.

``python -m tools.testbed.wyoming_servers`` starts both and prints their URIs until Ctrl-C.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tools.testbed.servers import free_port

READY_TIMEOUT_S = 90.0
"""Longest wait for a server to answer ``describe`` (loading the model on 2 busy cores)."""


@dataclass(eq=False)
class WyomingServer:
    """A running Wyoming server process."""

    name: str
    """"faster-whisper" or "piper"."""
    process: subprocess.Popen
    uri: str
    """``tcp://127.0.0.1:PORT``."""
    log: list[str] = field(default_factory=list)
    """What the server printed (drained so its pipe never fills)."""

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, then SIGKILL (a paused server is resumed first, so it can exit)."""
        _RUNNING.discard(self)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def pause(self) -> None:
        """SIGSTOP: the server keeps its port (connections are accepted by the kernel) but
        never answers — a hung server."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after ``pause``."""
        self.process.send_signal(signal.SIGCONT)


_RUNNING: set[WyomingServer] = set()
"""Servers started and not yet stopped: stopped at interpreter exit, whatever ended the run."""


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop(timeout=2.0)


def whisper_args(port: int, data_dir: Path, model: str = "tiny.en", threads: int = 2) -> list[str]:
    """The command line of ``wyoming-faster-whisper`` on IRIS's packaged ``model``."""
    from iris_voice.speech.model_files import whisper_model_dir

    return [
        sys.executable, "-m", "wyoming_faster_whisper", "--uri", f"tcp://127.0.0.1:{port}",
        "--model", str(whisper_model_dir(model)), "--stt-library", "faster-whisper",
        "--local-files-only", "--data-dir", str(data_dir), "--beam-size", "1",
        "--compute-type", "int8", "--cpu-threads", str(threads), "--language", "en",
    ]  # fmt: skip


def piper_args(port: int, data_dir: Path) -> list[str]:
    """The command line of ``wyoming-piper`` on IRIS's packaged voice."""
    from iris_voice.speech.model_files import piper_voice_files

    model, _config = piper_voice_files("")
    return [
        sys.executable, "-m", "wyoming_piper", "--uri", f"tcp://127.0.0.1:{port}",
        "--voice", str(model), "--data-dir", str(data_dir), "--local-files-only",
    ]  # fmt: skip


def _pump(stream, sink: list[str]) -> None:
    for line in stream:
        sink.append(line.rstrip("\n"))


def _describe_ok(uri: str) -> bool:
    """Does the server answer ``describe`` with ``info``? (Plain sockets: callable from
    inside or outside an event loop.)"""
    host, port = uri.removeprefix("tcp://").rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5.0) as sock:
            sock.sendall(json.dumps({"type": "describe"}).encode() + b"\n")
            header = sock.makefile("rb").readline()
    except OSError:
        return False
    try:
        return json.loads(header).get("type") == "info"
    except ValueError:
        return False


def start(name: str, args: list[str], uri: str) -> WyomingServer:
    """Start one server and wait until it answers ``describe`` with ``info``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # belt and braces: never reach a model hub
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )
    server = WyomingServer(name, process, uri)
    _RUNNING.add(server)
    threading.Thread(target=_pump, args=(process.stdout, server.log), daemon=True).start()
    try:
        _wait_ready(server)
    except BaseException:  # never leave a server behind (a failed or interrupted start)
        server.stop()
        raise
    return server


def _wait_ready(server: WyomingServer) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = "\n".join(server.log[-20:])
            raise RuntimeError(f"wyoming {server.name} exited ({server.process.returncode}):\n{tail}")
        if _describe_ok(server.uri):
            return
        time.sleep(0.3)
    raise RuntimeError(f"wyoming {server.name} did not answer describe within {READY_TIMEOUT_S:g} s")


@contextlib.contextmanager
def whisper_server(model: str = "tiny.en", threads: int = 2) -> Iterator[WyomingServer]:
    """``wyoming-faster-whisper`` on a free loopback port, stopped on exit."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="iris-wy-whisper-") as data:
        server = start(
            "faster-whisper", whisper_args(port, Path(data), model, threads), f"tcp://127.0.0.1:{port}"
        )
        try:
            yield server
        finally:
            server.stop()


@contextlib.contextmanager
def piper_server() -> Iterator[WyomingServer]:
    """``wyoming-piper`` on a free loopback port, stopped on exit."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="iris-wy-piper-") as data:
        server = start("piper", piper_args(port, Path(data)), f"tcp://127.0.0.1:{port}")
        try:
            yield server
        finally:
            server.stop()


@contextlib.contextmanager
def speech_servers() -> Iterator[tuple[WyomingServer, WyomingServer]]:
    """Both servers: (faster-whisper, piper)."""
    with whisper_server() as stt, piper_server() as tts:
        yield stt, tts


def main() -> int:
    """Run both servers until interrupted, printing where they listen."""
    with speech_servers() as (stt, tts):
        print(f"stt.uri = {stt.uri!r}  (wyoming-faster-whisper, tiny.en)")
        print(f"tts.uri = {tts.uri!r}  (wyoming-piper, en_US-joe-medium)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while stt.process.poll() is None and tts.process.poll() is None:
                time.sleep(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
