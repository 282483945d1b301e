"""PipeWire's echo canceller for IRIS's own microphone and speaker (``audio.echo_cancel``).

Laptop speakers leak into the laptop's microphone: without help IRIS hears its own replies.
PipeWire ships an acoustic echo canceller (``libpipewire-module-echo-cancel``, WebRTC's
AEC through ``libspa-aec-webrtc``). :class:`EchoCanceller` runs that module in a child
``pipewire -c`` process — PipeWire's own way of running a filter as a client — so it lives
exactly as long as IRIS (the child gets SIGTERM when IRIS dies, however it dies) and
changes nothing in the user's session: no default device moves, nothing stays loaded.

The module makes two nodes: a sink IRIS plays into (the canceller's reference, passed on to
the default speaker) and a source IRIS records from (the default microphone with that
reference removed). IRIS's own streams are steered to them through ``PIPEWIRE_NODE``, which
PipeWire's ALSA plugin reads when a stream opens (:func:`pipewire_target`).

When the canceller cannot run — no PipeWire session, the module or the WebRTC library
missing, or a device configured that PipeWire does not route — :func:`unavailable` says why,
and IRIS falls back to its software guard (``voice/echoguard.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from iris_voice.config import AudioConfig

log = logging.getLogger(__name__)

SOURCE_NODE = "iris.echo-cancel.source"
"""The cancelled microphone IRIS records from."""
SINK_NODE = "iris.echo-cancel.sink"
"""The sink IRIS plays into: the canceller's reference, passed on to the speaker."""
MODULE_GLOBS = ("/usr/lib/*/pipewire-0.3/libpipewire-module-echo-cancel.so",
                "/usr/lib*/pipewire-0.3/libpipewire-module-echo-cancel.so")  # fmt: skip
WEBRTC_GLOBS = ("/usr/lib/*/spa-0.2/aec/libspa-aec-webrtc.so", "/usr/lib*/spa-0.2/aec/libspa-aec-webrtc.so")
ROUTABLE = ("", "pipewire", "default", "pulse")
"""Device settings that reach PipeWire's default devices, which the canceller sits between."""
ENABLE_HINT = (
    "install Debian's pipewire, libspa-0.2-modules (WebRTC echo canceller) and pipewire-alsa, run "
    'IRIS in a PipeWire session with audio.input_device and audio.output_device "" '
    '(the defaults), and set audio.echo_cancel = "pipewire"'
)
"""What to do when the canceller is not available (``iris doctor`` and the log say it)."""
AEC_HINT = 'install IRIS\'s requirements (pywebrtc-audio) and set audio.echo_cancel = "webrtc"'
"""What to do when the in-process canceller is not available."""

# node.latency 160/16000: WebRTC's AEC works on 10 ms blocks; fed in 10 ms steps it cancelled
# 9-13 dB of a room's echo here, against 5-7 dB at 32 ms (and it would not start at 5 ms).
_CLIENT_CONF = """\
context.properties = { log.level = 2 }
context.spa-libs = {
    audio.convert.* = audioconvert/libspa-audioconvert
    support.*       = support/libspa-support
}
context.modules = [
    { name = libpipewire-module-protocol-native }
    { name = libpipewire-module-client-node }
    { name = libpipewire-module-adapter }
%s
]
"""


def client_conf(module: str) -> str:
    """A ``pipewire -c`` configuration that runs ``module`` (one ``{ name = … args = … }``
    block) as a client of the user's PipeWire session: PipeWire's way of running a filter."""
    return _CLIENT_CONF % module


_MODULE = """\
    {{ name = libpipewire-module-echo-cancel
        args = {{
            library.name   = aec/libspa-aec-webrtc
            node.latency   = 160/16000
            audio.rate     = 16000
            audio.channels = 1
            audio.position = [ MONO ]
            capture.props  = {{ node.name = "iris.echo-cancel.capture" node.passive = true }}
            source.props   = {{ node.name = "{source}"
                                node.description = "IRIS microphone (echo cancelled)" }}
            sink.props     = {{ node.name = "{sink}" node.description = "IRIS speaker (echo reference)" }}
            playback.props = {{ node.name = "iris.echo-cancel.playback" }}
        }}
    }}"""


CANCELLING = ("webrtc", "pipewire-webrtc")
"""The methods that remove IRIS's voice from the microphone (not only guard against it)."""


@dataclass(frozen=True)
class EchoState:
    """What IRIS does about its own voice in the microphone."""

    method: str
    """``webrtc`` (AEC3 inside IRIS), ``pipewire-webrtc`` (PipeWire's canceller runs),
    ``guard`` (software guard only) or ``off``."""
    detail: str
    """Why, in one line (the reason the canceller is not running, when it is not)."""

    @property
    def cancelled(self) -> bool:
        """True when a canceller removes IRIS's voice from the microphone."""
        return self.method in CANCELLING


def unavailable(cfg: AudioConfig, env: dict[str, str] | None = None) -> str | None:
    """Why PipeWire's canceller cannot run for this configuration (None: it can)."""
    env = dict(os.environ if env is None else env)
    for key in ("input_device", "output_device"):
        if str(getattr(cfg, key)).strip().casefold() not in ROUTABLE:
            return f"audio.{key} = {getattr(cfg, key)!r} is not routed through PipeWire's default devices"
    if shutil.which("pipewire", path=env.get("PATH")) is None:
        return "the pipewire program is not installed"
    if not any(glob.glob(g) for g in MODULE_GLOBS):
        return "PipeWire's echo-cancel module (libpipewire-module-echo-cancel) is not installed"
    if not any(glob.glob(g) for g in WEBRTC_GLOBS):
        return "PipeWire's WebRTC echo canceller (libspa-aec-webrtc, in libspa-0.2-modules) is not installed"
    if not _session(env):
        return "no PipeWire session for this user (no pipewire-0 socket in XDG_RUNTIME_DIR)"
    return None


def _session(env: dict[str, str]) -> bool:
    remote = env.get("PIPEWIRE_REMOTE", "pipewire-0")
    if remote.startswith("/"):
        return Path(remote).exists()
    runtime = env.get("PIPEWIRE_RUNTIME_DIR") or env.get("XDG_RUNTIME_DIR")
    return bool(runtime) and (Path(runtime) / remote).exists()


def _die_with_parent() -> None:  # pragma: no cover  (runs in the child, before exec)
    """Have the kernel send SIGTERM to the canceller when IRIS exits, however it exits."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class EchoCanceller:
    """The canceller's child process: :meth:`start` (blocking: call it in a thread) and
    :meth:`stop`. ``state`` says what IRIS ended up with."""

    def __init__(self, cfg: AudioConfig, workdir: Path) -> None:
        self.cfg = cfg
        self.workdir = workdir
        self.state: EchoState | None = None
        """What :meth:`start` settled on (None before it ran)."""
        self._proc: subprocess.Popen | None = None

    def start(self, timeout: float = 5.0) -> EchoState:
        """Start PipeWire's canceller when configured and possible, or settle on the
        in-process one (``audio/aec.py``, wired by the caller); else the guard."""
        if self.cfg.echo_cancel == "off":
            self.state = EchoState("off", "audio.echo_cancel = off")
            return self.state
        if self.cfg.echo_cancel == "webrtc":
            from iris_voice.audio.aec import unavailable as aec_unavailable

            why = aec_unavailable()
            if why is None:
                self.state = EchoState("webrtc", "WebRTC's AEC3 inside IRIS, fed the samples it plays")
                log.info("echo cancellation: WebRTC's AEC3 in IRIS's own process")
            else:
                self.state = EchoState("guard", why)
                log.warning("echo cancellation is not available: %s; IRIS guards against its own "
                            "voice in software instead (to enable it: %s)", why, AEC_HINT)  # fmt: skip
            return self.state
        why = None if self.cfg.echo_cancel == "pipewire" else "audio.echo_cancel = guard"
        why = why or unavailable(self.cfg)
        if why is None:
            why = self._spawn(timeout)
        if why is None:
            self.state = EchoState("pipewire-webrtc", f"PipeWire's WebRTC canceller ({SOURCE_NODE})")
            log.info("echo cancellation: PipeWire's WebRTC canceller between IRIS and the default devices")
        else:
            self.state = EchoState("guard", why)
            if self.cfg.echo_cancel == "pipewire":  # said once, at start
                log.warning("echo cancellation is not available: %s; IRIS guards against its own "
                            "voice in software instead (to enable it: %s)", why, ENABLE_HINT)  # fmt: skip
        return self.state

    def _spawn(self, timeout: float) -> str | None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "echo-cancel.conf"
        conf.write_text(client_conf(_MODULE.format(source=SOURCE_NODE, sink=SINK_NODE)))
        logfile = self.workdir / "echo-cancel.log"
        with open(logfile, "wb") as out:
            self._proc = subprocess.Popen(
                ["pipewire", "-c", str(conf)], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                preexec_fn=_die_with_parent,  # noqa: PLW1509  (a prctl before exec, nothing else)
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = logfile.read_text(errors="replace").strip().splitlines()[-1:]
                self._proc = None
                return f"PipeWire's canceller exited at start ({' '.join(tail) or 'no message'})"
            if _nodes_exist():
                return None
            time.sleep(0.05)
        self.stop()
        return f"PipeWire's canceller made no nodes within {timeout:g} s"

    def stop(self) -> None:
        """End the canceller (IRIS's streams fall back to the default devices)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(3)

    def node(self, kind: str) -> str | None:
        """The node IRIS's ``kind`` ("input"/"output") stream should open on, or None."""
        if self.state is None or not self.state.cancelled:
            return None
        return SOURCE_NODE if kind == "input" else SINK_NODE


def _nodes_exist() -> bool:
    """Both of the canceller's nodes are in the graph (``pw-cli ls Node``; without pw-cli,
    a canceller that has run for a second without exiting is trusted to have made them)."""
    if shutil.which("pw-cli") is None:
        time.sleep(1.0)
        return True
    try:
        out = subprocess.run(["pw-cli", "ls", "Node"], capture_output=True, text=True, timeout=3).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return f'"{SOURCE_NODE}"' in out and f'"{SINK_NODE}"' in out


@contextlib.contextmanager
def pipewire_target(node: str | None) -> Iterator[None]:
    """While a PortAudio stream opens: point PipeWire's ALSA plugin at ``node`` (it reads
    ``PIPEWIRE_NODE`` in ``snd_pcm_open``). Hold ``PORTAUDIO_LOCK`` around it: the
    environment is the process's."""
    if node is None:
        yield
        return
    old = os.environ.get("PIPEWIRE_NODE")
    os.environ["PIPEWIRE_NODE"] = node
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PIPEWIRE_NODE", None)
        else:
            os.environ["PIPEWIRE_NODE"] = old
