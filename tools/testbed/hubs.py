"""``iris serve`` for tests and benchmarks: in-process around chosen parts, or as a process.

``start_hub`` runs IRIS's own Wyoming server (``wyoming.server.WyomingService``) on a free
loopback port around the ``ServicePart``s a test built (fakes or real engines);
``hub_process`` starts a real headless ``iris serve`` and returns once it answers. Each
hub process gets a runtime directory of its own (its instance lock and control socket),
so several hubs, or a hub beside a satellite, can run on one machine.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from iris_voice.config import ServeConfig
from iris_voice.wyoming.part import ServicePart
from iris_voice.wyoming.server import WyomingService
from tools.testbed.servers import free_port

ROOT = Path(__file__).resolve().parents[2]


async def start_hub(
    parts: Sequence[ServicePart], host: str = "127.0.0.1", port: int = 0, token: str = ""
) -> tuple[WyomingService, int]:
    """Serve ``parts`` on ``host:port`` (0: a free port); the started service and its port."""
    port = port or free_port()
    service = WyomingService(ServeConfig(uri=f"tcp://{host}:{port}"), parts, token)
    await service.start()
    return service, port


def hub_process(
    config: Path, env: dict[str, str], log: Path, timeout: float = 240.0, tree: Path = ROOT
) -> tuple[subprocess.Popen, int]:
    """``iris --config CONFIG -v serve`` on a free loopback port, its output in ``log``;
    returns once its speech models are loaded and it listens (raises with the log's tail
    when it exits or times out first). ``tree``: the checkout whose IRIS runs (another
    revision's, for a before and after in one run)."""
    port = free_port()
    run = log.parent / f"{log.stem}-run"
    run.mkdir(mode=0o700, exist_ok=True)
    env = {**env, "XDG_RUNTIME_DIR": str(run), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "iris_voice.cli", "--config", str(config), "-v",
           "serve", "--uri", f"tcp://127.0.0.1:{port}"]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=tree, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if f"serving tcp://127.0.0.1:{port}" in text:
            return proc, port
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    stop_process(proc)
    raise RuntimeError(
        f"iris serve did not start (exit {proc.returncode}):\n{log.read_text(errors='replace')[-3000:]}"
    )


def stop_process(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
