"""``iris status``: one shape for every mode, documented here once.

Every mode (``desktop``: ``iris run``; ``serve``: ``iris serve``; ``satellite``: ``iris
satellite``) answers ``status`` with every key of ``FIELDS``; a key a mode has nothing
for is null. ``status --json`` readers can rely on the keys; ``iris status`` prints what is
there.
"""

from __future__ import annotations

import os
import time
from typing import Any

from iris_voice import __version__
from iris_voice.errors import Code, IrisError

FIELDS: dict[str, str] = {
    "mode": "desktop, serve or satellite",
    "version": "IRIS's version",
    "pid": "the process",
    "uptime_s": "seconds since it started",
    "state": "desktop: the pipeline (idle, listening, transcribing, thinking, speaking); "
    "satellite: idle, asking or answering",
    "muted": "desktop: the microphone is muted",
    "activation": "desktop, satellite: audio.activation",
    "models": "stt, tts, wake, llm: the model names this process runs (null: not here)",
    "llm": "desktop, serve: host, reachable, error, server_version of the model server",
    "timers": "desktop, serve: next_due (Unix time), unannounced (serve: timers nobody heard)",
    "alarm_ringing": "desktop, satellite: the message of the timer ringing now",
    "first_audio_ms": "desktop: p50, p95 and n over the recent turns",
    "turn_count": "desktop: voice turns since start; satellite: questions sent to the hub",
    "echo": "desktop: the echo guard's figures",
    "speculation": "desktop: turns started at a pause, and what became of them",
    "turns": "desktop: the last five turns with per-stage timings",
    "loop_lag_ms": "every mode: how late the event loop runs (p99, max; last minute)",
    "microphone": "desktop: heard_s, dropped_blocks, overflows",
    "serve": "desktop with serve.enabled, serve: the Wyoming service (uri, trust, clients)",
    "conversations": "desktop, serve: each conversation's origin, turns and idle seconds",
    "hub": "satellite: its hub (where, connected, answers); serve and desktop: satellites "
    "this hub connects to (satellite.connect) and whether each is linked",
}
"""Every key of the status, and which modes fill it."""


def status(mode: str, started: float, **fields: Any) -> dict[str, Any]:
    """The status of a ``mode`` process started at ``started`` (Unix time): every key of
    ``FIELDS``, null where ``fields`` has nothing. An unknown key is a programming error."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"status keys not in FIELDS: {sorted(unknown)}")
    base = {
        "mode": mode,
        "version": __version__,
        "pid": os.getpid(),
        "uptime_s": round(time.time() - started, 1),
    }
    return {key: base[key] if key in base else fields.get(key) for key in FIELDS}


def loop_lag(monitor: Any, req: dict[str, Any]) -> dict[str, Any]:
    """``loop_lag_ms`` of a ``LoopLagMonitor``; a request's ``lag_window_s`` (0 < s ≤ 60)
    adds the lag of the last s seconds (``window``)."""
    window = req.get("lag_window_s")
    if window is None:
        return monitor.snapshot()
    if not isinstance(window, int | float) or isinstance(window, bool) or not 0 < window <= 60:
        raise IrisError(Code.BAD_REQUEST, "lag_window_s must be a number of seconds in (0, 60]")
    return monitor.snapshot(window_s=float(window))


def dialed(dialers: list[Any]) -> list[dict[str, Any]] | None:
    """The satellites a hub connects to, for ``hub`` (None when it connects to none)."""
    if not dialers:
        return None
    return [{"uri": d.uri, "name": d.name, "linked": d.connected.is_set(), "links": d.links} for d in dialers]
