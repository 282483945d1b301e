"""``iris doctor``'s lines about ``iris serve``: does the service answer ``describe`` at
``serve.uri``, who may use it, is it advertised, and how many clients are connected."""

from __future__ import annotations

from typing import Any

from wyoming.info import Info

from iris_voice.config import Config
from iris_voice.config.serve import bind_host
from iris_voice.errors import Code, SpeechError
from iris_voice.speech import wyoming_client
from iris_voice.speech.wyoming_client import Endpoint

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


async def describe(uri: str, key: str = "serve.uri", timeout: float = TIMEOUT_S) -> Info:
    """``describe`` → ``info`` from the service at ``uri`` (``SpeechError`` naming ``key``
    when it cannot be reached or does not answer)."""
    return await wyoming_client.describe(Endpoint(uri, key, timeout, Code.WYOMING_UNREACHABLE))


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
    from iris_voice.wyoming.advert import why_not

    uri = cfg.serve.uri
    serving = status.get("serve") if status else None
    expected = cfg.serve.enabled or bool(serving)
    try:
        info = await describe(client_uri(uri))
    except SpeechError as exc:
        if not expected:
            return [(None, f"wyoming service: not running (iris serve, or serve.enabled = true; {uri})")]
        return [(False, f"wyoming service: nothing answers describe ({exc.message})")]
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


async def satellite_checks(cfg: Config) -> list[Check]:
    """With ``satellite.hub`` set: does the hub answer, and take this satellite's token."""
    from wyoming.event import Event

    from iris_voice.wyoming.trust import AUTH_OK_TYPE, AUTH_TYPE

    hub, token = cfg.satellite.hub, cfg.satellite.token
    if not hub:
        return []
    endpoint = Endpoint(hub, "satellite.hub", TIMEOUT_S, Code.WYOMING_UNREACHABLE)
    try:
        info = await wyoming_client.describe(endpoint)
    except SpeechError as exc:
        return [(False, f"satellite hub: {exc.message}")]
    if token:
        try:
            async with wyoming_client.connect(endpoint) as session:
                await session.send(Event(AUTH_TYPE, {"token": token}))
                answer = (await session.receive()).type
        except SpeechError as exc:  # the hub answers a wrong token with an error event
            answer = exc.message
        if answer != AUTH_OK_TYPE:
            return [(False, f"satellite hub: {hub} refuses satellite.token ({answer})")]
    handles = [p.name for p in info.handle] or ["no handle program: is it iris serve?"]
    return [(True, f"satellite hub: {hub} answers ({', '.join(handles)})")]
