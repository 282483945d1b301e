"""``iris satellite``: the satellite process, a ``Mode`` of the one runner (``app.runner``:
the lock, signals, the control socket, the loop-lag monitor, ``sd_notify``).

What it adds: the listen-only engines (VAD, wake word, end of turn), the echo handling of
a room with its own speaker, and the link to its hub (``wyoming.satellite``): connecting
to ``satellite.hub``, or waiting on ``satellite.listen`` for a hub to adopt it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from iris_voice.app import runner
from iris_voice.app.assembly import Engines, build_devices, build_engines, build_listener
from iris_voice.app.echo_setup import close_devices, echo_canceller, start_echo_cancel
from iris_voice.app.looplag import LoopLagMonitor
from iris_voice.app.status import loop_lag, status
from iris_voice.audio.protocols import AudioSink, AudioSource
from iris_voice.config import Config
from iris_voice.errors import ConfigError
from iris_voice.events import EventBus
from iris_voice.voice.echoguard import EchoGuard
from iris_voice.wyoming.satellite import SatelliteClient, satellite_name

log = logging.getLogger(__name__)


class SatelliteMode(runner.Runs):
    """The satellite process; ``await SatelliteMode(cfg, ...).run()``."""

    def __init__(
        self,
        cfg: Config,
        hub: str | None = None,
        name: str | None = None,
        source: AudioSource | None = None,
        sink: AudioSink | None = None,
        listen: str | None = None,
        engines: Engines | None = None,
    ) -> None:
        """``engines`` replaces the listen-only engines ``cfg`` describes (tests)."""
        if listen:
            satellite = cfg.satellite.model_validate({**cfg.satellite.model_dump(), "listen": listen})
            cfg = cfg.model_copy(update={"satellite": satellite})
        self.hub = "" if cfg.satellite.listen and not hub else (hub or cfg.satellite.hub)
        if not self.hub and not cfg.satellite.listen:
            raise ConfigError([
                "satellite.hub: is required (or iris satellite --hub tcp://HOST:PORT), or satellite.listen "
                "(or --listen tcp://HOST:PORT) to wait for the hub",
            ])  # fmt: skip
        self.cfg = cfg
        self.started = time.time()
        self.looplag = LoopLagMonitor()
        bus = EventBus()
        self.engines = engines or build_engines(cfg, listen_only=True)
        self.listener = build_listener(cfg, self.engines, bus.publish)
        # Its own speaker is in the room: no follow-up question from the answer's echo tail.
        self.listener.guard = EchoGuard(cfg.wake.model)
        off = cfg.audio.echo_cancel == "off"
        self.listener.guard.use(
            "off" if off else "guard", "audio.echo_cancel" if off else "a satellite's guard"
        )
        self.source, self.sink = build_devices(cfg, source, sink, bus.publish)
        self.echo = echo_canceller(cfg.audio, self.source, self.sink, "echo-cancel-satellite")
        self.client = SatelliteClient(cfg, self.hub, satellite_name(cfg, name), self.listener, self.sink)

    # -- the runner's Mode ---------------------------------------------------------------
    async def start(self) -> str:
        """The models, the echo canceller, the speaker."""
        engines = self.engines
        warm = [engines.vad.warmup()] + [e.warmup() for e in (engines.wake, engines.turn) if e is not None]
        await asyncio.gather(*warm)
        if self.echo is not None:  # audio.echo_cancel = "pipewire": the canceller, as on the desktop
            guard = self.listener.guard
            assert guard is not None
            await start_echo_cancel(self.cfg.audio, self.echo, guard, self.source, self.sink)
        await self.sink.open()
        return f"satellite {self.client.name}, hub {self.where}"

    @property
    def where(self) -> str:
        """Its hub, or where it waits for one."""
        return self.hub or f"waited for on {self.cfg.satellite.listen}"

    async def tasks(self, tg: asyncio.TaskGroup) -> list[asyncio.Task[Any]]:
        """The microphone, the listener and the hub link."""
        return [tg.create_task(self.client.run(self.source), name="satellite")]

    async def settle(self, stopping: asyncio.Event) -> None:
        """Nothing to wait for: say it is ready."""
        log.info("satellite %r ready, hub %s (%s)", self.client.name, self.where, self.cfg.audio.activation)

    def handlers(self) -> dict[str, Any]:
        """``ping`` and ``status``."""
        return {"ping": self._ping, "status": self._status}

    async def close(self) -> None:
        """The devices and the echo canceller (idempotent)."""
        close_devices(self.source, self.sink, self.echo)
        self.echo = None

    async def _ping(self, _req: dict[str, Any]) -> dict[str, Any]:
        import os

        return {"pid": os.getpid()}

    async def _status(self, req: dict[str, Any]) -> dict[str, Any]:
        c, engines = self.client, self.engines
        return status(
            "satellite",
            self.started,
            state="answering" if c.in_turn else "idle",
            activation=self.cfg.audio.activation,
            models={
                "stt": None,
                "tts": None,
                "wake": engines.wake.name if engines.wake else None,
                "llm": None,
            },
            alarm_ringing=f"timer {c.alarm.timer_id}" if c.alarm.ringing else None,
            turn_count=c.turns,
            loop_lag_ms=loop_lag(self.looplag, req),
            hub={
                "where": self.where,
                "connected": c.connected.is_set(),
                "name": c.name,
                "answers": c.answers,
            },
        )
