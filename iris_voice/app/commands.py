"""The daemon's control commands (``iris status|listen|stop|mute|say|ask|timers|forget``)
and the figures ``iris status`` reports.

``ControlCommands`` gets each collaborator it uses by name — the pipeline, the
conversation, the timers, the alarms, the model server and its health, the loop-lag
monitor — never the whole daemon, so a command's reach is visible in its constructor.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from iris_voice.app.assembly import Engines
from iris_voice.app.control import Handler
from iris_voice.app.looplag import LoopLagMonitor
from iris_voice.app.status import dialed, loop_lag, status
from iris_voice.config import Config
from iris_voice.conversation.origins import DESKTOP, Conversations, satellite_origin
from iris_voice.errors import Code, IrisError, LlmError, ToolError
from iris_voice.events import Event, LlmUnavailable
from iris_voice.llm.client import OllamaBackend
from iris_voice.timers.dbfile import is_locked
from iris_voice.timers.service import TimerService
from iris_voice.voice.alarms import AlarmAnnouncer
from iris_voice.voice.heard import ListenMode
from iris_voice.voice.pipeline import VoicePipeline


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation; None for no values."""
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 1)
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return round(cuts[min(98, max(0, round(q) - 1))], 1)


log = logging.getLogger(__name__)

RETRY_DELAYS = (2.0, 5.0, 10.0, 30.0)
"""Seconds between attempts to reach the language model, the last one repeated."""


@dataclass
class LlmHealth:
    """What IRIS last learned about its language-model server."""

    reachable: bool | None = None
    """None until the first attempt."""
    error: str = ""
    """The last failure, for ``iris status``."""

    async def connect(
        self,
        warmup: Callable[[], Awaitable[None]],
        host: str,
        publish: Callable[[Event], None],
        *,
        settled: asyncio.Event | None = None,
        first_failure: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        """Load the model and fill its prompt cache (``warmup``); retry with backoff while the
        server at ``host`` is down. ``settled`` is set after the first attempt either way;
        ``first_failure`` runs once, when the first attempt fails (the daemon says so)."""
        attempt = 0
        while True:
            try:
                await warmup()
                if self.reachable is False:
                    log.info("language model reachable again at %s", host)
                self.reachable, self.error = True, ""
                if settled is not None:
                    settled.set()
                return
            except LlmError as exc:
                first = self.reachable is None
                self.reachable, self.error = False, exc.message
                publish(LlmUnavailable(exc.code, exc.message))
                log.warning("%s [%s]", exc.message, exc.code)
                if settled is not None:
                    settled.set()
                if first and first_failure is not None:  # said once; the retries are only logged
                    await first_failure()
            await asyncio.sleep(RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)])
            attempt += 1


def forget_command(conversations: Conversations, req: dict[str, Any]) -> dict[str, Any]:
    """``iris forget [ORIGIN]``: every conversation, or the one of ``origin`` — an origin as
    ``iris status`` lists it (``desktop``, ``satellite:kitchen``, ``wyoming:…``) or a
    satellite's bare name (``kitchen``). What each held, in turns."""
    which = str(req.get("origin") or "").strip()
    if not which:
        gone = conversations.forget()
    else:
        origin = which if ":" in which or which == DESKTOP else satellite_origin(which)
        if origin not in conversations:
            known = ", ".join(str(c["origin"]) for c in conversations.listed())
            raise IrisError(Code.BAD_REQUEST, f"there is no conversation {which!r} (there are: {known})")
        gone = conversations.forget(origin)
    return {"forgotten": gone, "forgotten_turns": sum(gone.values())}


class ControlCommands:
    """Implements each control-socket command against the daemon's parts."""

    def __init__(
        self,
        *,
        cfg: Config,
        pipeline: VoicePipeline,
        conversations: Conversations,
        timers: TimerService,
        alarms: AlarmAnnouncer,
        backend: OllamaBackend,
        health: LlmHealth,
        engines: Engines | None,
        started: float,
        looplag: LoopLagMonitor | None = None,
        serve: Any = None,
        source: Any = None,
        dialers: list[Any] | None = None,
    ) -> None:
        self.cfg = cfg
        self.pipeline = pipeline
        self.conversations = conversations
        self.timers_service = timers
        self.alarms = alarms
        self.backend = backend
        self.health = health
        self.engines = engines
        self.started = started
        self.looplag = looplag
        self.serve = serve
        """The Wyoming service (``serve.enabled``): a ``WyomingService``, or None."""
        self.source = source
        """The microphone (``MicCapture``: blocks dropped, overflows), or None."""
        self.dialers = dialers or []
        """The satellites this daemon connects to (``satellite.connect``)."""

    def handlers(self) -> dict[str, Handler]:
        """Command name → coroutine, for ``ControlServer``."""
        return {
            "ping": self.ping, "status": self.status, "listen": self.listen, "stop": self.stop,
            "mute": self.mute, "unmute": self.unmute, "say": self.say, "ask": self.ask,
            "timers": self.timers, "forget": self.forget,
        }  # fmt: skip

    def snapshot(self) -> dict[str, Any]:
        """State, models, uptime and latency figures (no network probe)."""
        p, eng = self.pipeline, self.engines
        turns = list(p.turns)
        firsts = [t["first_audio_ms"] for t in turns if t.get("first_audio_ms") is not None]
        return status(
            "desktop",
            self.started,
            state=str(p.state),
            muted=p.listener.mode == ListenMode.MUTED,
            activation=self.cfg.audio.activation,
            models={
                "stt": eng.stt.name if eng else None,
                "tts": eng.tts.name if eng else None,
                "wake": eng.wake.name if eng and eng.wake else None,
                "llm": self.cfg.llm.model,
            },
            llm={
                "host": self.cfg.llm.host,
                "reachable": self.health.reachable,
                "error": self.health.error,
                "server_version": None,
            },
            timers={"next_due": self.timers_service.next_due, "unannounced": None},
            alarm_ringing=self.alarms.ringing.message if self.alarms.ringing else None,
            first_audio_ms={
                "p50": percentile(firsts, 50),
                "p95": percentile(firsts, 95),
                "n": len(firsts),
            },
            turn_count=p.turn_count,
            echo=p.listener.guard.snapshot() if p.listener.guard else None,
            speculation=dict(p.speculation),
            turns=turns[-5:],
            loop_lag_ms=self.looplag.snapshot() if self.looplag else None,
            microphone={
                # audio the listener has judged, and audio lost before it could: a daemon that
                # falls behind its microphone drops the oldest blocks, and a wake word with them
                "heard_s": round(p.listener.position_s, 1),
                "dropped_blocks": getattr(self.source, "dropped", None),
                "overflows": getattr(self.source, "overflows", None),
            },
            serve=self.serve.snapshot() if self.serve is not None else None,
            conversations=self.conversations.listed(),
            hub=dialed(self.dialers),
        )

    async def ping(self, _req: dict[str, Any]) -> dict[str, Any]:
        """Liveness."""
        return {"pid": os.getpid()}

    async def status(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris status``: the snapshot, with the model server probed now; ``lag_window_s``
        (0 < s ≤ 60) adds the loop lag of the last s seconds."""
        try:
            version = await asyncio.wait_for(self.backend.version(), self.cfg.llm.connect_timeout_s + 1)
            self.health.reachable, self.health.error = True, ""
            probe = {"server_version": version}
        except (LlmError, TimeoutError) as exc:
            self.health.reachable = False
            self.health.error = exc.message if isinstance(exc, LlmError) else "timed out"
            probe = {"server_version": None}
        snap = self.snapshot()
        snap["llm"].update(probe)
        if self.looplag is not None:
            snap["loop_lag_ms"] = loop_lag(self.looplag, req)
        return snap

    async def listen(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris listen``: capture a question now (push-to-talk)."""
        if self.pipeline.listener.mode == ListenMode.MUTED:
            raise IrisError(Code.MUTED, "IRIS is muted; run 'iris unmute' first")
        self.pipeline.listen()
        return {"state": "listening"}

    async def stop(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris stop``: silence speech and dismiss a ringing alarm."""
        ringing = self.alarms.dismiss()
        return {"stopped": self.pipeline.stop() or ringing}

    async def mute(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris mute``: stop listening to the microphone."""
        self.pipeline.listener.mute()
        return {"muted": True}

    async def unmute(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris unmute``."""
        self.pipeline.listener.unmute()
        return {"muted": False}

    async def say(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris say TEXT``: speak the text; what was heard of it, and whether it was cut off."""
        text = str(req.get("text") or "").strip()
        if not text:
            raise IrisError(Code.BAD_REQUEST, "say needs a text")
        reply = await self.pipeline.announce(text)
        return {"spoken": reply.spoken if reply else "", "interrupted": reply is None or reply.interrupted}

    async def ask(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris ask TEXT``: a text turn in the daemon (its timers live here)."""
        text = str(req.get("text") or "").strip()
        if not text:
            raise IrisError(Code.BAD_REQUEST, "ask needs a text")
        try:
            trace = await self.pipeline.ask_text(text, speak=bool(req.get("speak")))
        except LlmError as exc:
            raise IrisError(exc.code, exc.message) from None
        return {"trace": trace}

    async def forget(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris forget [ORIGIN]``: the model forgets what was said (``forget_command``)."""
        return forget_command(self.conversations, req)

    async def timers(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris timers [list|cancel WHICH]``."""
        return await timers_command(self.timers_service, req)


async def timers_command(service: TimerService, req: dict[str, Any]) -> dict[str, Any]:
    """``iris timers [list|cancel WHICH]`` against ``service`` (the daemon's or the hub's).

    A database another program keeps locked is one log line and an ``IrisError`` that says
    so; nothing was changed, and the same command works once the lock is gone.
    """
    try:
        return await _timers_command(service, req)
    except sqlite3.OperationalError as exc:
        if not is_locked(exc):
            raise
        what = "cancel" if req.get("action") == "cancel" else "list"
        path = service.store.path
        log.warning("iris timers %s: the timers database %s is locked by another program (%s); "
                    "nothing was changed", what, path, exc)  # fmt: skip
        message = (f"the timers database {path} is locked by another program ({exc}); nothing was "
                   "changed: try again once it is released")  # fmt: skip
        raise IrisError(Code.DAEMON_ERROR, message) from None


async def _timers_command(service: TimerService, req: dict[str, Any]) -> dict[str, Any]:
    if req.get("action") == "cancel":
        try:
            rows = await service.cancel(str(req.get("which") or ""))
        except ToolError as exc:
            raise IrisError(Code.TIMER_NOT_FOUND, exc.message) from None
        return {"cancelled": [r.id for r in rows]}
    now = service.clock.now()
    rows = await service.list()
    return {
        "timers": [
            {"id": r.id, "kind": r.kind, "label": r.label, "due_at": r.due_at, "paused": r.paused,
             "remaining_s": round(r.left(now), 1), "describe": service.describe(r, now)}
            for r in rows
        ]
    }  # fmt: skip
