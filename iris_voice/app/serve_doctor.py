"""``iris doctor``'s lines about ``iris serve``: does the service answer ``describe`` at
``serve.uri``, who may use it, is it advertised, and how many clients are connected."""

from __future__ import annotations

import asyncio
from typing import Any

from wyoming.client import AsyncClient
from wyoming.info import Describe, Info

from iris_voice.config import Config
from iris_voice.config.serve import bind_host

Check = tuple[bool | None, str]
TIMEOUT_S = 3.0


def client_uri(uri: str) -> str:
    """Where a local client reaches a service bound to ``uri`` (a wildcard is this machine)."""
    host = bind_host(uri)
    if host in ("0.0.0.0", ""):
        return uri.replace("0.0.0.0", "127.0.0.1", 1)
    if host == "::":
        return uri.replace("[::]", "[::1]", 1)
    return uri


async def describe(uri: str, timeout: float = TIMEOUT_S) -> Info:
    """``describe`` → ``info`` from the service at ``uri`` (raises OSError or TimeoutError)."""
    async with asyncio.timeout(timeout), AsyncClient.from_uri(uri) as client:
        await client.write_event(Describe().event())
        while True:
            event = await client.read_event()
            if event is None:
                raise ConnectionResetError("closed without answering describe")
            if Info.is_type(event.type):
                return Info.from_event(event)


def _trust(cfg: Config) -> str:
    serve = cfg.serve
    if serve.loopback:
        return "this machine only (loopback)"
    parts = [f"allow {', '.join(serve.allow)} and loopback"] if serve.allow else ["any address"]
    if serve.token or serve.token_file:
        parts.append("with the shared token")
    return " ".join(parts)


async def serve_checks(cfg: Config, status: dict[str, Any] | None = None) -> list[Check]:
    """Each check as (passed, line); ``status`` is the running daemon's or hub's, if any."""
    from iris_voice.app.serve_zeroconf import why_not

    uri = cfg.serve.uri
    serving = status.get("serve") if status else None
    expected = cfg.serve.enabled or bool(serving)
    try:
        info = await describe(client_uri(uri))
    except (OSError, TimeoutError) as exc:
        if not expected:
            return [(None, f"wyoming service: not running (iris serve, or serve.enabled = true; {uri})")]
        return [(False, f"wyoming service: nothing answers describe at {uri} ({exc or 'timed out'})")]
    data = info.event().data
    programs = ", ".join(k for k, v in data.items() if v) or "nothing"
    checks: list[Check] = [(True, f"wyoming service: {uri} answers describe ({programs})")]
    checks.append((None, f"wyoming trust: {_trust(cfg)}; plain text on the network"))
    reason = why_not(cfg.serve)
    checks.append((None, f"wyoming zeroconf: {serving['zeroconf'] if serving else (reason or 'on')}"))
    if serving:
        peers = ", ".join(c["peer"] for c in serving["clients"]) or "none"
        checks.append((None, f"wyoming clients: {len(serving['clients'])} connected ({peers})"))
    return checks
