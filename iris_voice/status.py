"""The daemon's control commands and the figures ``iris status`` reports."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from typing import TYPE_CHECKING, Any

from iris_voice import __version__
from iris_voice.errors import IrisError, LlmError, ToolError

if TYPE_CHECKING:
    from iris_voice.control import Handler
    from iris_voice.daemon import Daemon


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation; None for no values."""
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 1)
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return round(cuts[min(98, max(0, round(q) - 1))], 1)


class DaemonCommands:
    """Implements each control-socket command against a running ``Daemon``."""

    def __init__(self, daemon: Daemon) -> None:
        self.d = daemon

    def handlers(self) -> dict[str, Handler]:
        """Command name → coroutine, for ``ControlServer``."""
        return {
            "ping": self.ping, "status": self.status, "listen": self.listen, "stop": self.stop,
            "mute": self.mute, "unmute": self.unmute, "say": self.say, "ask": self.ask,
            "timers": self.timers, "forget": self.forget,
        }  # fmt: skip

    def snapshot(self) -> dict[str, Any]:
        """State, models, uptime and latency figures (no network probe)."""
        d, p = self.d, self.d.pipeline
        turns = list(p.turns)
        firsts = [t["first_audio_ms"] for t in turns if t.get("first_audio_ms") is not None]
        eng = d._engines
        return {
            "version": __version__,
            "pid": os.getpid(),
            "state": p.state,
            "muted": p.listener.muted,
            "activation": d.cfg.audio.activation,
            "uptime_s": round(time.time() - d.started, 1),
            "models": {
                "stt": eng.stt.name if eng else None,
                "tts": eng.tts.name if eng else None,
                "wake": eng.wake.name if eng and eng.wake else None,
                "llm": d.cfg.llm.model,
            },
            "llm": {"host": d.cfg.llm.host, "reachable": d.llm_reachable, "error": d.llm_error},
            "timers": {"next_due": d.timers.next_due},
            "alarm_ringing": d.alarms.ringing.message if d.alarms.ringing else None,
            "first_audio_ms": {
                "p50": percentile(firsts, 50),
                "p95": percentile(firsts, 95),
                "n": len(firsts),
            },
            "turn_count": p.turn_count,
            "turns": turns[-5:],
        }

    async def ping(self, _req: dict[str, Any]) -> dict[str, Any]:
        """Liveness."""
        return {"pid": os.getpid()}

    async def status(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris status``: the snapshot, with the model server probed now."""
        try:
            version = await asyncio.wait_for(self.d.backend.version(), self.d.cfg.llm.connect_timeout_s + 1)
            self.d.llm_reachable, self.d.llm_error = True, ""
            probe = {"server_version": version}
        except (LlmError, TimeoutError) as exc:
            self.d.llm_reachable = False
            self.d.llm_error = exc.message if isinstance(exc, LlmError) else "timed out"
            probe = {}
        snap = self.snapshot()
        snap["llm"].update(probe)
        return snap

    async def listen(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris listen``: capture a question now (push-to-talk)."""
        if self.d.pipeline.listener.muted:
            raise IrisError("muted", "IRIS is muted; run 'iris unmute' first")
        self.d.pipeline.listen()
        return {"state": "listening"}

    async def stop(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris stop``: silence speech and dismiss a ringing alarm."""
        ringing = self.d.alarms.dismiss()
        return {"stopped": self.d.pipeline.stop() or ringing}

    async def mute(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris mute``: stop listening to the microphone."""
        self.d.pipeline.listener.muted = True
        return {"muted": True}

    async def unmute(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris unmute``."""
        self.d.pipeline.listener.muted = False
        return {"muted": False}

    async def say(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris say TEXT``: speak the text."""
        text = str(req.get("text") or "").strip()
        if not text:
            raise IrisError("bad-request", "say needs a text")
        reply = await self.d.pipeline.announce(text)
        return {"spoken": reply.spoken if reply else ""}

    async def ask(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris ask TEXT``: a text turn in the daemon (its timers live here)."""
        text = str(req.get("text") or "").strip()
        if not text:
            raise IrisError("bad-request", "ask needs a text")
        try:
            trace = await self.d.pipeline.ask_text(text, speak=bool(req.get("speak")))
        except LlmError as exc:
            raise IrisError(exc.code, exc.message) from None
        return {"trace": trace}

    async def forget(self, _req: dict[str, Any]) -> dict[str, Any]:
        """``iris forget``: start a new conversation (the model forgets what was said)."""
        turns = len(self.d.chat.history)
        self.d.chat.reset()
        return {"forgotten_turns": turns}

    async def timers(self, req: dict[str, Any]) -> dict[str, Any]:
        """``iris timers [list|cancel WHICH]``."""
        service = self.d.timers
        if req.get("action") == "cancel":
            try:
                rows = await service.cancel(str(req.get("which") or ""))
            except ToolError as exc:
                raise IrisError("timer-not-found", exc.message) from None
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
