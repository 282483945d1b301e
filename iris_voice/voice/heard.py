"""What the listener tells the pipeline, and the modes it listens in.

One typed stream: every ``Heard`` item arrives on one bounded queue, in the order it
happened, so the pipeline never needs a callback or a shared flag to follow the listener.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from iris_voice.events import Trigger
from iris_voice.speech.stt import DecodeSession


class ListenMode(StrEnum):
    """What the listener does with frames (captures aside, which run to their end)."""

    IDLE = "idle"
    """Waiting for the activation: the wake word, any speech (``always``), a follow-up."""
    ANSWERING = "answering"
    """IRIS is speaking or thinking: frames are checked for a barge-in only."""
    MUTED = "muted"
    """``iris mute``: the microphone is ignored."""


@dataclass(frozen=True)
class Utterance:
    """One captured question, ready for speech-to-text."""

    audio: np.ndarray
    """int16 mono samples at 16 kHz, pre-roll included."""
    trigger: Trigger
    """What opened it."""
    decided_at: float
    """``time.monotonic()`` when the end of speech was decided."""
    hangover_s: float
    """Silence heard after the last speech before deciding: the VAD hangover's share of latency."""
    speech_end_s: float
    """Where speech ended, in seconds of the audio stream since the listener started."""
    session: DecodeSession | None = None
    """The incremental decode of this utterance, fed while it was spoken (``stt.incremental``)."""
    end_reason: str = "silence"
    """How its end was decided: ``silence`` (the hangover), ``turn_complete`` (the turn
    detector), ``max_length``."""
    turn_probability: float | None = None
    """The turn detector's last verdict in this capture (None without one)."""
    lead: str = ""
    """Words the audio is known to start with: the wake phrase a wake-word capture keeps
    ("Hey Jarvis,"); "" for other captures."""


@dataclass(frozen=True)
class CaptureStarted:
    """A question is being recorded."""

    trigger: Trigger
    """What opened it."""


@dataclass(frozen=True)
class UtteranceReady:
    """A question was captured and its end decided."""

    utterance: Utterance
    """The audio and how it came to be."""


@dataclass(frozen=True)
class BargeIn:
    """The user interrupted IRIS; the capture of what they say next has begun."""

    how: Trigger | str
    """``wake_word`` or ``voice``."""


@dataclass(frozen=True)
class CaptureTimedOut:
    """Activated, but nobody spoke within ``audio.no_speech_timeout_s``."""


@dataclass(frozen=True)
class Speculation:
    """The speaker paused and the words so far are transcribed; the end of the question is
    not decided yet (``stt.speculative``)."""

    text: str
    """The transcript up to the pause (wake phrase included, as Whisper wrote it)."""


@dataclass(frozen=True)
class SpeculationDropped:
    """After a ``Speculation``: those words were not the question (the speaker went on, or
    the capture was dropped by ``iris mute``)."""


Heard = CaptureStarted | UtteranceReady | BargeIn | CaptureTimedOut | Speculation | SpeculationDropped
"""Everything the listener tells the pipeline, on one queue."""
