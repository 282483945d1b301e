"""IRIS's software guard against its own voice coming back through the microphone.

PipeWire's echo canceller (``audio/echo.py``) removes most of IRIS's voice from the
microphone, but not all of it, and not at all where it cannot run. The guard works on
what IRIS knows — what it is saying and when it stops — so it needs no signal processing:

- a reply that contains the wake phrase ("you can say hey Jarvis") does not interrupt
  itself: while it plays, wake-word detections are ignored;
- the reverberant tail of a reply is not the start of a follow-up question: for
  ``TAIL_S`` after IRIS stops, the follow-up window hears no speech;
- a transcript that repeats what IRIS said, captured while IRIS spoke or within
  ``ECHO_WINDOW_S`` of it stopping, is IRIS's own voice, not a question: it is dropped
  (never one of one or two words: "stop" is always the user's; and never a question begun
  later, however much it quotes IRIS: "cancel the pasta timer").

- speech that is no louder than IRIS's own echo is not someone talking over IRIS
  (``near_end``): the speaker tells the guard how loud each block it played was; the guard
  learns how much of that comes back (the loud end of the microphone/speaker level ratio
  while IRIS talks) and takes only frames well above it as the user's voice. With it, voice
  barge-in works with or without the canceller; without a reference (a custom sink) and
  without the canceller, the wake word interrupts instead (``voice_barge_in``).
"""

from __future__ import annotations

import difflib
import logging
import re
import time
from collections import deque
from collections.abc import Callable

import numpy as np

log = logging.getLogger(__name__)

TAIL_S = 0.35
"""After IRIS stops speaking, how long its echo (device buffer, room reverb) may still
reach the microphone: 250 ms of reverb plus the playback path's latency."""
RECENT_S = 30.0
"""How far back what IRIS said counts as a possible echo."""
ECHO_SHARE = 0.75
"""Share of a transcript's words found, in order, in IRIS's recent speech that makes it an echo."""
ECHO_WINDOW_S = 1.5
"""A capture that began later than this after IRIS stopped speaking is not its echo."""
MIN_WORDS = 3
"""Shorter transcripts are never judged an echo ("stop", "yes please")."""
REFERENCE_S = 0.3
"""How far back the speaker's loudest block is compared with a microphone frame: device
buffer plus the room's delay (20–60 ms) plus its reverb."""
NEAR_END_FACTOR = 2.0
"""A frame this many times louder (+6 dB) than IRIS's loud echo frames (the 90th percentile
of the last ~3 s: a canceller's residue comes in spikes) is the user's voice."""
PRIOR_ECHO_RATIO = 0.5
"""Echo level assumed before the guard has measured it (−6 dB: loud laptop speakers)."""
TALK_OVER_WINDOW = 16
"""Frames (0.5 s) over which talking over IRIS is judged."""
TALK_OVER_FRAMES = 6
"""Speech frames louder than the echo, of the window's, that interrupt IRIS: the canceller
also damps the user's voice while IRIS talks (about a third of their frames stay above the
bar, in runs), and its residue passes the bar in ones and twos (at most 5 of 16 measured)."""
NEAR_SHARE = 0.5
"""Of a run of speech on the in-process canceller's output, the share of frames that must be
louder than the echo (``near_end``) to interrupt IRIS. The canceller damps a person while
IRIS talks, so asking it of every frame lost one person in ten offline (default room, 192 ms:
9 of 17 detected, p50 544 ms, against 10 of 17 and 480 ms for half); the residue passes the
bar in ones and twos (at most 5 of 16 frames), short of half a run."""
IN_PROCESS_SPEECH_S = 0.192
"""Speech on the microphone cancelled in-process that interrupts IRIS: six 32 ms frames of
Silero in a row. Measured: on the offline scene (``tools/bench/aec_bargein``) no run length
let IRIS's own voice interrupt it once the canceller had converged (0 of 21 replies in both
rooms), so the length is set by the live bench (``make bench-rooms``), where 64 and 128 ms
let AEC3's residue interrupt IRIS's replies after a person had talked over it and 192 ms
did not."""
SILENT_RMS = 50.0
"""A speaker quieter than this (int16 RMS) makes no echo worth guarding against."""


def words(text: str) -> list[str]:
    """Lower-case words without punctuation ("It's 3:05." → ["it's", "3", "05"])."""
    return re.findall(r"[\w']+", text.lower())


class EchoGuard:
    """What IRIS says and when it stops, for the listener and the pipeline to consult."""

    def __init__(self, wake_name: str = "hey_jarvis", clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = True
        """False with ``audio.echo_cancel = "off"`` (headphones): every check passes."""
        self.cancelled = False
        """True while a canceller (in IRIS or PipeWire's) removes IRIS's voice from the microphone."""
        self.method = "guard"
        """What IRIS does about echo: ``webrtc``, ``pipewire-webrtc``, ``guard`` or ``off``
        (``iris status``)."""
        self.measured: Callable[[], dict[str, object]] | None = None
        """The in-process canceller's figures for ``iris status`` (echo removed, realignments)."""
        self.converged: Callable[[], bool] | None = None
        """Has the in-process canceller learned the room yet (``InProcessCanceller.converged``)?"""
        self.detail = ""
        """Why, in one line (``iris status``, ``iris doctor``)."""
        self._clock = clock
        # "hey_jarvis" → "jarvis": the distinctive word of the phrase is what a reply would contain.
        self._wake_word = max(wake_name.replace("-", "_").split("_"), key=len).lower()
        self._said: deque[tuple[float, str]] = deque()
        self._speaking = False
        self._wake_in_reply = False
        self._quiet_at = 0.0
        self._stopped_at = float("-inf")
        self.dropped = 0
        """Transcripts dropped as IRIS's own voice (``iris status``)."""
        self.reference: Callable[[float], float] | None = None
        """The speaker's loudest block since a ``clock()`` time (``SpeakerSink.reference_level``)."""
        self._ratios: deque[float] = deque(maxlen=90)  # microphone / speaker level, ~3 s of frames
        self._talk: deque[bool] = deque(maxlen=TALK_OVER_WINDOW)  # speech louder than the echo

    def use(self, method: str, detail: str) -> None:
        """Set what the daemon ended up with (``EchoState``'s method and detail)."""
        self.method, self.detail = method, detail
        self.enabled, self.cancelled = method != "off", method in ("webrtc", "pipewire-webrtc")

    def snapshot(self) -> dict[str, object]:
        """For ``iris status``: the method, why, and how often IRIS ignored its own voice."""
        measured = self.measured() if self.measured is not None else {}
        return {"method": self.method, "detail": self.detail, "ignored": self.dropped, **measured}

    @property
    def voice_barge_in(self) -> bool:
        """Can plain speech interrupt IRIS? With the canceller or the speaker's reference
        (``near_end``); else its own voice would."""
        return self.cancelled or not self.enabled

    def voice_barge_in_now(self) -> bool:
        """May plain speech interrupt IRIS right now? As :attr:`voice_barge_in`, and not
        before the in-process canceller has learned the room (until then the wake word does)."""
        return self.voice_barge_in and (not self.enabled or self.converged is None or self.converged())

    @property
    def gates_barge_in(self) -> bool:
        """Does :meth:`talking_over` decide voice barge-in (PipeWire's canceller runs and the
        speaker tells what it plays)? On the microphone cancelled in-process, a run of
        ``barge_in_speech_s`` of speech does instead: its residue is no speech at all."""
        return self.enabled and self.method == "pipewire-webrtc" and self.reference is not None

    @property
    def barge_in_speech_s(self) -> float | None:
        """Speech that interrupts IRIS on the in-process canceller's output (None: the
        listener's own rule)."""
        return IN_PROCESS_SPEECH_S if self.enabled and self.method == "webrtc" else None

    def talking_over(self, frame: np.ndarray, speech: bool) -> bool:
        """Feed every frame while IRIS speaks (``speech``: the VAD's verdict); True once
        enough of the last half second was speech louder than IRIS's echo."""
        self._talk.append(speech and self.near_end(frame))
        if sum(self._talk) >= TALK_OVER_FRAMES:
            self._talk.clear()
            return True
        return False

    def near_end(self, frame: np.ndarray) -> bool:
        """Is this microphone frame louder than IRIS's own echo could make it? Call it for
        every frame while IRIS speaks: the quiet ones teach the guard the echo's level."""
        if not self.enabled or self.reference is None:
            return True
        speaker = self.reference(self._clock() - REFERENCE_S)
        if speaker < SILENT_RMS:
            return True
        ratio = float(np.sqrt(np.mean(np.square(frame, dtype=np.float32)))) / speaker
        loud = float(np.percentile(self._ratios, 90)) if len(self._ratios) >= 10 else PRIOR_ECHO_RATIO
        near = ratio > NEAR_END_FACTOR * loud
        # Learn the echo's spikes, but not the user's voice: a frame counts at most as loud
        # as the line it crossed, so speech raises the bar only slowly.
        self._ratios.append(min(ratio, NEAR_END_FACTOR * loud))
        return near

    def saying(self, sentence: str) -> None:
        """A sentence is about to be spoken."""
        now = self._clock()
        self._said.append((now, sentence))
        while self._said and now - self._said[0][0] > RECENT_S:
            self._said.popleft()
        self._speaking = True
        if self._wake_word in words(sentence):
            self._wake_in_reply = True

    def stopped(self) -> None:
        """IRIS has stopped speaking (the audio has played, or it was interrupted)."""
        self._talk.clear()
        if self._speaking:
            self._stopped_at = self._clock()
            self._quiet_at = self._stopped_at + TAIL_S
        self._speaking = False
        self._wake_in_reply = False

    def wake_allowed(self) -> bool:
        """May a wake-word detection now interrupt IRIS? Not while it says the phrase itself."""
        return not (self.enabled and self._speaking and self._wake_in_reply)

    def in_tail(self) -> bool:
        """True while IRIS's echo may still be in the microphone after it stopped."""
        # Also with the canceller: it removes 10 dB or so of the echo, not all of it.
        return self.enabled and self._clock() < self._quiet_at

    def is_echo(self, transcript: str, began_at: float) -> bool:
        """Is ``transcript``, captured from ``began_at`` (``clock()`` time), IRIS's own words?"""
        if not self.enabled or (not self._speaking and began_at > self._stopped_at + ECHO_WINDOW_S):
            return False
        heard = words(transcript)
        if len(heard) < MIN_WORDS:
            return False
        now = self._clock()
        said = [w for at, s in self._said if now - at <= RECENT_S for w in words(s)]
        if not said:
            return False
        match = difflib.SequenceMatcher(None, heard, said, autojunk=False)
        found = sum(b.size for b in match.get_matching_blocks())
        if found / len(heard) >= ECHO_SHARE:
            self.dropped += 1
            log.info("ignored IRIS's own voice in the microphone: %r", transcript)
            return True
        return False
