"""The service's slots: admitted clients within ``serve.max_clients``, and a pool of pending ones.

A new connection is *pending* until it is admitted (past the gates, with its first real
event); pending connections have their own small pool (``serve.max_pending``) in which a
newcomer closes the oldest silent one, so strangers that connect and wait can never lock out
a client that talks at once. When ``serve.max_clients`` are admitted, one that has been
silent ``IDLE_MAKES_ROOM_S`` with nothing open in any part gives its slot to the newcomer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from iris_voice.config import ServeConfig

log = logging.getLogger(__name__)

PENDING_GRACE_S = 0.25
"""How long a new connection may wait to send its first byte before a newer one may close it."""
PENDING_OVERFLOW = 8
"""How many times ``serve.max_pending`` connections inside their grace may be pending at once."""
IDLE_MAKES_ROOM_S = 5.0
"""An admitted client silent this long, with nothing open in any part, gives its slot to a
newcomer when ``serve.max_clients`` are in (one-request clients that stay connected held
every slot until ``serve.idle_timeout_s``)."""


class Client(Protocol):
    """What the slots need of a connection (``server.ServeHandler``)."""

    conn: Any
    admitted: bool
    pending_since: float
    last_event_at: float
    answering: bool

    def has_input(self) -> bool:
        """Bytes from the client wait to be read."""
        ...

    def evict(self) -> None:
        """Close the connection to make room."""
        ...


class Slots:
    """The admitted clients and the pending pool of one service."""

    def __init__(self, cfg: ServeConfig) -> None:
        self.cfg = cfg
        self.clients: dict[str, Client] = {}
        """Admitted clients by ``host:port``."""
        self.pending: dict[str, Client] = {}
        """Connections not yet admitted, oldest first."""

    def hold_pending(self, handler: Client) -> None:
        """Count ``handler`` as pending. When the pool is full the oldest pending connection
        that has sent nothing for ``PENDING_GRACE_S`` is closed: a client whose request is
        already on its way is never the one to go, and every connection gets the grace to send
        its first byte. Connections inside their grace may overflow the pool up to
        ``PENDING_OVERFLOW`` times its size; beyond that the oldest silent one goes regardless."""
        now = time.monotonic()
        handler.pending_since = now
        while len(self.pending) >= self.cfg.max_pending:
            victim = self._silent(lambda h: now - h.pending_since >= PENDING_GRACE_S)
            if victim is None and len(self.pending) >= self.cfg.max_pending * PENDING_OVERFLOW:
                victim = self._silent(lambda h: True) or next(iter(self.pending.values()))
            if victim is None:
                break
            del self.pending[victim.conn.peer]
            victim.evict()
        self.pending[handler.conn.peer] = handler

    def _silent(self, old_enough: Callable[[Client], bool]) -> Client | None:
        """The oldest pending connection that is ``old_enough`` and has sent nothing."""
        for h in self.pending.values():  # oldest first
            if not old_enough(h):
                return None  # the rest are younger still
            if not h.has_input():
                return h
        return None

    def admit(self, handler: Client) -> bool:
        """Move ``handler`` from pending to the clients; False when ``max_clients`` are in."""
        self.pending.pop(handler.conn.peer, None)
        if len(self.clients) >= self.cfg.max_clients and (idle := self._idlest()) is not None:
            log.info("wyoming client %s idle for %.0f s: closed to make room for %s", idle.conn.peer,
                     time.monotonic() - idle.last_event_at, handler.conn.peer)  # fmt: skip
            del self.clients[idle.conn.peer]
            idle.evict()
        if len(self.clients) >= self.cfg.max_clients:
            return False
        handler.admitted = True
        self.clients[handler.conn.peer] = handler
        log.debug("wyoming client %s admitted", handler.conn.peer)  # Home Assistant: one per request
        return True

    def _idlest(self) -> Client | None:
        """The admitted client silent longest, if for ``IDLE_MAKES_ROOM_S`` and holding nothing
        open in any part (a satellite, an utterance, a turn keep their state)."""
        now = time.monotonic()
        idle = [
            h
            for h in self.clients.values()
            if not (h.conn.state or h.answering) and now - h.last_event_at >= IDLE_MAKES_ROOM_S
        ]
        return min(idle, key=lambda h: h.last_event_at, default=None)
