#!/usr/bin/env python3
"""Stand-in for ``iris run`` in the .deb install test while a build has no voice daemon.

The install test starts IRIS's real systemd units with this script as their ExecStart
(a runtime drop-in), to prove what the units give the daemon before the daemon exists:
the user's ``$XDG_RUNTIME_DIR`` from the PAM session, the user's PipeWire (native and
Pulse sockets) reachable through the hardening, and — when the venv has them — PortAudio
capturing from PipeWire (sounddevice) and the packaged models loading and running
(Piper speaks a sentence, faster-whisper hears it) under the units' seccomp filter and
sandbox. Then the service contract: a lock in
``$XDG_RUNTIME_DIR/iris/lock`` (a second instance exits 75), a 0600 control socket,
``READY=1`` to ``$NOTIFY_SOCKET``, ``STOPPING=1`` and exit 0 on SIGTERM. What it saw is
written to ``$XDG_RUNTIME_DIR/iris/probe.json`` for the test to check. It needs only the
standard library; the audio and model checks report "skipped" without their packages.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys

EXIT_ALREADY_RUNNING = 75


def notify(message: str) -> None:
    """Send a state change to systemd (sd_notify), if started by it."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.connect(address)
        s.sendall(message.encode())


def _status_field(name: str) -> str:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return ""


def _pipewire(runtime: str) -> str:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(os.path.join(runtime, "pipewire-0"))
        return "ok"
    except OSError as exc:
        return f"error: {exc}"


def _pulse_server() -> str:
    try:
        out = subprocess.run(["pactl", "info"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"error: {exc}"
    for line in out.stdout.splitlines():
        if line.startswith("Server Name:"):
            return line.split(":", 1)[1].strip()
    return f"error: pactl exited {out.returncode}: {out.stderr.strip()}"


def _capture() -> str:
    """Half a second from the default input through PortAudio (ALSA → PipeWire)."""
    try:
        import sounddevice as sd
    except ImportError:
        return "skipped: sounddevice is not in the venv"
    try:
        names = [d["name"] for d in sd.query_devices()]
        frames = []
        with sd.InputStream(
            samplerate=16000, channels=1, dtype="int16", callback=lambda d, *_: frames.append(len(d))
        ):
            sd.sleep(500)
        return f"ok: {sum(frames)} frames; devices {names}"
    except Exception as exc:  # any failure is the finding
        return f"error: {type(exc).__name__}: {exc}"


def _models() -> str:
    """The packaged Piper voice speaks a sentence; the packaged Whisper tiny.en hears it."""
    try:
        import numpy as np
        from faster_whisper import WhisperModel
        from piper import PiperVoice
    except ImportError:
        return "skipped: piper-tts / faster-whisper are not in the venv"
    try:
        onnx = "/usr/share/iris/models/piper/en_US-joe-medium.onnx"
        chunks = list(
            PiperVoice.load(onnx, config_path=onnx + ".json").synthesize("Set a timer for ten minutes.")
        )
        audio = np.concatenate([c.audio_float_array for c in chunks])
        step = chunks[0].sample_rate / 16000
        audio = np.interp(np.arange(0, len(audio), step), np.arange(len(audio)), audio).astype(np.float32)
        model = WhisperModel(
            "/usr/share/iris/models/whisper-tiny.en", device="cpu", compute_type="int8", cpu_threads=2
        )
        segments, _ = model.transcribe(audio, language="en", beam_size=1)
        return "ok: heard " + repr(" ".join(s.text.strip() for s in segments))
    except Exception as exc:  # any failure is the finding
        return f"error: {type(exc).__name__}: {exc}"


def main() -> int:
    """Check the environment, hold the lock, report ready, wait for SIGTERM."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if not runtime or not os.path.isdir(runtime):
        print(f"probe: no usable XDG_RUNTIME_DIR ({runtime!r})", file=sys.stderr)
        return 1
    iris_dir = os.path.join(runtime, "iris")
    os.makedirs(iris_dir, mode=0o700, exist_ok=True)
    lock = open(os.path.join(iris_dir, "lock"), "w")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("iris: IRIS already runs for this user (lock held); not starting a second one", file=sys.stderr)
        return EXIT_ALREADY_RUNNING
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    control = os.path.join(iris_dir, "control.sock")
    if os.path.exists(control):
        os.unlink(control)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(control)
    os.chmod(control, 0o600)
    server.listen()
    facts = {
        "uid": os.getuid(),
        "user": os.environ.get("USER", ""),
        "home": os.environ.get("HOME", ""),
        "xdg_runtime_dir": runtime,
        "dbus_session_bus_address": os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""),
        "pipewire": _pipewire(runtime),
        "pulse_server": _pulse_server(),
        # IRIS_PROBE_NO_MEDIA: the unit test of the contract, on a machine without audio.
        "capture": "skipped: IRIS_PROBE_NO_MEDIA" if os.environ.get("IRIS_PROBE_NO_MEDIA") else _capture(),
        "models": "skipped: IRIS_PROBE_NO_MEDIA" if os.environ.get("IRIS_PROBE_NO_MEDIA") else _models(),
        "no_new_privs": _status_field("NoNewPrivs"),
        "seccomp": _status_field("Seccomp"),
        "cap_eff": _status_field("CapEff"),
        "python": sys.executable,
    }
    with open(os.path.join(iris_dir, "probe.json"), "w") as f:
        json.dump(facts, f)
    print("probe: " + " ".join(f"{k}={v}" for k, v in facts.items()), file=sys.stderr, flush=True)
    notify("READY=1\nSTATUS=probe: ready")
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    notify("STOPPING=1")
    server.close()
    os.unlink(control)
    print("probe: stopping on SIGTERM", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
