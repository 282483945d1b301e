"""``iris satellite``: the satellite process — its engines, its echo handling, signals."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from iris_voice.app.assembly import build_engines, build_listener
from iris_voice.app.echo_setup import echo_canceller, start_echo_cancel
from iris_voice.audio.protocols import AudioSink, AudioSource
from iris_voice.config import Config
from iris_voice.events import EventBus
from iris_voice.voice.echoguard import EchoGuard
from iris_voice.wyoming.satellite import SatelliteClient, satellite_name

log = logging.getLogger(__name__)


async def run_satellite(
    cfg: Config,
    hub: str | None = None,
    name: str | None = None,
    source: AudioSource | None = None,
    listen: str | None = None,
    sink: AudioSink | None = None,
) -> int:
    """``iris satellite``: run until SIGTERM/SIGINT; the exit code."""
    import signal

    from iris_voice.errors import ConfigError

    if listen:
        cfg = cfg.model_copy(update={"satellite": cfg.satellite.model_validate(
            {**cfg.satellite.model_dump(), "listen": listen})})  # fmt: skip
    hub = "" if cfg.satellite.listen and not hub else (hub or cfg.satellite.hub)
    if not hub and not cfg.satellite.listen:
        raise ConfigError([
            "satellite.hub: is required (or iris satellite --hub tcp://HOST:PORT), or satellite.listen "
            "(or --listen tcp://HOST:PORT) to wait for the hub",
        ])  # fmt: skip
    bus = EventBus()
    engines = build_engines(cfg, listen_only=True)
    listener = build_listener(cfg, engines, bus.publish)
    # Its own speaker is in the room: no follow-up question from the answer's echo tail.
    listener.guard = EchoGuard(cfg.wake.model)
    off = cfg.audio.echo_cancel == "off"
    listener.guard.use("off" if off else "guard", "audio.echo_cancel" if off else "a satellite's guard")
    if source is None or sink is None:
        from iris_voice.audio.capture import MicCapture
        from iris_voice.audio.playback import SpeakerSink

        source = source or MicCapture(cfg.audio, publish=bus.publish)
        sink = sink or SpeakerSink(cfg.audio, publish=bus.publish)
    echo = echo_canceller(cfg.audio, source, sink, "echo-cancel-satellite")
    client = SatelliteClient(cfg, hub, satellite_name(cfg, name), listener, sink)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        warm = [engines.vad.warmup()] + [e.warmup() for e in (engines.wake, engines.turn) if e is not None]
        await asyncio.gather(*warm)
        if echo is not None:  # audio.echo_cancel = "pipewire": the canceller, as on the desktop
            await start_echo_cancel(cfg.audio, echo, listener.guard, source, sink)
        await sink.open()
        where = hub or f"waited for on {cfg.satellite.listen}"
        log.info("satellite %r ready, hub %s (%s)", client.name, where, cfg.audio.activation)
        running = loop.create_task(client.run(source), name="satellite")
        stopping = loop.create_task(stop.wait(), name="stop")
        await asyncio.wait([running, stopping], return_when=asyncio.FIRST_COMPLETED)
        for task in (running, stopping):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    finally:
        source.close()
        sink.close()
        if echo is not None:
            echo.stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return 0
