"""A stock Wyoming satellite (``wyoming-satellite`` 1.4.1, the one Home Assistant pairs with)
for interoperability tests: installed by ``make peers`` into a venv of its own (it pins
``wyoming==1.5.4``), never a dependency of IRIS.

``start`` runs it on a loopback port with PipeWire's command-line tools on the test bed's
virtual devices: ``parec`` from ``iris_mic`` as its microphone, ``pacat`` into
``iris_speaker`` as its speaker. Its ``--*-command`` hooks append each event it reacts to
(``transcript``, ``timer-finished``, ``tts-played``, …) as one line to ``events.log``, so a
test can wait for what the satellite itself saw.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from tools.testbed.audiobed import MIC, SPEAKER

ROOT = Path(__file__).resolve().parents[2]
VERSION = "1.4.1"
VENDOR = ROOT.parent / "shared" / "vendor" / f"wyoming-satellite-{VERSION}.tar.gz"
"""Where the test bed keeps the source archive (beside the repository)."""
VENV = Path(os.environ.get("IRIS_CACHE", Path.home() / ".cache" / "iris")) / "peers" / "wyoming-satellite"
HOOKS = (
    "detection", "transcript", "stt-start", "stt-stop", "tts-start", "tts-stop", "tts-played",
    "error", "connected", "disconnected", "timer-started", "timer-finished", "streaming-start",
)  # fmt: skip


def python() -> Path:
    """The peer venv's interpreter."""
    return VENV / "bin" / "python"


def missing() -> str | None:
    """Why the peer cannot run here (None: it can)."""
    if not python().exists():
        where = (
            "its source archive is not beside the repository" if not VENDOR.exists() else "run `make peers`"
        )
        return f"the stock wyoming-satellite is not installed ({where}: {VENDOR})"
    return None


def install() -> int:
    """``make peers``: the satellite in its own venv (a no-op without the archive)."""
    if not VENDOR.exists():
        print(f"no {VENDOR}: the stock-satellite tests will be skipped", file=sys.stderr)
        return 0
    if not python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(python()), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, str(VENDOR)], check=True)
    return 0


def command(port: int, name: str, events: Path) -> list[str]:
    """The satellite's command line: streaming its microphone to its hub (no wake word of
    its own: the hub listens for it), playing what the hub sends."""
    mic = f"parec -d {MIC} --raw --rate=16000 --channels=1 --format=s16le --latency-msec=20"
    snd = f"pacat -d {SPEAKER} --raw --rate=22050 --channels=1 --format=s16le"
    argv = [
        str(python()), "-m", "wyoming_satellite", "--uri", f"tcp://127.0.0.1:{port}", "--name", name,
        "--no-zeroconf", "--mic-command", mic, "--snd-command", snd, "--snd-command-rate", "22050",
    ]  # fmt: skip
    for hook in HOOKS:
        line = f"{hook} " + "$(tr '\\n' ' ')"
        argv += [f"--{hook}-command", f"sh -c {shlex.quote(f'echo {line} >> {events}')}"]
    return argv


def start(port: int, name: str, env: dict[str, str], workdir: Path) -> tuple[subprocess.Popen, Path, Path]:
    """The satellite as a process; (process, its log, its events file)."""
    log, events = workdir / f"satellite-{name}.log", workdir / f"satellite-{name}-events.log"
    events.touch()
    with log.open("wb") as out:
        proc = subprocess.Popen(command(port, name, events), env=env, stdout=out, stderr=subprocess.STDOUT)
    return proc, log, events


if __name__ == "__main__":
    sys.exit(install())
