"""Every conversation IRIS keeps, one per origin, decided in one place.

An origin is where a turn comes from: ``desktop`` (this machine's microphone and
``iris ask``), ``satellite:NAME`` (an IRIS satellite, across its reconnects), or a Wyoming
client asking for answers (``handle``): ``wyoming:ID`` for the conversation id the client
sends in the transcript's ``context`` (Home Assistant sends one per chat), else
``wyoming:HOST:PORT`` for the connection. Turns of one origin never see another's.

The desktop's conversation is the home one, never evicted. The others are made on their
first turn and forgotten when unused for ``conversations.idle_s``, or, beyond
``conversations.keep``, least recently used first — except those ``hold()`` keeps (a
satellite while it is connected).

One model server holds one prompt cache. A turn from an origin cancels the other
conversations' warm-ups and tells their warmers the cache no longer holds them; when IRIS
goes idle, ``idle()`` warms the conversation of the latest turn: the one a follow-up
question will continue.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable

from iris_voice.conversation.history import Conversation
from iris_voice.conversation.responder import Assistant
from iris_voice.conversation.trace import TurnTrace

log = logging.getLogger(__name__)

DESKTOP = "desktop"
"""This machine's own conversation: the microphone, ``iris ask``."""


def satellite_origin(name: str) -> str:
    """The origin of an IRIS satellite's turns."""
    return f"satellite:{name}"


def wyoming_origin(context: object, peer: str) -> str:
    """The origin of a Wyoming ``transcript``: the client's conversation id when it sends one
    (at most 128 printable characters, no spaces), scoped to the client's host — a client
    elsewhere cannot name it — else its connection (``peer``, ``HOST:PORT``)."""
    if isinstance(context, dict):
        cid = context.get("conversation_id")
        if isinstance(cid, str) and 0 < len(cid := cid.strip()) <= 128 and _plain(cid):
            host = peer.rsplit(":", 1)[0] if ":" in peer else peer
            return f"wyoming:{host}/{cid}"
    return f"wyoming:{peer}"


def _plain(text: str) -> bool:
    """Printable and without whitespace: an id, not a line of its own in a log or status."""
    return text.isprintable() and not any(c.isspace() for c in text)


class Conversations:
    """The conversations by origin: ``get`` for a turn, ``forget`` for ``iris forget``,
    ``idle`` when IRIS has nothing to do."""

    def __init__(
        self,
        make: Callable[[], Assistant],
        *,
        keep: int,
        idle_s: float,
        home: Assistant | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._make = make
        self.keep = keep
        """Conversations kept besides the home one."""
        self.idle_s = idle_s
        """An unheld conversation unused this long is forgotten."""
        self._clock = clock
        self._by_origin: OrderedDict[str, tuple[Assistant, float]] = OrderedDict()
        """Least recently used first, with when each was last used (monotonic)."""
        self._held: set[str] = set()
        self.latest: str | None = None
        """The origin of the latest turn: the conversation the idle warm-up keeps cached."""
        self.home = home
        if home is not None:
            self._by_origin[DESKTOP] = (home, clock())

    def get(self, origin: str) -> Assistant:
        """The conversation of ``origin`` for a turn starting now (made on its first turn).
        Every other conversation's warm-up stops: the model now reads this one."""
        entry = self._by_origin.pop(origin, None)
        self._evict(room_for=1 if entry is None else 0)
        assistant = entry[0] if entry is not None else self._make()
        self._by_origin[origin] = (assistant, self._clock())
        if self.latest != origin:
            for other, (them, _used) in self._by_origin.items():
                if other != origin:
                    them.warmer.cancel()
                    them.warmer.lost()
        self.latest = origin
        return assistant

    def peek(self, origin: str) -> Assistant | None:
        """The conversation of ``origin`` if IRIS has one (nothing made, nothing touched)."""
        entry = self._by_origin.get(origin)
        return entry[0] if entry is not None else None

    def hold(self, origin: str) -> None:
        """Keep ``origin``'s conversation whatever its age (a connected satellite)."""
        self._held.add(origin)

    def release(self, origin: str) -> None:
        """``origin`` may be forgotten again by age or crowding."""
        self._held.discard(origin)
        self._evict()

    def forget(self, origin: str | None = None) -> dict[str, int]:
        """``iris forget [ORIGIN]``: what each forgotten conversation held, in turns. The home
        conversation is emptied, any other dropped; None: all of them."""
        names = list(self._by_origin) if origin is None else [origin] if origin in self._by_origin else []
        gone: dict[str, int] = {}
        for name in names:
            assistant, _used = self._by_origin[name]
            gone[name] = len(assistant.conversation)
            assistant.warmer.cancel()
            if name == DESKTOP:
                assistant.conversation.reset()
            else:
                del self._by_origin[name]
                if self.latest == name:
                    self.latest = None
        return gone

    def idle(self, origin: str | None = None) -> None:
        """IRIS has nothing to do: warm the conversation of the latest turn (only when that
        was ``origin``'s, if given: a turn of another origin may be running)."""
        self._evict()
        if origin is not None and origin != self.latest:
            return
        entry = self._by_origin.get(self.latest or "")
        if entry is not None:
            entry[0].idle()

    def listed(self) -> list[dict[str, object]]:
        """Each conversation for ``iris status``: its origin, turns, seconds since used."""
        now = self._clock()
        return [
            {"origin": name, "turns": len(a.conversation), "idle_s": round(now - used, 1)}
            for name, (a, used) in reversed(self._by_origin.items())
        ]

    def __len__(self) -> int:
        return len(self._by_origin)

    def __contains__(self, origin: object) -> bool:
        return origin in self._by_origin

    def _evict(self, room_for: int = 0) -> None:
        """Forget what has aged out, then the least recently used beyond ``keep``."""
        now = self._clock()
        for name, (assistant, used) in list(self._by_origin.items()):  # oldest first
            if name == DESKTOP or name in self._held:
                continue
            others = len(self._by_origin) - (DESKTOP in self._by_origin)
            if others + room_for > self.keep or now - used > self.idle_s:
                assistant.warmer.cancel()
                del self._by_origin[name]
                if self.latest == name:
                    self.latest = None
                log.info("conversation %s forgotten (unused %.0f s)", name, now - used)


class OriginResponder:
    """A ``Responder`` for one origin: each turn runs in that origin's conversation, taken
    from ``Conversations`` when it starts (the desktop pipeline's responder)."""

    def __init__(self, conversations: Conversations, origin: str) -> None:
        self.conversations = conversations
        self.origin = origin

    @property
    def assistant(self) -> Assistant:
        """The origin's conversation as it is now (made if it has none yet)."""
        return self.conversations.peek(self.origin) or self.conversations.get(self.origin)

    @property
    def conversation(self) -> Conversation:
        """The origin's history."""
        return self.assistant.conversation

    def sentences(
        self, text: str, trace: TurnTrace | None = None, hold: asyncio.Event | None = None
    ) -> AsyncIterator[str]:
        """One turn in the origin's conversation."""
        return self.conversations.get(self.origin).sentences(text, trace, hold)

    async def warmup(self) -> None:
        """Warm the model with the origin's conversation."""
        await self.conversations.get(self.origin).warmup()

    def idle(self) -> None:
        """Warm the cache for the latest turn's conversation, when this origin had it."""
        self.conversations.idle(self.origin)
