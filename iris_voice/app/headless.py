"""``iris serve``: IRIS as a headless hub — no microphone, no speaker (a GPU box in a
cupboard) — serving its speech engines and answers over Wyoming (``wyoming.server``).

It owns the same lifecycle as the desktop daemon: the single-instance lock, Whisper and
Piper warmed before READY=1, one ``TaskGroup`` (timers, the Wyoming service, reconnecting
to the language model, MCP servers), SIGTERM/SIGINT, ``sd_notify``, and a control socket
for ``iris status``, ``iris timers`` and ``iris forget``.

A timer set through ``handle`` fires here, where nothing can say it: ``TimerRouter``
offers it to its ``routes`` (the satellite that set it, when satellites are served) and,
when none takes it, logs it and keeps it listed in ``iris status`` (``timer_router``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from iris_voice import __version__
from iris_voice.app import runner
from iris_voice.app.assembly import Engines, build_app, remote_listener
from iris_voice.app.checks import bind_error
from iris_voice.app.commands import LlmHealth, forget_command, timers_command
from iris_voice.app.looplag import LoopLagMonitor
from iris_voice.app.runtime import prepare_serve
from iris_voice.app.status import dialed, loop_lag, status
from iris_voice.config import Config
from iris_voice.conversation.origins import DESKTOP
from iris_voice.conversation.trace import TurnTrace
from iris_voice.errors import Code, IrisError, LlmError
from iris_voice.llm.client import ChatBackend
from iris_voice.wyoming.dialer import dialers
from iris_voice.wyoming.parts import service_parts
from iris_voice.wyoming.server import WyomingService
from iris_voice.wyoming.timer_router import TimerRouter
from iris_voice.wyoming.trust import load_token

log = logging.getLogger(__name__)


class Hub(runner.Runs):
    """The headless IRIS of ``iris serve``; ``await Hub(cfg).run()``."""

    def __init__(
        self, cfg: Config, engines: Engines | None = None, backend: ChatBackend | None = None
    ) -> None:
        self.started = time.time()
        self.app = build_app(cfg, speech=True, wake=False, engines=engines, backend=backend)
        self.cfg = self.app.cfg
        self.router = TimerRouter()
        self.app.bus.subscribe(self.router.on_event)
        self.turn_lock = asyncio.Lock()
        """One turn at a time in the one conversation: Wyoming clients and ``iris ask``."""
        parts = service_parts(self.app, turn_lock=self.turn_lock, listener=remote_listener(self.cfg))
        self.service = WyomingService(self.cfg.serve, parts, load_token(self.cfg.serve))
        self.dialers = dialers(self.cfg.satellite, parts)
        """The satellites this hub connects to (``satellite.connect``)."""
        self.health = LlmHealth()
        self.looplag = LoopLagMonitor()
        self._took: dict[str, float] = {}

    # -- the runner's Mode ---------------------------------------------------------------
    async def start(self) -> str:
        """A taken port fails before the models load; then the models, then the service."""
        prepare_serve(self.cfg.serve)
        self._took = await self._warm_up()
        try:
            await self.service.start()
        except OSError as exc:  # taken meanwhile (or a socket folder gone): the key, no traceback
            raise bind_error(self.cfg.serve.uri, exc) from None
        return f"serving {self.cfg.serve.uri}"

    async def tasks(self, tg: asyncio.TaskGroup) -> list[asyncio.Task[Any]]:
        """Timers, where their announcements go, the model's first load, the satellites."""
        tasks = [
            tg.create_task(self.app.timers.run(), name="timers"),
            tg.create_task(self.router.run(), name="timer-router"),
            tg.create_task(self._connect_llm(), name="llm-connect"),
            *(tg.create_task(d.run(), name=f"satellite-{d.uri}") for d in self.dialers),
        ]
        await self.app.start_mcp(tg)
        return tasks

    async def settle(self, stopping: asyncio.Event) -> None:
        """Nothing to wait for: say it serves."""
        log.info("IRIS %s serving %s (%s; stt %.0f ms, tts %.0f ms warm-up)", __version__,
                 self.cfg.serve.uri, self.service.describe_parts(), self._took["stt"],
                 self._took["tts"])  # fmt: skip

    async def close(self) -> None:
        """Stop serving; stop the MCP servers and close the timers."""
        await self.service.stop()
        await self.app.close(timeout=1.0)

    async def _warm_up(self) -> dict[str, float]:
        """Load Whisper and Piper (no wake word, VAD or end-of-turn model: no microphone here)."""
        engines = self.app.engines
        if engines is None:  # speech=True builds them
            raise RuntimeError("the assembly built no speech engines")
        took: dict[str, float] = {}
        for name, stage in (("stt", engines.stt), ("tts", engines.tts)):
            t0 = time.perf_counter()
            await stage.warmup()
            took[name] = (time.perf_counter() - t0) * 1000
        return took

    async def _connect_llm(self) -> None:
        """Load the model and fill its prompt cache; retry with backoff while the server is down."""
        await self.health.connect(self.app.responder.warmup, self.cfg.llm.host, self.app.bus.publish)

    def handlers(self) -> dict[str, Any]:
        """The control commands a headless hub answers."""
        return {
            "ping": self._ping, "status": self._status, "ask": self._ask, "timers": self._timers,
            "forget": self._forget,
        }  # fmt: skip

    async def _ping(self, _req: dict[str, Any]) -> dict[str, Any]:
        return {"pid": os.getpid()}

    async def _status(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            version = await asyncio.wait_for(self.app.backend.version(), self.cfg.llm.connect_timeout_s + 1)
            self.health.reachable, self.health.error = True, ""
        except (LlmError, TimeoutError) as exc:
            version = None
            self.health.reachable = False
            self.health.error = exc.message if isinstance(exc, LlmError) else "timed out"
        engines = self.app.engines
        return status(
            "serve",
            self.started,
            models={
                "stt": engines.stt.name if engines else None,
                "tts": engines.tts.name if engines else None,
                "wake": None,
                "llm": self.cfg.llm.model,
            },
            llm={
                "host": self.cfg.llm.host,
                "reachable": self.health.reachable,
                "error": self.health.error,
                "server_version": version,
            },
            timers={"next_due": self.app.timers.next_due, "unannounced": list(self.router.unannounced)},
            loop_lag_ms=loop_lag(self.looplag, req),
            serve=self.service.snapshot(),
            conversations=self.app.conversations.listed(),
            hub=dialed(self.dialers),
        )

    async def _timers(self, req: dict[str, Any]) -> dict[str, Any]:
        return await timers_command(self.app.timers, req)

    async def _ask(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris ask TEXT`` on the hub's machine: a turn in the hub's conversation (not spoken)."""
        text = str(req.get("text") or "").strip()
        if not text:
            raise IrisError(Code.BAD_REQUEST, "ask needs a text")
        if req.get("speak"):
            raise IrisError(Code.BAD_REQUEST, "iris serve has no speaker: ask without --speak")
        trace = TurnTrace(text=text)
        async with self.turn_lock:
            try:
                async for _ in self.app.conversations.get(DESKTOP).sentences(text, trace):
                    pass
            except LlmError as exc:
                raise IrisError(exc.code, exc.message) from None
        return {"trace": trace.to_dict()}

    async def _forget(self, req: dict[str, Any]) -> dict[str, Any]:
        return forget_command(self.app.conversations, req)
