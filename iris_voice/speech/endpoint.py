"""When a turn ends: the sound of the pause, then the words said before it.

Two signals decide, one after the other, at each pause of a capture:

1. **The sound.** With ``audio.end_of_turn = "smart_turn"`` a turn detector (Smart Turn)
   is asked after ``CHECK_S`` of silence, and again every ``RECHECK_S`` while the silence
   lasts and it has not called the turn finished: a turn it calls finished may end as
   soon as its answer is there. Asking once per pause made every turn whose first
   verdict fell short wait the whole ``audio.end_of_turn_max_ms``, although the model
   (trained on turns that end in silence) grows surer as the silence goes on, and one
   inference costs tens of milliseconds. With ``"silence"``, ``audio.vad_hangover_ms`` of
   silence is the sign.
2. **The words.** With ``stt.speculative`` the words up to the pause are being decoded
   anyway (the answer needs them). A turn the sound calls finished ends only once they
   are in and do not end on a word that cannot end a sentence ("set a timer for",
   "what is twenty three times", "remind me to call"): IRIS would need them before it
   could answer in any case, so waiting for them costs no first audio, and the voice of
   someone who stops to think no longer cuts them off.

A pause that fails either test waits for more speech, or for ``audio.end_of_turn_max_ms``
of silence, whatever was said. Speech that resumes makes a pending verdict moot; the next
pause asks again. The listener calls ``frame`` once per captured frame; the detector
runs in its own task, so a frame never waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from iris_voice.speech.turn import TurnDetector

log = logging.getLogger(__name__)

CHECK_S = 0.16
"""Silence after which the detector is asked (five 32 ms frames). Silero marks the last
syllable's tail as silence a frame or two late, and the model was trained on turns that end
in a short silence; at ~100 ms it called some finished questions unfinished."""
RECHECK_S = 0.1
"""Silence between two questions to the detector within one pause (its verdict fell short)."""
_EPS = 1e-9

# Words a sentence does not end on: prepositions, conjunctions, articles and other
# determiners, auxiliaries, arithmetic operators, and verbs a request goes on after.
_OPEN_WORDS = frozenset(
    """
    a an the my your his her its our their this these those some any every each no
    for to in on at of by with from about into onto after before until till than like per via
    and or but so because if that which who whose when where while whether
    is are was were be been am do does did can could will would should shall may might must
    have has had what's whats what how where's
    plus minus times divided multiplied over percent
    call tell ask text send set remind play turn open get buy make find book order check
    """.split()
)
_LAST_WORD = re.compile(r"([A-Za-z']+)\W*$")
# A count after "for", "in", "after" or "every" is waiting for its unit: "set a timer for
# five" goes on with "minutes" ("what is six times five" ends on a number and is done).
_NUMBER = (
    r"(?:\d+(?:[.,]\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|fifteen|twenty|thirty|forty|fifty|sixty|ninety|a hundred|hundred)"
)
_COUNT_WITHOUT_UNIT = re.compile(rf"\b(?:for|in|after|every)\s+(?:\w+[\s-])?{_NUMBER}\W*$", re.IGNORECASE)


def looks_unfinished(text: str) -> bool:
    """Whether a transcript stops where a sentence cannot end: on one of ``_OPEN_WORDS``,
    or on a comma, a dash or an ellipsis (Whisper's mark for speech that trails off), or on
    a count still waiting for its unit ("…for five")."""
    stripped = text.strip()
    if not stripped or stripped.endswith((",", "-", "—", "...", "…")):
        return bool(stripped)
    if _COUNT_WITHOUT_UNIT.search(stripped):
        return True
    m = _LAST_WORD.search(stripped)
    return m is not None and m.group(1).lower() in _OPEN_WORDS


@dataclass(frozen=True)
class Words:
    """What the capture's speculative decode says about the words before the pause."""

    text: str | None
    """The transcript so far, when a decode of it finished (None: none, or not yet)."""
    pending: bool
    """A decode of the words before this pause is still running."""


NO_WORDS = Words(None, False)


class TurnEnd:
    """Decides at each pause of a capture whether the turn is over (see the module notes)."""

    def __init__(
        self,
        detector: TurnDetector | None,
        threshold: float = 0.5,
        check_s: float = CHECK_S,
        silence_s: float = 0.4,
        recheck_s: float = RECHECK_S,
        lead_in: Callable[[str], bool] | None = None,
    ) -> None:
        self.detector = detector
        self.lead_in = lead_in
        """Words that only open a turn (the wake phrase alone, said in a follow-up window where
        no wake word holds the capture): a pause after them is never the end."""
        """The turn detector; None: ``silence_s`` of silence is the sound's verdict."""
        self.threshold = threshold
        """Probability from which a turn counts as complete (``audio.end_of_turn_threshold``)."""
        self.check_s = check_s
        self.recheck_s = recheck_s
        """Silence between two questions within one pause whose verdict fell short (0: one
        question per pause; ``audio.end_of_turn_recheck_ms``)."""
        self.silence_s = silence_s
        """Without a detector: the silence that says "finished" (``audio.vad_hangover_ms``)."""
        self._task: asyncio.Task[float] | None = None
        self._next_ask_s = check_s  # the silence at which the detector is asked (again)
        self._asked_at = 0.0
        self._sound_done = False  # this pause sounded like the end; the words decide now
        self._vetoed = False  # the words before this pause were unfinished
        self.last: float | None = None
        """The detector's latest verdict in this capture."""
        self.last_ms: float | None = None
        """How long the latest verdict took (audio copy, features, inference)."""
        self.vetoes = 0
        """Pauses that sounded finished but whose words were not (this capture)."""

    def reset(self) -> None:
        """A new capture: forget the last one's pause and verdict."""
        self._new_pause()
        self.last = self.last_ms = None
        self.vetoes = 0

    def _new_pause(self) -> None:
        if self._task is not None:
            self._task.cancel()  # the thread finishes its inference; the verdict is ignored
            self._task = None
        self._next_ask_s = self.check_s
        self._sound_done = self._vetoed = False

    def frame(
        self, silence_s: float, audio: Callable[[], np.ndarray], words: Callable[[], Words] = lambda: NO_WORDS
    ) -> bool:
        """One captured frame; ``silence_s`` is the segmenter's silence since the last speech
        (0 while speech goes on), ``audio`` gives the capture so far, ``words`` the decode of
        it. True when the turn is over now."""
        if silence_s <= 0:
            self._new_pause()  # speech again: this pause's verdicts are moot
            return False
        if self._vetoed:
            return False
        if not self._sound_done and not self._sound(silence_s, audio):
            return False
        self._sound_done = True
        said = words()
        if said.pending:
            return False  # the answer needs these words anyway: wait for them
        lead_in = said.text is not None and self.lead_in is not None and self.lead_in(said.text)
        if said.text is not None and (looks_unfinished(said.text) or lead_in):
            self._vetoed = True
            self.vetoes += 1
            log.debug("end of turn: %r sounds finished but stops on an open word; waiting", said.text)
            return False
        return True

    def _sound(self, silence_s: float, audio: Callable[[], np.ndarray]) -> bool:
        """Whether this pause sounds like the end of the turn (the detector's verdict is in
        and says so, or the silence is long enough)."""
        if self.detector is None:
            return silence_s + _EPS >= self.silence_s
        if self._task is None:
            if silence_s + _EPS < self._next_ask_s:
                return False
            # The next question waits for this verdict and then for recheck_s more silence.
            self._next_ask_s = silence_s + self.recheck_s if self.recheck_s > 0 else float("inf")
            self._asked_at = time.perf_counter()
            self._task = asyncio.get_running_loop().create_task(
                self.detector.probability(audio()), name="end-of-turn"
            )
            return False
        task = self._task
        if not task.done():
            return False
        self._task = None
        with contextlib.suppress(asyncio.CancelledError):
            if (exc := task.exception()) is not None:
                log.warning("end-of-turn detector failed (waiting for the silence instead): %s", exc)
                self._next_ask_s = float("inf")  # not again in this pause
                return False
            self.last = task.result()
            self.last_ms = round((time.perf_counter() - self._asked_at) * 1000, 1)
            log.debug("end of turn: p=%.2f after %.0f ms", self.last, self.last_ms)
            return self.last >= self.threshold
        return False
