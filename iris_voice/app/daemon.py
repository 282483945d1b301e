"""``iris run``: the voice daemon, a ``Mode`` of the one runner (``app.runner``: the lock,
signals, the control socket, the loop-lag monitor, ``sd_notify``).

What it adds: warming the stages and opening the devices before READY, its long-lived
tasks (listening and turns, timers, alarms, MCP servers, reconnecting to the language
model, the Wyoming service and the satellites with ``serve.enabled``), and READY only once
the model's first load was tried. Its parts come from the one assembly (``build_app``), all
of them in ``__init__``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from iris_voice import __version__
from iris_voice.app import runner
from iris_voice.app.assembly import (
    Engines,
    build_app,
    build_devices,
    build_listener,
    remote_listener,
    warm_up,
)
from iris_voice.app.checks import bind_error
from iris_voice.app.commands import ControlCommands, LlmHealth
from iris_voice.app.echo_setup import close_devices, echo_canceller, start_echo_cancel
from iris_voice.app.looplag import LoopLagMonitor
from iris_voice.app.runtime import prepare_serve
from iris_voice.audio.chime import chime
from iris_voice.audio.protocols import AudioSink, AudioSource
from iris_voice.config import Config
from iris_voice.conversation.origins import DESKTOP, OriginResponder
from iris_voice.errors import SpeechError
from iris_voice.timers.origin import local_only
from iris_voice.voice.alarms import AlarmAnnouncer
from iris_voice.voice.echoguard import EchoGuard
from iris_voice.voice.latecue import LateCue
from iris_voice.voice.pipeline import VoicePipeline
from iris_voice.voice.speaker import ReplySpeaker
from iris_voice.wyoming.dialer import SatelliteDialer, dialers
from iris_voice.wyoming.parts import service_parts
from iris_voice.wyoming.server import WyomingService
from iris_voice.wyoming.trust import load_token

log = logging.getLogger(__name__)

NOT_REACHABLE_AT_START = "My language model is not reachable yet. I'll keep trying."


class Daemon(runner.Runs):
    """The assembled voice assistant; ``await Daemon(cfg).run()``."""

    def __init__(
        self,
        cfg: Config,
        engines: Engines | None = None,
        source: AudioSource | None = None,
        sink: AudioSink | None = None,
    ) -> None:
        self.started = time.time()
        self.app = build_app(cfg, speech=True, engines=engines)
        self.cfg = self.app.cfg
        self.bus = self.app.bus
        if self.app.engines is None:  # speech=True builds them
            raise RuntimeError("the assembly built no speech engines")
        self.engines: Engines = self.app.engines
        self.source, self.sink = build_devices(self.cfg, source, sink, self.bus.publish)
        eng, cfg = self.engines, self.cfg
        listener = build_listener(cfg, eng, self.bus.publish)
        self.guard = listener.guard = EchoGuard(cfg.wake.model)
        cue = LateCue.from_config(cfg.tts)
        self.speaker = ReplySpeaker(eng.tts, self.sink, on_sentence=self.guard.saying, cue=cue)
        # PipeWire's canceller sits between IRIS's own streams and the devices: only for
        # the real microphone and speaker (a test's fake source has no echo to cancel).
        self.echo = echo_canceller(cfg.audio, self.source, self.sink)
        self.pipeline = VoicePipeline(
            listener, eng.stt, OriginResponder(self.app.conversations, DESKTOP), self.speaker, self.bus,
            wake_name=cfg.wake.model, on_stop=self._dismiss_alarm,
        )  # fmt: skip
        rate = eng.tts.sample_rate
        self.alarms = AlarmAnnouncer(
            cfg.audio, self.pipeline.announce, chime=lambda: (chime(rate), rate),
            on_ringing=listener.alarm_ringing,
        )  # fmt: skip
        self.bus.subscribe(self.alarms.on_event)
        # A satellite's timer is the hub's to fire (iris serve); this daemon leaves it pending —
        # unless it is the hub itself (serve.enabled): then the satellites' part decides.
        self.app.timers.hold = local_only
        self.health = LlmHealth()
        self.looplag = LoopLagMonitor()
        # serve.enabled: the same Wyoming service as ``iris serve``, over this daemon's parts
        self.service: WyomingService | None = None
        self.dialers: list[SatelliteDialer] = []
        """The satellites this hub connects to (``satellite.connect``, with ``serve.enabled``)."""
        if cfg.serve.enabled:
            parts = service_parts(
                self.app, turn_lock=self.pipeline.speech_lock, local_announce=self.alarms.take,
                listener=remote_listener(cfg),
            )  # fmt: skip
            self.service = WyomingService(cfg.serve, parts, load_token(cfg.serve))
            self.dialers = dialers(cfg.satellite, parts)
        self.commands = ControlCommands(
            cfg=self.cfg, pipeline=self.pipeline, conversations=self.app.conversations,
            timers=self.app.timers, alarms=self.alarms, backend=self.app.backend, health=self.health,
            engines=self.engines, started=self.started, looplag=self.looplag, serve=self.service,
            source=self.source, dialers=self.dialers,
        )  # fmt: skip
        self._llm_settled = asyncio.Event()
        self._took: dict[str, float] = {}

    def _dismiss_alarm(self) -> None:
        self.alarms.dismiss()

    # -- the runner's Mode ---------------------------------------------------------------
    async def start(self) -> str:
        """A taken port fails before the models load; the echo canceller, the speaker, the models."""
        if self.service is not None:
            prepare_serve(self.cfg.serve)
        await self._start_echo_cancel()
        await self.sink.open()  # the first reply must not wait for the device to open
        self._took = await warm_up(self.engines)
        if self.speaker.cue is not None:  # said when the machine is busy: not synthesized then
            try:
                await self.speaker.cue.prepare(self.engines.tts)
            except SpeechError as exc:  # a remote voice not up yet: the first late reply tries again
                log.warning("late cue not synthesized: %s", exc)
        return f"listening ({self.cfg.audio.activation})"

    async def tasks(self, tg: asyncio.TaskGroup) -> list[asyncio.Task[Any]]:
        """The pipeline, timers, alarms, the model's first load, the service, the satellites."""
        tasks = [
            tg.create_task(self.pipeline.run(self.source), name="pipeline"),
            tg.create_task(self.app.timers.run(), name="timers"),
            tg.create_task(self.alarms.run(), name="alarms"),
            tg.create_task(self._connect_llm(), name="llm-connect"),
        ]
        if self.service is not None:
            tasks.append(tg.create_task(self._serve(self.service), name="wyoming-serve"))
        tasks += [tg.create_task(d.run(), name=f"satellite-{d.uri}") for d in self.dialers]
        await self.app.start_mcp(tg)  # pre-warm in the background; a turn never waits long
        return tasks

    async def settle(self, stopping: asyncio.Event) -> None:
        """The first question should not pay for loading the language model and its prompt:
        wait for the first attempt (bounded), but never for a dead server."""
        waits = [asyncio.ensure_future(e.wait()) for e in (self._llm_settled, stopping)]
        await asyncio.wait(waits, timeout=self.cfg.llm.request_timeout_s, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
        took = self._took
        log.info("IRIS %s ready (%s; stt %.0f ms, tts %.0f ms warm-up; language model %s)",
                 __version__, self.cfg.audio.activation, took["stt"], took["tts"],
                 "ready" if self.health.reachable else "not reachable yet")  # fmt: skip

    def handlers(self) -> dict[str, Any]:
        """The control commands (``ControlCommands``)."""
        return self.commands.handlers()

    async def close(self) -> None:
        """The devices, the echo canceller, the MCP servers and the timers (idempotent)."""
        close_devices(self.source, self.sink, self.echo)
        self.echo = None
        await self.app.close(timeout=1.0)

    async def _serve(self, service: WyomingService) -> None:
        """``serve.enabled``: a port taken after ``prepare_serve`` tried it (a race) is logged; the
        voice daemon, warm by now, goes on without the service rather than exit."""
        try:
            await service.run()
        except OSError as exc:
            log.error("%s; the voice daemon goes on without it", bind_error(service.cfg.uri, exc).message)

    async def _start_echo_cancel(self) -> None:
        """Start PipeWire's echo canceller (or settle for the guard) before the devices open."""
        if self.echo is None:
            self.guard.use("off", "a custom audio source and sink: no room to echo in")
            return
        await start_echo_cancel(self.cfg.audio, self.echo, self.guard, self.source, self.sink)

    async def _connect_llm(self) -> None:
        """Load the model and fill the prompt cache; retry with backoff while the server is down
        (the first failure is said once)."""
        await self.health.connect(
            self.app.responder.warmup, self.cfg.llm.host, self.bus.publish, settled=self._llm_settled,
            first_failure=lambda: self.pipeline.announce(NOT_REACHABLE_AT_START),
        )  # fmt: skip

    def status(self) -> dict[str, Any]:
        """What ``iris status`` shows (without the live reachability probe)."""
        return self.commands.snapshot()
