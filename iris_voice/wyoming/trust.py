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
- **user** — a client on this machine (loopback TCP or the Unix socket) is trusted like
  the allow-list only when it runs as the serving user: the kernel says who it is
  (``SO_PEERCRED`` on a Unix socket, the socket's owner in ``/proc/net/tcp`` for loopback
  TCP). Another local user needs the token; with no token it is refused (``not-allowed``).
  Where the transport cannot tell (no ``/proc``), loopback is trusted as before.

A wrong token is answered after ``AUTH_FAIL_DELAY_S`` (guessing costs time) and logged
once per peer per minute (``RefusalLog``), not once per guess.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import socket
import struct
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.ping import Ping

from iris_voice.config import ServeConfig
from iris_voice.config.serve import MIN_TOKEN_CHARS
from iris_voice.errors import ConfigError

AUTH_TYPE = "iris-auth"
"""The event a client sends with the token: ``Event("iris-auth", {"token": "…"})``."""
AUTH_OK_TYPE = "iris-auth-ok"
"""IRIS's answer to a right token."""
MAX_TOKEN_CHARS = 1024
AUTH_FAIL_DELAY_S = 1.0
"""How long a wrong token waits for its refusal: a guess costs a second, not a microsecond."""
PROC_TCP = ("/proc/net/tcp", "/proc/net/tcp6")
PROC_BLOCK = 1 << 16
"""Bytes read from the socket table at a time."""

log = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an address; an IPv4 address seen as IPv6 (``::ffff:192.168.1.5``) as IPv4."""
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%eth0)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def is_local_peer(host: str | None) -> bool:
    """Is a client at ``host`` on this machine: a Unix socket (``host`` None) or loopback?"""
    if host is None:
        return True
    addr = _address(host)
    return addr is not None and addr.is_loopback


def peer_allowed(host: str | None, networks: Sequence[Network]) -> bool:
    """May a client at ``host`` connect? Loopback (and a Unix socket: ``host`` None)
    always may; with no ``networks`` everyone may; else ``host`` must be inside one."""
    if is_local_peer(host):
        return True
    addr = _address(host or "")
    if addr is None:
        return False
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
        if Describe.is_type(event.type) or Ping.is_type(event.type):
            return True, None  # what the service offers is no secret (Home Assistant asks first)
        if event.type == AUTH_TYPE:
            given = event.data.get("token") if isinstance(event.data, dict) else None
            # surrogatepass: a lone surrogate in the JSON must be a wrong token, not a crash
            if isinstance(given, str) and hmac.compare_digest(
                given.encode("utf-8", "surrogatepass"), self._token
            ):
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


def _proc_address(host: str, port: int, v6: bool) -> str:
    """``host:port`` as ``/proc/net/tcp[6]`` writes it: each 32-bit word in host byte order."""
    addr = ipaddress.ip_address(host.split("%", 1)[0])
    if v6 and addr.version == 4:
        addr = ipaddress.IPv6Address(f"::ffff:{addr}")
    raw = addr.packed
    words = [raw[i : i + 4] for i in range(0, len(raw), 4)]
    hexed = "".join((w[::-1] if sys.byteorder == "little" else w).hex().upper() for w in words)
    return f"{hexed}:{port:04X}"


def _find_owner(path: str, key: bytes) -> int | None:
    """The uid (8th field) of the line of ``path`` holding ``key``, or None. Read in blocks
    with one substring search each, never whole: with thousands of sockets in TIME_WAIT the
    table is megabytes, a flood of connections reads it each time, and megabyte strings
    made on worker threads stay in their malloc arenas as resident memory."""
    tail = b""
    with open(path, "rb") as file:
        while block := file.read(PROC_BLOCK):
            buf = tail + block
            at = buf.find(key)
            if at < 0:
                tail = buf[buf.rfind(b"\n") + 1 :]  # a partial last line goes on with the next block
                continue
            end = buf.find(b"\n", at)
            while end < 0 and (more := file.read(4096)):
                buf += more
                end = buf.find(b"\n", at)
            fields = buf[buf.rfind(b"\n", 0, at) + 1 : end if end >= 0 else None].split()
            return int(fields[7]) if len(fields) > 7 else None
    return None


def tcp_peer_uid(peer: tuple[str, int], local: tuple[str, int]) -> int | None:
    """The uid owning the client end of a loopback TCP connection, read from
    ``/proc/net/tcp[6]`` (the client's socket: its local address is our peer, its remote
    address is us); None when it cannot be found."""
    try:
        hosts = [ipaddress.ip_address(h.split("%", 1)[0]) for h in (peer[0], local[0])]
    except ValueError:
        return None
    # An IPv4 client of a dual-stack server is seen as ::ffff:a.b.c.d; its own socket is IPv4.
    plain = [str(h.ipv4_mapped) if isinstance(h, ipaddress.IPv6Address) and h.ipv4_mapped else str(h)
             for h in hosts]  # fmt: skip
    for path in PROC_TCP:
        v6 = path.endswith("6")
        if not v6 and any(":" in h for h in plain):
            continue  # an IPv6 pair is never in the IPv4 table
        try:
            want = (_proc_address(plain[0], peer[1], v6), _proc_address(plain[1], local[1], v6))
            uid = _find_owner(path, f" {want[0]} {want[1]} ".encode("ascii"))
        except (OSError, ValueError):
            continue
        if uid is not None:
            return uid
    return None


def peer_uid(sock: socket.socket | None, peer: object, local: object) -> int | None:
    """Who is on the other end of a local connection: the uid of a Unix socket's peer
    (``SO_PEERCRED``) or of a loopback TCP client; None when the transport cannot tell."""
    if sock is None:
        return None
    if sock.family == socket.AF_UNIX:
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return None
        return struct.unpack("3i", creds)[1]
    if isinstance(peer, tuple) and isinstance(local, tuple):
        return tcp_peer_uid((str(peer[0]), int(peer[1])), (str(local[0]), int(local[1])))
    return None


def same_user(uid: int | None) -> bool:
    """Is a local client's ``uid`` the serving user (True when it could not be told)?"""
    return uid is None or uid == os.getuid()


def other_user(uid: int | None) -> Event:
    """The ``error`` event for another local user's connection when there is no token."""
    why = f"connections from other users (uid {uid}) need serve.token"
    return Error(text=why, code="not-allowed").event()


class RefusalLog:
    """Refusals logged once per peer per minute; the rest counted and said with the next line."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self._last: dict[str, tuple[float, int]] = {}

    def warn(self, peer: str, message: str) -> bool:
        """Log ``message`` for ``peer`` unless one was logged within ``every_s``; True if logged."""
        now = time.monotonic()
        last, quiet = self._last.get(peer, (-self.every_s, 0))
        if now - last < self.every_s:
            self._last[peer] = (last, quiet + 1)
            return False
        more = f" (and {quiet} more refusals in the last {self.every_s:.0f} s)" if quiet else ""
        log.warning("wyoming client %s refused: %s%s", peer, message, more)
        if len(self._last) > 4096:  # a spread of peers must not grow this for ever
            self._last.clear()
        self._last[peer] = (now, 0)
        return True
