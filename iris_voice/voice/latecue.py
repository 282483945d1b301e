"""A late answer is announced: a short spoken cue when no reply is ready in time.

On a desktop that is never idle the model may take seconds to read a question and write
its first clause (beside a compile, chat answers came 3.9 s after the question; beside
heavier work, none within 13 s). Silence that long reads as "IRIS did not hear me", and
the person asks again, which cuts the answer that was on its way. So when a voice turn
has nothing to say ``after_s`` after the end of the question (and at least ``GRACE_S``
after its transcript), IRIS says ``text`` ("One moment.") and the answer follows it.

The cue is synthesized once, ahead of time (``prepare``), and kept as samples: on a
loaded machine synthesizing it at the moment it is needed would itself be late. It is
not the model's words, so it never enters the conversation's history; the echo guard
is told it like any sentence IRIS says.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import numpy as np

from iris_voice.config import TtsConfig
from iris_voice.speech.tts import Synthesizer
from iris_voice.voice.heard import Utterance

log = logging.getLogger(__name__)

GRACE_S = 0.3
"""The least a reply is waited for once the question is transcribed: a slow transcription
must not put the cue before an answer the fast path has ready a moment later."""


@dataclass
class LateCue:
    """What IRIS says when a reply is late, and after how long."""

    text: str = "One moment."
    """The words of the cue."""
    after_s: float = 2.0
    """Seconds from the end of the question with no reply ready before the cue is said."""
    _clip: np.ndarray | None = field(default=None, init=False, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    @classmethod
    def from_config(cls, cfg: TtsConfig) -> LateCue | None:
        """The cue ``[tts]`` asks for (``late_cue``, ``late_cue_s``); None when it is off."""
        return cls(cfg.late_cue, cfg.late_cue_s) if cfg.late_cue_s > 0 else None

    @property
    def ready(self) -> bool:
        """The cue's audio is synthesized."""
        return self._clip is not None

    async def prepare(self, tts: Synthesizer) -> np.ndarray:
        """The cue's audio at ``tts.sample_rate``, synthesized on the first call (again
        only if the voice failed before)."""
        async with self._lock:
            if self._clip is None:
                chunks = [chunk async for chunk in tts.stream(self.text)]
                self._clip = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
                log.debug("late cue %r ready: %.2f s", self.text, len(self._clip) / tts.sample_rate)
            return self._clip


def cue_deadline(cue: LateCue | None, utt: Utterance) -> float | None:
    """When a reply to ``utt`` not yet begun is late (``after_s`` past the end of its
    speech, on the listener's clock); None when there is no cue or it is switched off."""
    if cue is None or cue.after_s <= 0:
        return None
    return utt.decided_at - utt.hangover_s + cue.after_s
