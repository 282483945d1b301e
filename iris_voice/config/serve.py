"""The ``[serve]`` section: IRIS as a Wyoming service for other machines (``iris serve``).

Wyoming has no authentication and no encryption. The trust model is therefore checked
here, where the configuration is read: a service reachable from other machines (any bind
address but loopback) needs ``allow`` (the client networks let in) or a shared ``token``
(``token_file``), and refusing it names the key to set.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated
from urllib.parse import urlparse

from pydantic import Field, field_validator

from iris_voice.config.sections import _Section

DEFAULT_URI = "tcp://127.0.0.1:10700"
MIN_TOKEN_CHARS = 16
"""A shorter shared token can be guessed: it is refused where the configuration is read."""


def bind_host(uri: str) -> str | None:
    """The host of a ``tcp://HOST:PORT`` URI (None for ``unix://``)."""
    parsed = urlparse(uri)
    return parsed.hostname if parsed.scheme == "tcp" else None


def networks_list(value: list[str]) -> list[str]:
    """An allow-list checked: each entry a network in CIDR or an address (stripped)."""
    for entry in value:
        try:
            ipaddress.ip_network(entry.strip(), strict=False)
        except ValueError:
            raise ValueError(f"{entry!r} is not a network in CIDR (192.168.1.0/24) or an address") from None
    return [e.strip() for e in value]


def is_loopback_host(host: str | None) -> bool:
    """True for a host only this machine can reach: ``localhost``, 127.0.0.0/8, ``::1``
    (a Unix socket, ``host`` None, counts too). ``0.0.0.0``, ``::`` and names are not."""
    if host is None or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServeConfig(_Section):
    """``iris serve``: IRIS's speech to text, text to speech and answers over Wyoming."""

    enabled: bool = False
    """Also serve from the desktop daemon (``iris run``); ``iris serve`` always serves."""
    uri: str = DEFAULT_URI
    """``tcp://HOST:PORT`` (loopback by default) or ``unix:///path``."""
    zeroconf: bool = False
    """Advertise ``_wyoming._tcp.local.`` (Home Assistant discovers it); only for a
    non-loopback bind address."""
    name: str = ""
    """The name advertised over zeroconf ("" = ``IRIS on <hostname>``)."""
    allow: list[str] = []
    """Client networks let in, in CIDR (``192.168.1.0/24``, ``10.0.0.5/32``); loopback
    always is. Empty: every address (then ``token`` must be set for a non-loopback bind)."""
    token: str = ""
    """A shared secret clients send in an ``iris-auth`` event before anything but ``describe``."""
    token_file: str = ""
    """A file holding the token (first line), instead of ``token`` in this file."""
    max_utterance_s: Annotated[float, Field(gt=1, le=300)] = 30.0
    """Most audio one ``transcribe`` may send; more is refused (memory is bounded)."""
    read_timeout_s: Annotated[float, Field(gt=0, le=600)] = 10.0
    """How long a half-received utterance or text stream may wait for its next event."""
    max_clients: Annotated[int, Field(ge=1, le=256)] = 16
    """Admitted connections served at once; more are answered with an error and closed."""
    max_pending: Annotated[int, Field(ge=1, le=64)] = 4
    """Connections not yet admitted (no event yet, or not yet authenticated) held at once;
    a newer one closes the oldest, so idle strangers can never lock out a real client."""
    auth_timeout_s: Annotated[float, Field(gt=0, le=120)] = 5.0
    """How long a new connection may take to send its first event (and, with a token, to
    authenticate) before it is closed."""
    idle_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60.0
    """How long an admitted connection may send nothing between events (IRIS satellites
    send ``ping`` every few seconds, so they stay)."""
    max_synthesize_chars: Annotated[int, Field(ge=1, le=100_000)] = 2000
    """Longest text one ``synthesize`` may ask for; more is refused with an error."""

    @field_validator("uri")
    @classmethod
    def _uri(cls, value: str) -> str:
        value = value.strip()
        parsed = urlparse(value)
        if parsed.scheme == "unix":
            if not parsed.path:
                raise ValueError("unix:// needs a socket path, e.g. unix:///run/user/1000/iris/wyoming.sock")
            return value
        if parsed.scheme != "tcp":
            raise ValueError(f"must be tcp://HOST:PORT or unix:///PATH, not {value!r}")
        try:
            port = parsed.port
        except ValueError:
            port = None
        if not parsed.hostname or port is None or not 0 < port < 65536:
            raise ValueError(f"must name a host and a port (1-65535), e.g. {DEFAULT_URI}")
        return value

    @field_validator("token")
    @classmethod
    def _token(cls, value: str) -> str:
        if value and len(value) < MIN_TOKEN_CHARS:
            raise ValueError(f"a token shorter than {MIN_TOKEN_CHARS} characters can be guessed; "
                             "make one with: openssl rand -hex 16")  # fmt: skip
        return value

    @field_validator("allow")
    @classmethod
    def _allow(cls, value: list[str]) -> list[str]:
        return networks_list(value)

    def networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """``allow`` as networks."""
        return [ipaddress.ip_network(e, strict=False) for e in self.allow]

    @property
    def loopback(self) -> bool:
        """Bound to this machine only."""
        return is_loopback_host(bind_host(self.uri))

    def problems(self) -> list[str]:
        """What makes this section unsafe to serve: a wide bind without an allow-list or token."""
        out = []
        if self.token and self.token_file:
            out.append("serve.token: set serve.token or serve.token_file, not both")
        if not self.loopback and not (self.allow or self.token or self.token_file):
            out.append(
                f"serve.uri: {self.uri} is reachable from other machines and Wyoming has no "
                "authentication: set serve.allow (client networks, e.g. ['192.168.1.0/24']) or "
                "serve.token / serve.token_file, or bind to 127.0.0.1"
            )
        return out
