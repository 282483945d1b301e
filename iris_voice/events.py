"""Everything that happens in IRIS, as frozen dataclasses.

Stages publish events; logs, ``iris status``, traces and tests subscribe. Each field
has a docstring so a subscriber never has to guess a unit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

log = logging.getLogger(__name__)


class State(StrEnum):
    """Where the voice pipeline is: ``iris status`` and ``StateChanged`` say it."""

    IDLE = "idle"
    LISTENING = "listening"
    TRANSCRIBING = "transcribing"
    THINKING = "thinking"
    SPEAKING = "speaking"


class Trigger(StrEnum):
    """What opened a question."""

    WAKE_WORD = "wake_word"
    PUSH_TO_TALK = "push_to_talk"
    ALWAYS = "always"
    FOLLOW_UP = "follow_up"
    BARGE_IN = "barge_in"
    ALARM = "alarm"
    """Speech while an alarm rings, without the wake word: acted on only if it says "stop"."""


class ExecutionPath(StrEnum):
    """How a turn was answered."""

    NATIVE = "native"
    """The model with native tool calling."""
    TEXT = "text"
    """The model with tools described in its prompt and calls written as text."""
    FAST = "fast"
    """The intent fast path: no model at all."""
    BOOST = "boost"
    """A planner model directing the local model."""


@dataclass(frozen=True)
class Event:
    """Base class of every event."""


@dataclass(frozen=True)
class TurnStarted(Event):
    """A user request entered the chat loop."""

    text: str
    """What the user said or typed."""


@dataclass(frozen=True)
class TurnDiscarded(Event):
    """A turn started before the user was done was dropped: they went on speaking, or
    said something else. Nothing of it was spoken, changed or remembered."""

    text: str
    """The words it was started with."""


@dataclass(frozen=True)
class ToolCalled(Event):
    """The model called a tool and IRIS ran it."""

    name: str
    """Tool name."""
    arguments: dict[str, Any]
    """Validated arguments (or as given, when invalid)."""
    ok: bool
    """False when the result is an ``Error: …`` for the model."""
    result: str
    """What the model read back."""
    duration_ms: float
    """Time spent validating and running the tool."""


@dataclass(frozen=True)
class SentenceReady(Event):
    """A complete sentence of the reply is ready to be spoken."""

    text: str
    """The sentence, with any tool-call text removed."""
    index: int
    """0 for the first sentence of the reply."""


@dataclass(frozen=True)
class TurnFinished(Event):
    """The chat loop produced its final reply."""

    reply: str
    """The full spoken reply."""
    execution_path: ExecutionPath
    """How the turn was answered."""
    trace: dict[str, Any] = field(default_factory=dict)
    """The turn's trace (see ``iris ask --json``)."""


@dataclass(frozen=True)
class TimerChanged(Event):
    """A timer or reminder was set, changed (time added, paused, resumed) or cancelled:
    a satellite shows it (Wyoming's ``timer-started``/``-updated``/``-cancelled``)."""

    timer_id: int
    kind: str
    """``timer`` or ``reminder``."""
    label: str
    change: str
    """``started``, ``updated`` or ``cancelled``."""
    seconds_left: float
    """Seconds until it falls due (as it was, for a cancelled one)."""
    running: bool
    """Counting down (False: paused or cancelled)."""
    origin: str = ""
    """The satellite it was set from (``wyoming.hub``); "" for this machine."""


@dataclass(frozen=True)
class TimerFinished(Event):
    """A timer or reminder fell due."""

    timer_id: int
    """Database id of the timer."""
    kind: str
    """``timer`` or ``reminder``."""
    label: str
    """Timer label or reminder message ("" when none was given)."""
    due_at: float
    """When it was due, as a Unix timestamp."""
    missed: bool
    """True when it fell due while IRIS was not running."""
    message: str
    """A sentence to speak, e.g. "Your pasta timer is done."."""
    origin: str = ""
    """The satellite it was set from, where it rings (``wyoming.hub``); "" for this machine."""


@dataclass(frozen=True)
class TimerStoreRecovered(Event):
    """The timers database was damaged: it was moved aside and a new, empty one started.

    Timers and reminders set before are in the old file, not the new one, so they will
    not go off; the user should hear that once.
    """

    path: str
    """The database in use now (a fresh file at the configured path)."""
    moved_to: str
    """Where the damaged file is kept (``timers.db.corrupt-<time>``, with its -wal/-shm)."""
    reason: str
    """What SQLite found wrong, e.g. "file is not a database"."""
    message: str
    """A sentence to speak, e.g. "My timer list was damaged, so I started a new one. …"."""


@dataclass(frozen=True)
class LlmUnavailable(Event):
    """The language-model server could not be reached or answered with an error."""

    code: str
    """Stable error code, e.g. ``llm-unreachable``."""
    detail: str
    """What failed and how to fix it."""


@dataclass(frozen=True)
class StateChanged(Event):
    """The voice pipeline moved to another state."""

    state: State
    """The new state."""


@dataclass(frozen=True)
class WakeWordDetected(Event):
    """The wake word was heard."""

    name: str
    """The wake word model, e.g. ``hey_jarvis``."""
    score: float
    """Detector score 0..1."""
    during_speech: bool
    """True when it interrupted IRIS speaking (barge-in)."""


@dataclass(frozen=True)
class SpeechStarted(Event):
    """The VAD heard the user start speaking."""

    at_s: float
    """Position in the audio stream, seconds."""


@dataclass(frozen=True)
class SpeechEnded(Event):
    """The VAD decided the utterance is over."""

    duration_s: float
    """Length of the utterance sent to STT, seconds (pre-roll included)."""
    timed_out: bool
    """True when nobody spoke after activation (no utterance follows)."""


@dataclass(frozen=True)
class Transcript(Event):
    """Speech-to-text finished."""

    text: str
    """What the user said ("" when nothing intelligible)."""
    stt_ms: float
    """Decode time."""


@dataclass(frozen=True)
class PlaybackStarted(Event):
    """The first sample of a reply reached the speaker."""

    first_audio_ms: float
    """From the end of the user's speech to this sample."""


@dataclass(frozen=True)
class PlaybackStopped(Event):
    """Speech was cut off (barge-in, ``iris stop``) or ended."""

    interrupted: bool
    """True when cut off before the end."""
    spoken: str
    """The part of the reply that was actually heard."""


@dataclass(frozen=True)
class AudioDeviceProblem(Event):
    """A microphone or speaker is missing or failed; IRIS keeps retrying."""

    device: str
    """Which device (name or "default")."""
    detail: str
    """What failed."""


Subscriber = Callable[[Event], Any]


class EventBus:
    """Fan-out of events to subscribers; a failing subscriber never stops the publisher."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._queues: list[asyncio.Queue[Event]] = []

    def subscribe(self, callback: Subscriber) -> None:
        """Call ``callback(event)`` for every event (it must not block)."""
        self._subscribers.append(callback)

    def queue(self, maxsize: int = 256) -> asyncio.Queue[Event]:
        """A bounded queue that receives every event; the oldest is dropped when full."""
        q: asyncio.Queue[Event] = asyncio.Queue(maxsize)
        self._queues.append(q)
        return q

    def publish(self, event: Event) -> None:
        """Deliver ``event`` to every subscriber and queue."""
        log.debug("event %s", event)
        for cb in list(self._subscribers):
            try:
                cb(event)
            except Exception:  # a broken subscriber must not break the pipeline
                log.exception("event subscriber failed on %s", type(event).__name__)
        for q in self._queues:
            if q.full():
                q.get_nowait()
            q.put_nowait(event)
