"""Echo cancellation for IRIS's own streams, the same for the desktop daemon and a satellite.

With ``audio.echo_cancel = "webrtc"`` AEC3 runs inside IRIS (``audio.aec``): the speaker
hands it every block it writes and the microphone's frames go through it. With
``"pipewire"`` PipeWire's canceller (``audio.echo``) runs between IRIS's streams and the
devices. Where neither can run the software guard (``voice.echoguard``) does what it can,
and says why once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from iris_voice.app.runtime import runtime_dir
from iris_voice.audio.aec import InProcessCanceller
from iris_voice.audio.echo import EchoCanceller
from iris_voice.config import AudioConfig
from iris_voice.voice.echoguard import EchoGuard

log = logging.getLogger(__name__)


def echo_canceller(
    cfg: AudioConfig, source: Any, sink: Any, name: str = "echo-cancel"
) -> EchoCanceller | None:
    """A canceller for the real microphone and speaker (None for a test's fake devices:
    no room to echo in); ``name`` is its directory under IRIS's runtime directory."""
    real = all(hasattr(stage, "pipewire_node") for stage in (source, sink))
    return EchoCanceller(cfg, runtime_dir() / name) if real else None


async def start_echo_cancel(
    cfg: AudioConfig, echo: EchoCanceller, guard: EchoGuard, source: Any, sink: Any
) -> None:
    """Start the canceller (or settle for the guard) before the devices open, and point
    the streams at its nodes; the guard learns what runs and hears the speaker's level."""
    state = await asyncio.to_thread(echo.start)
    guard.use(state.method, state.detail)
    guard.reference = sink.reference_level
    if state.method == "webrtc":
        canceller = InProcessCanceller()
        sink.echo_reference = canceller.reference
        source.canceller = canceller
        guard.converged = lambda: canceller.converged
        guard.measured = lambda: {
            "erle_db": None if canceller.erle_db is None else round(canceller.erle_db, 1),
            "ran_dry": canceller.reference.ran_dry,
            "trimmed": canceller.reference.trimmed,
            "timelines": canceller.reference.timelines,
        }
    source.pipewire_node = echo.node("input")
    sink.pipewire_node = echo.node("output")
    if cfg.barge_in == "voice" and not guard.voice_barge_in:
        log.warning("audio.barge_in = voice needs echo cancellation (%s): the wake word "
                    "interrupts IRIS instead", state.detail)  # fmt: skip


def close_devices(source: Any, sink: Any, echo: EchoCanceller | None) -> None:
    """Close the microphone and the speaker, then stop the echo canceller (each may already
    be closed or stopped)."""
    source.close()
    sink.close()
    if echo is not None:
        echo.stop()
