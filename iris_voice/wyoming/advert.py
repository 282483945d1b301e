"""Advertising ``iris serve`` over zeroconf (mDNS) as ``_wyoming._tcp.local.``, the way Home
Assistant discovers Wyoming services.

Only a service other machines can reach is advertised: a loopback or Unix-socket bind
is not (the reason is logged and shown in ``iris status``). For a wildcard bind
(``0.0.0.0``) the advertised address is the one this machine would use to reach the
mDNS group, as the ``wyoming`` package's own zeroconf helper picks it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from typing import Any

from iris_voice import __version__
from iris_voice.config import ServeConfig
from iris_voice.config.serve import bind_host, is_loopback_host

log = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
MDNS_GROUP = "224.0.0.251"
REGISTER_TIMEOUT_S = 10.0


def advertised_address(host: str) -> str:
    """The address to announce for a bind to ``host`` (a wildcard becomes this machine's
    LAN address). Raises OSError when there is no route to the mDNS group."""
    if host not in ("0.0.0.0", "::", ""):
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            return socket.gethostbyname(host)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((MDNS_GROUP, 5353))  # no packet is sent: this only picks the route
        return probe.getsockname()[0]


def service_name(cfg: ServeConfig) -> str:
    """The instance name: ``serve.name`` or ``IRIS on <hostname>``."""
    label = cfg.name or f"IRIS on {socket.gethostname()}"
    label = label.replace(".", " ")[:60]  # a dot would start another DNS label
    return f"{label}.{SERVICE_TYPE}"


def service_info(cfg: ServeConfig, address: str) -> Any:
    """The zeroconf ``AsyncServiceInfo`` for ``cfg``'s port at ``address``."""
    from urllib.parse import urlparse

    from zeroconf.asyncio import AsyncServiceInfo

    port = urlparse(cfg.uri).port
    return AsyncServiceInfo(
        SERVICE_TYPE,
        service_name(cfg),
        port=port,
        parsed_addresses=[address],
        properties={"program": "iris", "version": __version__},
    )


class Advertisement:
    """A registered record; ``close()`` withdraws it."""

    def __init__(self, zc: Any, info: Any) -> None:
        self.zc = zc
        self.info = info

    async def close(self) -> None:
        """Unregister and close the responder."""
        try:
            await self.zc.async_unregister_service(self.info)
        finally:
            await self.zc.async_close()


def why_not(cfg: ServeConfig) -> str | None:
    """Why ``cfg`` is not advertised, or None when it should be."""
    if not cfg.zeroconf:
        return "serve.zeroconf is off"
    host = bind_host(cfg.uri)
    if host is None:
        return "a Unix socket cannot be reached from other machines"
    if is_loopback_host(host):
        return f"{cfg.uri} is loopback: other machines cannot reach it (bind to 0.0.0.0 or a LAN address)"
    return None


async def advertise(cfg: ServeConfig) -> tuple[Advertisement | None, str]:
    """Register the service (None when it should not or cannot be); a line for status."""
    reason = why_not(cfg)
    if reason:
        log.info("not advertising over zeroconf: %s", reason)
        return None, f"not advertised: {reason}"
    from zeroconf.asyncio import AsyncZeroconf

    try:  # a host name is resolved: in a thread, and bounded
        host = bind_host(cfg.uri) or ""
        address = await asyncio.wait_for(asyncio.to_thread(advertised_address, host), REGISTER_TIMEOUT_S)
        info = service_info(cfg, address)
        zc = AsyncZeroconf()
    except OSError as exc:  # TimeoutError too
        log.warning("not advertising over zeroconf: %s", exc)
        return None, f"not advertised: {exc}"
    try:
        await asyncio.wait_for(zc.async_register_service(info), REGISTER_TIMEOUT_S)
    except Exception as exc:  # no multicast here, a name clash, a closed socket
        log.warning("zeroconf registration of %s failed: %s", info.name, exc)
        await zc.async_close()
        return None, f"not advertised: {exc}"
    log.info("advertised %s at %s:%s over zeroconf", info.name, address, info.port)
    return Advertisement(zc, info), f"advertised as {info.name!r} at {address}:{info.port}"
