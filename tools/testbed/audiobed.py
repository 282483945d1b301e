"""A private PipeWire session with virtual devices, for tests and benchmarks on a machine
with no sound hardware.

``VirtualAudio`` starts its own session bus, ``pipewire``, ``wireplumber`` and
``pipewire-pulse`` in a fresh ``XDG_RUNTIME_DIR`` (mode 0700), then creates:

- ``iris_speaker``: a null sink, the default output; what IRIS says can be recorded from
  ``iris_speaker.monitor`` with :meth:`VirtualAudio.record_speaker`.
- ``iris_micfeed``: a null sink that :meth:`VirtualAudio.play_into_mic` plays into, and
  ``iris_mic``: a remap source of ``iris_micfeed.monitor``, the default input.

All three are mono so a test signal comes back at unity gain (a stereo chain would up-
and down-mix it, +3 dB). Startup takes ~0.5 s here. Nothing is shared with another
session: wireplumber's state (remembered defaults and volumes) goes to the temp dir too.

It runs as root: PipeWire 0.3.65, wireplumber 0.4.13 and pipewire-pulse on bookworm start
as root without complaint once they have a session bus and an ``XDG_RUNTIME_DIR`` (the
bus is what wireplumber needs: without one it exits "Cannot autolaunch D-Bus"), so no
dedicated test user is needed. A process reaches the devices with :attr:`VirtualAudio.env`
in its environment; PortAudio reads it when it initialises, so an in-process user calls
:meth:`VirtualAudio.use_in_process` (re-initialises sounddevice) or starts a subprocess
with :meth:`VirtualAudio.child_env`::

    with VirtualAudio() as bed:
        bed.use_in_process()
        rec = bed.record_speaker("out.wav")
        bed.play_into_mic("question.wav")
        samples = rec.stop()

Command line: ``python -m tools.testbed.audiobed [-- CMD ...]`` runs CMD (default: a shell) inside
a bed and prints the environment it needs.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.testbed.recording import SpeakerRecording, terminate

APT_PACKAGES = (
    "pipewire pipewire-pulse wireplumber pipewire-alsa pulseaudio-utils dbus-user-session libportaudio2 sox"
).split()
"""What the bed needs from Debian (``make audio-deps`` installs them)."""
PROGRAMS = ("dbus-daemon", "pipewire", "wireplumber", "pipewire-pulse", "pactl", "paplay", "parec")
SPEAKER = "iris_speaker"
MIC_FEED = "iris_micfeed"
MIC = "iris_mic"
_PREFIX = "iris-audio-"
_PIPEWIRE_ALSA_CONF = Path("/usr/share/alsa/alsa.conf.d/50-pipewire.conf")


def missing() -> list[str]:
    """What is missing for a bed on this machine ([] when it can start)."""
    gone = [p for p in PROGRAMS if shutil.which(p) is None]
    if not _PIPEWIRE_ALSA_CONF.exists():
        gone.append("pipewire-alsa")
    try:
        import sounddevice  # noqa: F401  (loads libportaudio)
    except (ImportError, OSError) as exc:
        gone.append(f"sounddevice/libportaudio2 ({exc})")
    return gone


class AudioBedError(RuntimeError):
    """The bed could not start (the message carries the daemons' log tails)."""


class VirtualAudio:
    """A private PipeWire session with ``iris_speaker``, ``iris_micfeed`` and ``iris_mic``."""

    def __init__(self, start_timeout: float = 15.0) -> None:
        self.start_timeout = start_timeout
        self.dir: Path | None = None
        self.startup_seconds = 0.0
        """How long :meth:`start` took (bus, daemons, devices and defaults)."""
        self._bus: subprocess.Popen | None = None
        self._daemons: list[subprocess.Popen] = []
        self._children: list[subprocess.Popen] = []
        self._old_env: dict[str, str | None] | None = None

    # ---- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> VirtualAudio:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def env(self) -> dict[str, str]:
        """The variables a process needs to reach the virtual devices."""
        assert self.dir is not None, "VirtualAudio is not started"
        return {
            "XDG_RUNTIME_DIR": str(self.dir),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.dir}/bus",
            "PULSE_SERVER": f"unix:{self.dir}/pulse/native",
        }

    def child_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default ``os.environ``) with :attr:`env` applied, for a subprocess."""
        env = dict(os.environ if base is None else base)
        for key in ("PIPEWIRE_REMOTE", "PIPEWIRE_RUNTIME_DIR", "PULSE_RUNTIME_PATH"):
            env.pop(key, None)
        env.update(self.env)
        return env

    def start(self) -> VirtualAudio:
        """Bring the session up; raises AudioBedError (with the logs) when it cannot."""
        gone = missing()
        if gone:
            raise AudioBedError(f"missing: {', '.join(gone)} (run `make audio-deps`)")
        t0 = time.monotonic()
        reap_stale()
        self.dir = Path(tempfile.mkdtemp(prefix=_PREFIX))
        self.dir.chmod(0o700)
        (self.dir / "owner").write_text(str(os.getpid()))
        (self.dir / "state").mkdir()
        (self.dir / "config").mkdir()
        atexit.register(self.stop)
        try:
            self._bus = self._spawn(
                "dbus",
                [
                    "dbus-daemon",
                    "--session",
                    "--nofork",
                    "--nopidfile",
                    f"--address=unix:path={self.dir}/bus",
                ],
            )
            self._wait(lambda: (self.dir / "bus").exists(), "the session bus socket")
            self.start_pipewire()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def start_pipewire(self) -> None:
        """Start pipewire, wireplumber, pipewire-pulse and create the devices (again)."""
        assert self.dir is not None
        self._daemons.append(self._spawn("pipewire", ["pipewire"]))
        self._wait(lambda: (self.dir / "pipewire-0").exists(), "the pipewire socket")
        self._daemons.append(self._spawn("wireplumber", ["wireplumber"]))
        self._daemons.append(self._spawn("pipewire-pulse", ["pipewire-pulse"]))
        self._wait(lambda: self._try_pactl("info"), "pipewire-pulse")
        self.pactl("load-module", "module-null-sink", f"sink_name={SPEAKER}", "channels=1")
        self.pactl("load-module", "module-null-sink", f"sink_name={MIC_FEED}", "channels=1")
        self.pactl(
            "load-module",
            "module-remap-source",
            f"master={MIC_FEED}.monitor",
            f"source_name={MIC}",
            "channels=1",
        )
        # set-default-* fails until wireplumber has published its metadata: retry.
        self._wait(
            lambda: (
                self._try_pactl("set-default-sink", SPEAKER)
                and self._try_pactl("set-default-source", MIC)
                and self.pactl("get-default-sink") == SPEAKER
                and self.pactl("get-default-source") == MIC
            ),
            "wireplumber (default devices)",
        )

    def stop_pipewire(self) -> None:
        """Kill the three PipeWire daemons (the bus stays): every device vanishes."""
        for proc in reversed(self._daemons):
            terminate(proc)
        self._daemons.clear()
        if self.dir is not None:
            for name in ("pipewire-0", "pipewire-0.lock"):
                (self.dir / name).unlink(missing_ok=True)

    def stop(self) -> None:
        """Kill every process the bed started and remove its directory (idempotent)."""
        for proc in self._children:
            terminate(proc)
        self._children.clear()
        self.stop_pipewire()
        if self._bus is not None:
            terminate(self._bus)
            self._bus = None
        self.restore_process_env()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        atexit.unregister(self.stop)

    # ---- in-process use --------------------------------------------------------------

    def use_in_process(self) -> None:
        """Point this process (``os.environ``) at the bed and re-initialise PortAudio, which
        reads the environment only when it initialises. Undone by :meth:`stop`."""
        if self._old_env is None:
            self._old_env = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        _reinit_portaudio()

    def restore_process_env(self) -> None:
        """Undo :meth:`use_in_process` (and re-initialise PortAudio without the bed)."""
        if self._old_env is None:
            return
        for key, value in self._old_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._old_env = None
        _reinit_portaudio()

    # ---- devices ---------------------------------------------------------------------

    def pactl(self, *args: str) -> str:
        """Run ``pactl ARGS`` against the bed; its stdout, stripped (raises on failure)."""
        out = subprocess.run(
            ["pactl", *args], env=self.child_env(), capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip()

    def play_into_mic(self, wav: str | os.PathLike[str], wait: bool = True) -> subprocess.Popen:
        """Play a WAV into the virtual microphone; with ``wait`` returns when it has played,
        otherwise at once (``.wait()`` on the returned process)."""
        proc = subprocess.Popen(["paplay", "-d", MIC_FEED, os.fspath(wav)], env=self.child_env())
        self._children.append(proc)
        if wait:
            if proc.wait(timeout=300) != 0:
                raise AudioBedError(f"paplay {wav} exited {proc.returncode}")
        return proc

    def record_speaker(
        self, path: str | os.PathLike[str] | None = None, rate: int = 16000
    ) -> SpeakerRecording:
        """Start recording what reaches ``iris_speaker`` (mono int16 at ``rate``); returns
        once the recorder delivers audio. ``.stop()`` ends it and writes ``path`` (WAV)."""
        proc = subprocess.Popen(
            ["parec", "-d", f"{SPEAKER}.monitor", "--raw", f"--rate={rate}", "--channels=1",
             "--format=s16le", "--latency-msec=10"],
            env=self.child_env(), stdout=subprocess.PIPE, bufsize=0,
        )  # fmt: skip
        self._children.append(proc)
        rec = SpeakerRecording(proc, rate, None if path is None else Path(path))
        if not rec.ready.wait(60):  # generous: a busy machine starts parec late, not never
            rec.stop()
            raise AudioBedError("parec delivered no audio within 60 s")
        return rec

    # ---- helpers ---------------------------------------------------------------------

    def _spawn(self, name: str, argv: Sequence[str]) -> subprocess.Popen:
        assert self.dir is not None
        env = self.child_env()
        # wireplumber remembers defaults and volumes under XDG_STATE_HOME: keep them private.
        env["XDG_STATE_HOME"] = str(self.dir / "state")
        env["XDG_CONFIG_HOME"] = str(self.dir / "config")
        env.pop("PULSE_SERVER", None)
        log = open(self.dir / f"{name}.log", "ab")  # noqa: SIM115  (the child owns it)
        try:
            proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.dir,
                start_new_session=True,
            )
        finally:
            log.close()
        with open(self.dir / "pids", "a") as f:  # for reap_stale() should this process die abruptly
            f.write(f"{proc.pid}\n")
        return proc

    def _try_pactl(self, *args: str) -> bool:
        try:
            self.pactl(*args)
            return True
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            return False

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while not ready():
            dead = [p for p in [self._bus, *self._daemons] if p is not None and p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"{dead[0].args[0]} exited {dead[0].returncode}" if dead else "timed out"
                raise AudioBedError(f"waiting for {what}: {why}\n{self.logs()}")
            time.sleep(0.05)

    def logs(self) -> str:
        """The last lines each daemon logged (for error messages)."""
        if self.dir is None:
            return ""
        parts = []
        for log in sorted(self.dir.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-8:]
            parts.append(f"--- {log.name}\n" + "\n".join(lines))
        return "\n".join(parts)


def reap_stale() -> None:
    """Kill the daemons of beds whose owning process died without stopping them (a test
    run killed by a timeout), and remove their directories. A daemon is killed only if
    it still runs with that bed's XDG_RUNTIME_DIR."""
    for owner in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*/owner"):
        bed = owner.parent
        try:
            os.kill(int(owner.read_text()), 0)
            continue  # its owner is alive
        except ProcessLookupError:
            pass
        except (ValueError, OSError):
            continue
        pids = bed / "pids"
        for line in pids.read_text().split() if pids.exists() else []:
            try:
                environ = Path(f"/proc/{int(line)}/environ").read_bytes().split(b"\0")
                if f"XDG_RUNTIME_DIR={bed}".encode() in environ:
                    os.kill(int(line), signal.SIGKILL)
            except (ValueError, OSError):
                continue
        shutil.rmtree(bed, ignore_errors=True)


def _reinit_portaudio() -> None:
    """Make sounddevice's PortAudio re-read the environment and the device list (this
    closes every open stream of the process)."""
    try:
        import sounddevice as sd
    except (ImportError, OSError):
        return
    sd._terminate()
    sd._initialize()


def main(argv: list[str] | None = None) -> int:
    """``python -m tools.testbed.audiobed [-- CMD ...]``: run CMD (default ``$SHELL``) inside a bed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: stop the bed on SIGTERM too
    if argv[:1] == ["--"]:
        argv = argv[1:]
    with VirtualAudio() as bed:
        print(f"virtual audio up in {bed.startup_seconds:.2f} s", file=sys.stderr)
        for key, value in bed.env.items():
            print(f"export {key}={value}", file=sys.stderr)
        cmd = argv or [os.environ.get("SHELL", "/bin/sh")]
        return subprocess.call(cmd, env=bed.child_env())


if __name__ == "__main__":
    raise SystemExit(main())
