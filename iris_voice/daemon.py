"""``iris run``: the voice daemon.

Owns the lifecycle: the single-instance lock, building and warming the stages, one
``asyncio.TaskGroup`` for every long-lived task (listening and turns, timers, alarms,
the control socket, reconnecting to the language model), SIGTERM/SIGINT, and
``sd_notify`` READY=1 once the speech models are loaded, STOPPING=1 on the way out.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from typing import Any

from iris_voice import __version__
from iris_voice.alarms import AlarmAnnouncer
from iris_voice.config import Config
from iris_voice.control import ControlServer
from iris_voice.engines import Engines, build_engines, warm_up
from iris_voice.errors import LlmError
from iris_voice.events import EventBus, LlmUnavailable
from iris_voice.listener import Listener
from iris_voice.llm.client import OllamaBackend
from iris_voice.llm.responder import build_responder
from iris_voice.pipeline import VoicePipeline
from iris_voice.runtime import InstanceLock, sd_notify
from iris_voice.speaker import ReplySpeaker
from iris_voice.status import DaemonCommands
from iris_voice.tools.builtin import build_registry

log = logging.getLogger(__name__)

NOT_REACHABLE_AT_START = "My language model is not reachable yet. I'll keep trying."
RETRY_DELAYS = (2.0, 5.0, 10.0, 30.0)
"""Seconds between attempts to reach the language model, the last one repeated."""


class Daemon:
    """The assembled voice assistant; ``await Daemon(cfg).run()``."""

    def __init__(self, cfg: Config, engines: Engines | None = None, source=None, sink=None) -> None:
        self.cfg = cfg
        self.bus = EventBus()
        self.started = time.time()
        self._engines = engines
        self._source = source
        self._sink = sink
        self._stopping = asyncio.Event()
        self._llm_settled = asyncio.Event()
        self.llm_reachable: bool | None = None
        self.llm_error = ""

    def _build(self) -> Engines:
        """Construct every stage (models are loaded by the warm-up that follows)."""
        cfg = self.cfg
        if self._engines is None:
            self._engines = build_engines(cfg)
        if self._source is None or self._sink is None:
            from iris_voice.audio.capture import MicCapture
            from iris_voice.audio.playback import SpeakerSink

            self._source = self._source or MicCapture(cfg.audio, publish=self.bus.publish)
            self._sink = self._sink or SpeakerSink(cfg.audio, publish=self.bus.publish)
        eng = self._engines
        self.registry, self.timers = build_registry(cfg, self.bus.publish)
        self.backend = OllamaBackend(cfg.llm)  # for iris status's reachability probe
        self.mcp = None
        if cfg.mcp.active():  # the servers start in run(), inside the TaskGroup
            from iris_voice.tools.mcp import McpManager, with_mcp_hint

            self.mcp = McpManager(cfg.mcp)
            self.mcp.register(self.registry)
            cfg = cfg.model_copy(update={"llm": with_mcp_hint(cfg.llm, self.mcp)})
        self.chat = build_responder(cfg, self.registry, publish=self.bus.publish)
        listener = Listener(cfg.audio, eng.vad, eng.wake, self.bus.publish, wake_threshold=cfg.wake.threshold)
        if cfg.audio.activation != "wake_word" and cfg.audio.barge_in != "wake_word":
            listener.wake = None
        self.speaker = ReplySpeaker(eng.tts, self._sink)
        self.pipeline = VoicePipeline(
            listener, eng.stt, self.chat, self.speaker, self.bus,
            wake_name=cfg.wake.model, on_stop=self._dismiss_alarm,
        )  # fmt: skip
        from iris_voice.audio.chime import chime

        rate = eng.tts.sample_rate
        self.alarms = AlarmAnnouncer(cfg.audio, self.pipeline.announce, chime=lambda: (chime(rate), rate))
        self.bus.subscribe(self.alarms.on_event)
        self.commands = DaemonCommands(self)
        return eng

    def _dismiss_alarm(self) -> None:
        if hasattr(self, "alarms"):
            self.alarms.dismiss()

    def request_stop(self) -> None:
        """Begin a clean shutdown (SIGTERM, SIGINT)."""
        self._stopping.set()

    async def run(self) -> int:
        """Run until SIGTERM/SIGINT; the process exit code."""
        lock = InstanceLock()
        lock.acquire()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        try:
            engines = self._build()
            open_early = getattr(self._sink, "open", None)
            if open_early is not None:  # the first reply must not wait for the device to open
                await open_early()
            took = await warm_up(engines)
            control = ControlServer(self.commands.handlers())
            await control.start()
            async with asyncio.TaskGroup() as tg:
                tasks = [
                    tg.create_task(self.pipeline.run(self._source), name="pipeline"),
                    tg.create_task(self.timers.run(), name="timers"),
                    tg.create_task(self.alarms.run(), name="alarms"),
                    tg.create_task(self._connect_llm(), name="llm-connect"),
                ]
                if self.mcp is not None:
                    await self.mcp.start(tg)  # pre-warm in the background; a turn never waits long
                # The first question should not pay for loading the language model and its
                # prompt: wait for the first attempt (bounded), but never for a dead server.
                waits = [asyncio.ensure_future(e.wait()) for e in (self._llm_settled, self._stopping)]
                limit = self.cfg.llm.request_timeout_s
                await asyncio.wait(waits, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
                for w in waits:
                    w.cancel()
                sd_notify(f"READY=1\nSTATUS=listening ({self.cfg.audio.activation})")
                log.info("IRIS %s ready (%s; stt %.0f ms, tts %.0f ms warm-up; language model %s)",
                         __version__, self.cfg.audio.activation, took["stt"], took["tts"],
                         "ready" if self.llm_reachable else "not reachable yet")  # fmt: skip
                await self._stopping.wait()
                sd_notify("STOPPING=1")
                log.info("stopping")
                for task in tasks:
                    task.cancel()
                if self.mcp is not None:
                    await self.mcp.stop(timeout=1.0)
            await control.close()
        finally:
            for closable in (self._source, self._sink):
                close = getattr(closable, "close", None)
                if close is not None:
                    close()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            lock.release()
        return 0

    async def _connect_llm(self) -> None:
        """Load the model and fill the prompt cache; retry with backoff while the server is down."""
        attempt = 0
        while True:
            try:
                await self.chat.warmup()
                if self.llm_reachable is False:
                    log.info("language model reachable again at %s", self.cfg.llm.host)
                self.llm_reachable, self.llm_error = True, ""
                self._llm_settled.set()
                return
            except LlmError as exc:
                first = self.llm_reachable is None
                self.llm_reachable, self.llm_error = False, exc.message
                self.bus.publish(LlmUnavailable(exc.code, exc.message))
                log.warning("%s [%s]", exc.message, exc.code)
                self._llm_settled.set()
                if first:  # said once; the retries that follow are only logged
                    await self.pipeline.announce(NOT_REACHABLE_AT_START)
            await asyncio.sleep(RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)])
            attempt += 1

    def status(self) -> dict[str, Any]:
        """What ``iris status`` shows (without the live reachability probe)."""
        return self.commands.snapshot()
