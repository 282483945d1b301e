"""When a turn ends: the silence endpointer, and the turn detector asked at each pause.

``audio.end_of_turn = "silence"`` is the plain rule: a turn ends after
``audio.vad_hangover_ms`` of silence (``Segmenter``). With ``"smart_turn"`` the segmenter
waits up to ``audio.end_of_turn_max_ms`` instead, and ``TurnEnd`` asks the turn detector
once per pause, after ``CHECK_S`` of silence: a turn it calls complete ends as soon as
the answer is there; one it calls unfinished ("set a timer for…") waits for more speech,
or for the long silence. Speech that resumes drops a pending question: the next pause
asks again, with the new words.

The listener calls ``frame`` once per captured frame with the segmenter's silence; the
detector runs in its own task, so a frame never waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import numpy as np

from iris_voice.speech.turn import TurnDetector

log = logging.getLogger(__name__)

CHECK_S = 0.16
"""Silence after which the detector is asked (five 32 ms frames). Silero marks the last
syllable's tail as silence a frame or two late, and the model was trained on turns that end
in a short silence; at ~100 ms it called some finished questions unfinished."""
_EPS = 1e-9


class TurnEnd:
    """Asks a ``TurnDetector`` at each pause of a capture; says when the turn is over."""

    def __init__(self, detector: TurnDetector, threshold: float = 0.5, check_s: float = CHECK_S) -> None:
        self.detector = detector
        self.threshold = threshold
        """Probability from which a turn counts as complete (``audio.end_of_turn_threshold``)."""
        self.check_s = check_s
        self._task: asyncio.Task[float] | None = None
        self._asked = False  # this pause was already put to the detector
        self._asked_at = 0.0
        self.last: float | None = None
        """The detector's latest verdict in this capture."""
        self.last_ms: float | None = None
        """How long the latest verdict took (audio copy, features, inference)."""

    def reset(self) -> None:
        """A new capture: forget the last one's pause and verdict."""
        self._drop()
        self._asked = False
        self.last = self.last_ms = None

    def _drop(self) -> None:
        if self._task is not None:
            self._task.cancel()  # the thread finishes its inference; the verdict is ignored
            self._task = None

    def frame(self, silence_s: float, audio: Callable[[], np.ndarray]) -> bool:
        """One captured frame; ``silence_s`` is the segmenter's silence since the last
        speech (0 while speech goes on), ``audio`` gives the capture so far. True when the
        detector has just called the turn complete and the silence still holds."""
        if silence_s <= 0:
            self._drop()  # speech again: the pause's question is moot
            self._asked = False
            return False
        if not self._asked:
            if silence_s + _EPS < self.check_s:
                return False
            self._asked = True
            self._asked_at = time.perf_counter()
            self._task = asyncio.get_running_loop().create_task(
                self.detector.probability(audio()), name="end-of-turn"
            )
            return False
        task = self._task
        if task is None or not task.done():
            return False
        self._task = None
        with contextlib.suppress(asyncio.CancelledError):
            if (exc := task.exception()) is not None:
                log.warning("end-of-turn detector failed (waiting for the silence instead): %s", exc)
                return False
            self.last = task.result()
            self.last_ms = round((time.perf_counter() - self._asked_at) * 1000, 1)
            log.debug("end of turn: p=%.2f after %.0f ms", self.last, self.last_ms)
            return self.last >= self.threshold
        return False
