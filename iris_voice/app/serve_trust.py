"""Who may use ``iris serve``: the allow-list and the shared token.

Wyoming itself has no authentication, so IRIS adds two gates (see README, "More than
one machine"):

- **allow** — a peer whose address is neither loopback nor inside one of
  ``serve.allow``'s networks gets an ``error`` event (code ``not-allowed``) and is
  disconnected before any event of it is read.
- **token** — with ``serve.token`` (or ``token_file``) set, a client's first event other
  than ``describe`` must be ``iris-auth`` with ``{"token": "…"}``; IRIS answers
  ``iris-auth-ok``. Anything else first, or a wrong token, gets an ``error`` event (code
  ``unauthorized``) and the connection is closed. The token is a shared secret sent in
  plain text: it keeps strangers' programs out, it does not hide the traffic.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe

from iris_voice.config import ServeConfig
from iris_voice.config.serve import MIN_TOKEN_CHARS
from iris_voice.errors import ConfigError

AUTH_TYPE = "iris-auth"
"""The event a client sends with the token: ``Event("iris-auth", {"token": "…"})``."""
AUTH_OK_TYPE = "iris-auth-ok"
"""IRIS's answer to a right token."""
MAX_TOKEN_CHARS = 1024

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def peer_allowed(host: str | None, networks: Sequence[Network]) -> bool:
    """May a client at ``host`` connect? Loopback (and a Unix socket: ``host`` None)
    always may; with no ``networks`` everyone may; else ``host`` must be inside one.
    An IPv4 address seen as IPv6 (``::ffff:192.168.1.5``) is judged as IPv4."""
    if host is None:
        return True
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%eth0)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if addr.is_loopback:
        return True
    if not networks:
        return True
    return any(addr.version == net.version and addr in net for net in networks)


def load_token(cfg: ServeConfig) -> str:
    """The shared token: ``serve.token``, or the first line of ``serve.token_file`` ("" = none)."""
    if not cfg.token_file:
        return cfg.token
    path = Path(cfg.token_file).expanduser()
    try:
        token = path.read_text(encoding="utf-8").splitlines()[0].strip() if path.stat().st_size else ""
    except (OSError, UnicodeDecodeError, IndexError) as exc:
        raise ConfigError([f"serve.token_file: cannot read {path}: {exc}"]) from None
    if not token:
        raise ConfigError([f"serve.token_file: {path} holds no token (its first line is empty)"])
    if len(token) < MIN_TOKEN_CHARS:
        short = f"the token in {path} is shorter than {MIN_TOKEN_CHARS} characters and can be guessed"
        raise ConfigError([f"serve.token_file: {short} (make one with: openssl rand -hex 16)"])
    if len(token) > MAX_TOKEN_CHARS:
        too_long = f"the token in {path} is longer than {MAX_TOKEN_CHARS} characters"
        raise ConfigError([f"serve.token_file: {too_long}"])
    return token


class TokenGate:
    """Per-connection token check; ``check`` says what to do with each event."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()
        self.passed = not token
        """True once the client sent the right token (always, without a token)."""

    def check(self, event: Event) -> tuple[bool, Event | None]:
        """(let it through to the parts, an answer to send). An answer that is an
        ``error`` means: send it and close the connection."""
        if self.passed:
            if event.type == AUTH_TYPE:  # a second auth is harmless: acknowledge it
                return False, Event(AUTH_OK_TYPE)
            return True, None
        if Describe.is_type(event.type):
            return True, None  # what the service offers is no secret (Home Assistant asks first)
        if event.type == AUTH_TYPE:
            given = event.data.get("token") if isinstance(event.data, dict) else None
            if isinstance(given, str) and hmac.compare_digest(given.encode(), self._token):
                self.passed = True
                return False, Event(AUTH_OK_TYPE)
            return False, unauthorized("wrong token")
        return False, unauthorized(f"send {AUTH_TYPE} with the token before {event.type!r}")


def unauthorized(why: str) -> Event:
    """The ``error`` event a refused client gets."""
    return Error(text=f"unauthorized: {why}", code="unauthorized").event()


def not_allowed(host: str | None) -> Event:
    """The ``error`` event for a peer outside ``serve.allow``."""
    return Error(text=f"{host} is not in this service's allow-list", code="not-allowed").event()
