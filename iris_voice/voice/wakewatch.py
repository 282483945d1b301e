"""The wake-word half of the listener: when the wake-word model runs and what its
detections do (``Listener`` inherits it; the state it uses is the listener's own).

In wake-word mode an idle IRIS runs only Silero VAD; the wake model (ten times costlier)
runs while there is sound that may be speech, catching up on the last
``WAKE_GATE_BUFFER_S``. In a capture opened without the wake word it keeps listening for
the first ``WAKE_WATCH_S``, so "hey Jarvis, …" said from habit starts the question after
the phrase. While IRIS speaks, the echo guard may veto a detection in its own voice.
"""

from __future__ import annotations

import logging

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.events import Trigger, WakeWordDetected
from iris_voice.voice.heard import BargeIn, ListenMode

log = logging.getLogger("iris_voice.voice.listener")  # one logger for the listener's lines

FRAME_S = FRAME_SAMPLES / SAMPLE_RATE
WAKE_PRE_ROLL_S = 0.25
"""Audio kept from before a wake-word detection: the model fires a little after the word
ends, and someone who says "hey Jarvis what time…" in one breath has started the question."""
WAKE_GATE_THRESHOLD = 0.2
"""VAD probability that wakes the wake-word model (low: missing a wake word is worse than CPU)."""
WAKE_GATE_HOLD_S = 2.0
"""The wake-word model keeps running this long after the last speech-like frame."""
WAKE_GATE_BUFFER_S = 2.5
"""Audio the wake-word model catches up on when it wakes: its 1.28 s window of embeddings
reaches about 2.1 s back."""
WAKE_WATCH_S = 2.0
"""How long into a capture opened without the wake word (follow-up, ``always``) the wake
model still listens: "hey Jarvis, what's the date?" said from habit must not end at the
comma after "Jarvis" (a turn detector rightly calls "Hey Jarvis." a finished turn)."""
WAKE_HINT = 0.05
"""A wake score this high (speech that is not the phrase stays near 0.01) holds the end of
a watched capture's turn for ``WAKE_HINT_HOLD_S``: the phrase may be about to fire."""
WAKE_HINT_HOLD_S = 0.3


class WakeWatch:
    """The wake-word methods of ``Listener`` (a mixin: ``self`` is the listener, whose
    attributes these are)."""

    async def _gated_wake(self, frame: np.ndarray) -> None:
        """Run the wake-word model only while there is sound that may be speech.

        Silero costs a tenth of the wake-word model per frame, so in a quiet room IRIS
        idles on the VAD alone. When it hears something, the wake model catches up on
        the last ``WAKE_GATE_BUFFER_S`` of audio first, so it sees "hey Jarvis" whole.
        """
        self._unfed.append(frame)
        if await self.vad.probability(frame) >= WAKE_GATE_THRESHOLD:
            self._gate_until = self.position_s + WAKE_GATE_HOLD_S
        if self.position_s > self._gate_until:
            return
        batch = list(self._unfed)
        self._unfed.clear()
        for i, f in enumerate(batch):
            if await self._wake(f, during_speech=False):
                self._start(Trigger.WAKE_WORD, self._from_detection(batch, i))
                return

    def _from_detection(self, batch: list[np.ndarray], i: int) -> list[np.ndarray]:
        """A wake-word capture's first frames: up to ``WAKE_PRE_ROLL_S`` of ``batch`` before
        its detection at ``batch[i]`` (the catch-up of a quiet room has them; mid-speech the
        batch is that one frame), moved back by as much as the detector fires late
        (``late_s``, from the listener's pre-roll), and what was said after it."""
        base = max(0, i + 1 - max(1, round(WAKE_PRE_ROLL_S / FRAME_S)))
        late = round(self.wake.late_s / FRAME_S) if self.wake is not None else 0
        heard = [f for f, _ in self._pre]
        before = heard[: max(0, len(heard) - len(batch))]  # the pre-roll ends with the batch
        history = before + batch
        start = max(0, len(before) + base - late)
        return history[start : len(before) + i + 1] + batch[i + 1 :]

    async def _wake_in_capture(self, frame: np.ndarray, capture: list[np.ndarray]) -> bool:
        """In the first ``WAKE_WATCH_S`` of a capture opened without the wake word, run the
        wake model too; when it fires, the question starts after it: the capture opens
        again as a wake-word capture (True)."""
        backlog, self._wake_backlog = self._wake_backlog or [], []
        if len(capture) * FRAME_S > WAKE_WATCH_S:
            self._wake_backlog = None
            return False
        for f in [*backlog, frame]:
            fired = await self._wake(f, during_speech=False)
            if self._wake_score >= WAKE_HINT:
                # Its score rises over the phrase and crosses the threshold a little after
                # it ends: a turn detector asked at the comma would end the turn first.
                self._wake_hint_until = self.position_s + WAKE_HINT_HOLD_S
            if fired:
                n = self._pre_roll_frames()
                barge = self._mode == ListenMode.ANSWERING and self.cfg.barge_in != "off"
                if barge:  # said over an alarm's announcement: as a barge-in would
                    self._emit(BargeIn(Trigger.WAKE_WORD))
                self._start(Trigger.BARGE_IN if barge else Trigger.WAKE_WORD, capture[-n:])
                return True
        return False

    def _pre_roll_frames(self) -> int:
        """Frames kept from before a detection: ``WAKE_PRE_ROLL_S``, and as much again as
        the detector fires late (``wake.patience``), so the same audio comes before the question."""
        late = self.wake.late_s if self.wake is not None else 0.0
        return max(1, round((WAKE_PRE_ROLL_S + late) / FRAME_S))

    def _wake_pre_roll(self) -> list[np.ndarray]:
        n = self._pre_roll_frames()
        return [f for f, _ in list(self._pre)[-n:]]

    async def _wake(self, frame: np.ndarray, during_speech: bool) -> bool:
        if self.wake is None:
            return False
        score = self._wake_score = await self.wake.process(frame)
        if score < self.wake_threshold:
            return False
        if during_speech and self.guard is not None and not self.guard.wake_allowed():
            log.info("wake word (score %.2f) in IRIS's own reply: not an interruption", score)
            self.wake.reset()
            return False
        log.info(
            "wake word %s (score %.2f)%s", self.wake.name, score, " during speech" if during_speech else ""
        )
        self._publish(WakeWordDetected(self.wake.name, float(score), during_speech))
        self.wake.reset()
        return True
