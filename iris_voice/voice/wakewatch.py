"""The wake-word half of the listener: when the wake-word model runs and what its
detections mean (``WakeWatch``, an object the ``Listener`` holds; it keeps its own state and
is told the listener's: the frame's position, the pre-roll, whether IRIS is speaking).

In wake-word mode an idle IRIS runs only Silero VAD; the wake model (ten times costlier)
runs while there is sound that may be speech, catching up on the last
``WAKE_GATE_BUFFER_S``. In a capture opened without the wake word it keeps listening for
the first ``WAKE_WATCH_S``, so "hey Jarvis, …" said from habit starts the question after
the phrase. While IRIS speaks, the echo guard may veto a detection in its own voice.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.events import Event, WakeWordDetected
from iris_voice.speech.vad import SpeechDetector
from iris_voice.speech.wake import WakeDetector
from iris_voice.voice.echoguard import EchoGuard

log = logging.getLogger("iris_voice.voice.listener")  # one logger for the listener's lines

FRAME_S = FRAME_SAMPLES / SAMPLE_RATE
WAKE_PRE_ROLL_S = 1.0
"""Audio kept from before a wake-word detection: the whole phrase (the model fires a
little after it ends). With only the end of it, a late detection or a speaker who runs
"hey Jarvis what time…" together loses the question's first words, and Whisper guesses
the rest ("What time did you learn?"); with the phrase, it hears the sentence as said and
is told it opens with the phrase (``Utterance.lead``). (``tools/bench/wake_capture``.)"""
WAKE_CUT_S = 0.25
"""The pre-roll with ``wake.keep_phrase = false``: only the end of the phrase."""
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
    """When the wake-word model runs, and what a detection opens."""

    def __init__(
        self,
        wake: WakeDetector | None,
        vad: SpeechDetector,
        threshold: float,
        publish: Callable[[Event], None],
        guard: Callable[[], EchoGuard | None],
        pre_roll_s: float = WAKE_PRE_ROLL_S,
    ) -> None:
        self.wake = wake
        self.pre_roll_s = pre_roll_s
        """Audio kept from before a detection (``WAKE_PRE_ROLL_S`` or ``WAKE_CUT_S``)."""
        self.vad = vad
        self.threshold = threshold
        """Score at which the wake word counts (``wake.threshold``)."""
        self._publish = publish
        self._guard = guard
        self._unfed: deque[np.ndarray] = deque(maxlen=round(WAKE_GATE_BUFFER_S / FRAME_S))
        self._recent: deque[np.ndarray] = deque(maxlen=self._unfed.maxlen)  # a capture's pre-roll
        self._recent_at = -1.0  # the position of its last frame
        self._gate_until = -1.0
        self._backlog: list[np.ndarray] | None = None  # a watched capture's frames not yet seen
        self.score = 0.0
        """The wake model's latest score."""
        self._hint_until = 0.0  # no end of turn before this (``WAKE_HINT``)

    @property
    def watching(self) -> bool:
        """A capture opened without the wake word is being watched (``WAKE_WATCH_S``)."""
        return self._backlog is not None

    def hinted(self, position_s: float) -> bool:
        """The wake model may yet fire in a watched capture: hold its end of turn."""
        return position_s < self._hint_until

    def watch(self, frames: list[np.ndarray] | None) -> None:
        """Watch a new capture from ``frames`` (its pre-roll), or stop watching (None)."""
        self._backlog = list(frames) if frames is not None else None
        if frames is not None:
            self.reset()

    def quiet(self) -> None:
        """Forget audio not yet fed to the model (IRIS's own echo, say)."""
        self._unfed.clear()
        self._recent.clear()
        self.reset()

    def reset(self) -> None:
        """Clear the model's buffer (stale audio must not fire again)."""
        if self.wake is not None:
            self.wake.reset()

    async def gated(self, frame: np.ndarray, position_s: float) -> list[np.ndarray] | None:
        """Run the wake-word model only while there is sound that may be speech; the frames
        of a wake-word capture when it fires, else None.

        Silero costs a tenth of the wake-word model per frame, so in a quiet room IRIS
        idles on the VAD alone. When it hears something, the wake model catches up on
        the last ``WAKE_GATE_BUFFER_S`` of audio first, so it sees "hey Jarvis" whole.
        """
        self._unfed.append(frame)
        if position_s - self._recent_at > 1.5 * FRAME_S:
            self._recent.clear()  # frames were not idle's since (a capture, a reply): not a pre-roll
        self._recent.append(frame)
        self._recent_at = position_s
        if await self.vad.probability(frame) >= WAKE_GATE_THRESHOLD:
            self._gate_until = position_s + WAKE_GATE_HOLD_S
        if position_s > self._gate_until:
            return None
        batch = list(self._unfed)
        self._unfed.clear()
        for i, f in enumerate(batch):
            if await self.fired(f, during_speech=False):
                return self._from_detection(batch, i)
        return None

    def _from_detection(self, batch: list[np.ndarray], i: int) -> list[np.ndarray]:
        """A wake-word capture's first frames: the last ``pre_roll_frames()`` up to the
        detection at ``batch[i]`` (the catch-up of a quiet room has them in ``batch``;
        mid-speech the batch is that one frame), and what was said after it."""
        after = batch[i + 1 :]
        upto = list(self._recent)[: len(self._recent) - len(after)]
        return upto[-self.pre_roll_frames() :] + after

    async def in_capture(self, frame: np.ndarray, capture_s: float, position_s: float) -> bool:
        """In the first ``WAKE_WATCH_S`` (``capture_s`` so far) of a watched capture, run the
        wake model too; True when it fires: the question starts after it."""
        backlog, self._backlog = self._backlog or [], []
        if capture_s > WAKE_WATCH_S:
            self._backlog = None
            return False
        for f in [*backlog, frame]:
            fired = await self.fired(f, during_speech=False)
            if self.score >= WAKE_HINT:
                # Its score rises over the phrase and crosses the threshold a little after
                # it ends: a turn detector asked at the comma would end the turn first.
                self._hint_until = position_s + WAKE_HINT_HOLD_S
            if fired:
                return True
        return False

    def pre_roll_frames(self) -> int:
        """Frames kept from before a detection: ``pre_roll_s``, and as much again as the
        detector fires late (``wake.patience``), so the same audio comes before the question."""
        late = self.wake.late_s if self.wake is not None else 0.0
        return max(1, round((self.pre_roll_s + late) / FRAME_S))

    async def fired(self, frame: np.ndarray, during_speech: bool) -> bool:
        """Feed ``frame`` to the model; True on a detection (over IRIS's own voice the echo
        guard may veto it)."""
        if self.wake is None:
            return False
        score = self.score = await self.wake.process(frame)
        if score < self.threshold:
            return False
        guard = self._guard()
        if during_speech and guard is not None and not guard.wake_allowed():
            log.info("wake word (score %.2f) in IRIS's own reply: not an interruption", score)
            self.wake.reset()
            return False
        log.info(
            "wake word %s (score %.2f)%s", self.wake.name, score, " during speech" if during_speech else ""
        )
        self._publish(WakeWordDetected(self.wake.name, float(score), during_speech))
        self.wake.reset()
        return True
