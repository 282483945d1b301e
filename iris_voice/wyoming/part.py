"""The seam of ``iris serve``: one Wyoming connection, and the parts that answer its events.

IRIS as a Wyoming service does several jobs on one port — speech to text, text to speech,
``handle`` (text in, IRIS's answer out) and the hub of satellites in other rooms. Each job
is a ``ServicePart``; the server (``wyoming.server``) reads events from a connection and offers
each one to its parts in order until one takes it, and builds ``describe``'s ``info`` from
what every part declares. A part keeps per-connection state in ``Connection.state`` under
its own key, so parts never need to know about each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from wyoming.event import Event


@dataclass
class Connection:
    """One client of ``iris serve`` (Home Assistant, a satellite, a script)."""

    peer: str
    """The client's address as ``host:port`` (for logs and ``iris status``)."""
    write_event: Callable[[Event], Awaitable[None]]
    """Send an event to this client (serialized per connection by the server)."""
    state: dict[str, Any] = field(default_factory=dict)
    """Per-connection state, one key per part (e.g. an utterance being received)."""
    gone: Callable[[], bool] = lambda: False
    """Whether the client has closed its side: work only it would read is not started."""


class ServicePart(Protocol):
    """One job of the Wyoming service."""

    def describe(self) -> dict[str, list[Any]]:
        """What this part adds to ``info``: field name of ``wyoming.info.Info`` (``asr``,
        ``tts``, ``handle``, …) → the programs it offers."""
        ...

    async def handle(self, event: Event, conn: Connection) -> bool:
        """Answer ``event`` from ``conn`` when it is this part's; False to let the next
        part see it."""
        ...

    async def closed(self, conn: Connection) -> None:
        """``conn`` is gone: drop what the part kept for it."""
        ...

    async def aclose(self) -> None:
        """The service is stopping: end the work the part runs on its own (turns, timers)."""
        ...
