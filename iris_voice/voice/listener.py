"""The listening front of the voice pipeline: frames in, one typed stream of heard things out.

One task reads the capture stage's frames and never waits for anything else, so the
microphone queue never backs up while a turn is being answered. What runs on a frame
depends on the listener's ``mode`` and the moment, which keeps idle CPU low: in
wake-word mode an idle IRIS runs only Silero VAD, and the wake-word model (ten times
costlier) only while there is sound that may be speech; the VAD also endpoints
questions. While IRIS answers, the wake word (or plain speech, with
``barge_in = "voice"``) interrupts. While an alarm rings (``alarm_ringing``), speech
is captured without the wake word too, even over the announcement, so that "stop" alone
silences it; such a capture (``Trigger.ALARM``) never interrupts, and the pipeline acts
on it only if it is a stop command or opens with the wake phrase (which the ring may hide
from the wake model, not from Whisper).

Everything the pipeline needs to know arrives as one ``Heard`` message on one bounded
queue: ``CaptureStarted``, ``UtteranceReady``, ``BargeIn``, ``CaptureTimedOut``. The
pipeline tells the listener what it is doing through ``answering()``/``idle()``; the
user mutes it with ``mute()``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

import numpy as np

from iris_voice.audio import SAMPLE_RATE
from iris_voice.audio.protocols import AudioSource
from iris_voice.config import AudioConfig
from iris_voice.events import Event, SpeechEnded, SpeechStarted, Trigger
from iris_voice.speech.endpoint import NO_WORDS, TurnEnd, Words
from iris_voice.speech.stt import DecodeSession
from iris_voice.speech.vad import NoSpeech, Segmenter, SpeechDetector, UtteranceEnded, UtteranceStarted
from iris_voice.speech.wake import WakeDetector
from iris_voice.voice.echoguard import NEAR_SHARE, EchoGuard
from iris_voice.voice.heard import (
    BargeIn,
    CaptureStarted,
    CaptureTimedOut,
    Heard,
    ListenMode,
    Speculation,
    SpeculationDropped,
    Utterance,
    UtteranceReady,
)
from iris_voice.voice.phrases import wake_phrase_text
from iris_voice.voice.wakewatch import FRAME_S, WAKE_CUT_S, WAKE_PRE_ROLL_S, WakeWatch

log = logging.getLogger(__name__)

SPEECH_HYSTERESIS = 0.15
"""How far below ``audio.vad_threshold`` speech may fall once an utterance is under way."""
TALK_OVER_PRE_ROLL_S = 1.0
"""Audio kept before a voice barge-in on the microphone cancelled in-process: speech over
IRIS is damped there while IRIS still talks, so the run that interrupts it completes a
while after the person began (p50 ~0.5 s live); the question's first words lie before it."""
VOICE_BARGE_IN_S = 0.25
"""Speech needed to interrupt IRIS with ``barge_in = "voice"`` (a cough must not)."""
SPEECH_START_S = 0.096
"""Speech (three frames in a row) that opens a capture without the wake word: a click does
not. Deliberately short: a one-word command ("stop") has only a few frames of voicing."""


class Listener:
    """Activation, endpointing and barge-in over a stream of frames."""

    def __init__(
        self,
        cfg: AudioConfig,
        vad: SpeechDetector,
        wake: WakeDetector | None,
        publish: Callable[[Event], None],
        clock: Callable[[], float] = time.monotonic,
        wake_threshold: float = 0.5,
        turn_end: TurnEnd | None = None,
        keep_phrase: bool = True,
    ) -> None:
        if cfg.activation == "wake_word" and wake is None:
            raise ValueError("activation 'wake_word' needs a wake-word detector")
        self.cfg = cfg
        self.vad = vad
        self.wake = wake
        pre_roll_s = WAKE_PRE_ROLL_S if keep_phrase else WAKE_CUT_S  # (``wake.keep_phrase``)
        self.wakes = WakeWatch(wake, vad, wake_threshold, publish, lambda: self.guard, pre_roll_s)
        """When the wake-word model runs and what its detections open (``wakewatch``)."""
        self._keep_phrase = keep_phrase
        self.turn_end = turn_end
        """Asks a turn detector at each pause (``audio.end_of_turn = "smart_turn"``); None:
        a turn ends after ``audio.vad_hangover_ms`` of silence."""
        self._publish = publish
        self._clock = clock
        self._mode = ListenMode.IDLE
        self._muted_from = ListenMode.IDLE  # the mode to return to on unmute
        self.position_s = 0.0
        """Seconds of audio read from the source."""
        self._out: asyncio.Queue[Heard] | None = None
        self._armed: Trigger | None = None
        self._follow_up_until = 0.0
        self._pre: deque[tuple[np.ndarray, bool]] = deque(
            maxlen=max(1, round(cfg.pre_roll_ms / 1000 / FRAME_S))
        )
        self._talk_pre: deque[tuple[np.ndarray, bool]] = deque(maxlen=round(TALK_OVER_PRE_ROLL_S / FRAME_S))
        self._capture: list[np.ndarray] | None = None
        self._trigger = Trigger.ALWAYS
        self._lead = ""  # the words the capture starts with (``Utterance.lead``)
        self._capture_start_s = 0.0
        self._seg: Segmenter | None = None
        self._speech_run = 0
        self._near_run = 0  # of the barge-in run's frames, those louder than IRIS's echo
        self.sessions: Callable[[str], DecodeSession] | None = None
        """Opens an incremental decode for each capture (set by the pipeline when its
        transcriber ``supports_streaming``), or None."""
        self._session: DecodeSession | None = None
        self._speculated = False  # a Speculation went out for the current pause
        self.guard: EchoGuard | None = None
        """IRIS's guard against its own voice (set by the daemon; None: no guard)."""
        self._alarm = False  # an alarm rings: listen for "stop" without the wake word

    # -- commands -----------------------------------------------------------------
    @property
    def mode(self) -> ListenMode:
        """What frames are used for now."""
        return self._mode

    def answering(self) -> None:
        """IRIS starts a reply or an announcement: listen for a barge-in only."""
        self._set_mode(ListenMode.ANSWERING)

    def idle(self) -> None:
        """IRIS is done speaking: wait for the next activation."""
        if self.guard is not None:
            self.guard.stopped()
        self._set_mode(ListenMode.IDLE)

    def mute(self) -> None:
        """Ignore the microphone until ``unmute`` (a capture under way is dropped)."""
        if self._mode != ListenMode.MUTED:
            self._muted_from, self._mode = self._mode, ListenMode.MUTED

    def unmute(self) -> None:
        """Listen again, in the mode IRIS is in."""
        if self._mode == ListenMode.MUTED:
            self._mode = self._muted_from

    def _set_mode(self, mode: ListenMode) -> None:
        self._talk_pre.clear()  # audio from over an earlier reply is no question's start
        if self._mode == ListenMode.MUTED:
            self._muted_from = mode  # applied when unmuted
        else:
            self._mode = mode

    def alarm_ringing(self, ringing: bool) -> None:
        """An alarm started (True) or stopped (False) ringing."""
        self._alarm = ringing
        if ringing:  # what is said over the ring answers the alarm, not the last reply
            self.cancel_follow_up()

    def arm(self, trigger: Trigger = Trigger.PUSH_TO_TALK) -> None:
        """Capture a question starting with the next frame (``iris listen``)."""
        self._armed = trigger

    def follow_up(self) -> None:
        """Accept a question without the wake word for ``audio.follow_up_s`` from now."""
        self._follow_up_until = self._clock() + self.cfg.follow_up_s

    def cancel_follow_up(self) -> None:
        """Close the follow-up window."""
        self._follow_up_until = 0.0

    @property
    def longest_pause_s(self) -> float:
        """Silence after which a turn ends whatever was said: ``audio.end_of_turn_max_ms``
        with a turn check at each pause, else ``audio.vad_hangover_ms``."""
        ms = self.cfg.end_of_turn_max_ms if self.turn_end is not None else self.cfg.vad_hangover_ms
        return ms / 1000

    @property
    def capturing(self) -> bool:
        """True while a question is being recorded."""
        return self._capture is not None

    # -- the loop -----------------------------------------------------------------
    async def run(self, source: AudioSource, out: asyncio.Queue[Heard]) -> None:
        """Read frames until the source ends; put what was heard on ``out``."""
        self._out = out
        async for frame in source.frames():
            self.position_s += FRAME_S
            if self._mode == ListenMode.MUTED:
                self._pre.clear()
                self._capture = None
                self._drop_session()
                if self._speculated:
                    self._speculated = False
                    self._emit(SpeculationDropped())
                continue
            if self._capture is not None and self._seg is not None:
                await self._capturing(frame, self._capture, self._seg)
            elif self._armed:
                self._start(self._armed, [f for f, _ in self._pre] + [frame])
                self._armed = None
            elif self._mode == ListenMode.ANSWERING:
                await self._barge_in_check(frame)
            else:
                await self._idle(frame)

    def _emit(self, item: Heard) -> None:
        """Hand ``item`` to the pipeline; a full queue drops its oldest item (a newer
        question wins over one nobody picked up)."""
        out = self._out
        if out is None:
            return
        if out.full():
            dropped = out.get_nowait()
            if isinstance(dropped, UtteranceReady) and dropped.utterance.session is not None:
                dropped.utterance.session.cancel()
        out.put_nowait(item)

    async def _idle(self, frame: np.ndarray) -> None:
        # IRIS's echo: no question, no wake word. (Over a ringing alarm only "stop" acts, which
        # IRIS's announcement never says: a "stop" said right after a ring must not be lost.)
        if self.guard is not None and not self._alarm and self.guard.in_tail():
            self._pre.clear()
            self._speech_run = 0
            self.wakes.quiet()
            return
        follow_up = self._clock() < self._follow_up_until
        always = self.cfg.activation == "always"
        if always or follow_up or self._alarm:
            if await self._speech_starts(frame):
                trigger = Trigger.FOLLOW_UP if follow_up else Trigger.ALWAYS if always else Trigger.ALARM
                self._start(trigger, [f for f, _ in self._pre], replay=True)
            return
        self._pre.append((frame, False))
        if self.cfg.activation == "wake_word":
            frames = await self.wakes.gated(frame, self.position_s)
            if frames is not None:
                self._start(Trigger.WAKE_WORD, frames, lead=self._wake_lead())

    async def _speech_starts(self, frame: np.ndarray) -> bool:
        """Judge ``frame`` into the pre-roll; True once ``SPEECH_START_S`` of speech ran."""
        speech = await self._is_speech(frame)
        self._pre.append((frame, speech))
        self._speech_run = self._speech_run + 1 if speech else 0
        return self._speech_run * FRAME_S + 1e-9 >= SPEECH_START_S

    async def _barge_in_check(self, frame: np.ndarray) -> None:
        mode = self.cfg.barge_in
        if mode == "voice" and self.guard is not None and not self.guard.voice_barge_in_now():
            mode = "wake_word"  # without the canceller, IRIS's own voice would interrupt it
        if self._alarm and mode != "voice":
            # Over a ringing alarm "stop" needs no wake word; the capture does not interrupt
            # (the pipeline stops the alarm only if the words are a stop command).
            if await self._speech_starts(frame):
                self._start(Trigger.ALARM, [f for f, _ in self._pre], replay=True)
                return
        if mode == "off":
            return
        if mode == "voice":
            speech = await self._is_speech(frame)
            self._pre.append((frame, speech))
            need = self.guard.barge_in_speech_s if self.guard is not None else None
            # On the in-process canceller's output half of the run must also be louder than
            # the loud end of its residue: AEC3, converged, still lets a burst of IRIS's voice
            # through now and then, and Silero calls 192 ms of it speech; it damps a person
            # too, so not every frame of theirs is (NEAR_SHARE).
            # (near_end is fed every frame: the quiet ones teach it the residue's level.)
            near = self.guard.near_end(frame) if need is not None and self.guard is not None else True
            self._speech_run = self._speech_run + 1 if speech else 0
            self._near_run = self._near_run + int(near) if speech else 0
            enough_near = self._near_run + 1e-9 >= NEAR_SHARE * self._speech_run
            pre = self._pre
            if need is not None:  # the in-process canceller: a longer pre-roll (why: above)
                self._talk_pre.append((frame, speech))
                pre = self._talk_pre
            if self.guard is not None and self.guard.gates_barge_in:  # speech louder than IRIS's echo
                talking_over = self.guard.talking_over(frame, speech)
            else:
                talking_over = enough_near and self._speech_run * FRAME_S + 1e-9 >= (need or VOICE_BARGE_IN_S)
            if talking_over:
                # What the canceller knew when speech interrupted IRIS: a false barge-in is
                # told from a person by these figures in the log.
                log.info("voice barge-in after %d frames of speech, %d louder than the echo; echo %s",
                         self._speech_run, self._near_run,
                         self.guard.snapshot() if self.guard is not None else "unguarded")  # fmt: skip
                self._emit(BargeIn("voice"))
                self._start(Trigger.BARGE_IN, [f for f, _ in pre], replay=True, flags=[s for _, s in pre])
            return
        if not self._alarm:  # (with an alarm, _speech_starts filled the pre-roll)
            self._pre.append((frame, False))
        if self.wake is not None and await self.wakes.fired(frame, during_speech=True):
            self._emit(BargeIn(Trigger.WAKE_WORD))
            n = self.wakes.pre_roll_frames()
            self._start(Trigger.BARGE_IN, [f for f, _ in list(self._pre)[-n:]])

    async def _capturing(self, frame: np.ndarray, capture: list[np.ndarray], seg: Segmenter) -> None:
        capture.append(frame)
        if self.wakes.watching and await self.wakes.in_capture(
            frame, len(capture) * FRAME_S, self.position_s
        ):
            # "hey Jarvis" said from habit: the question starts after it (over an alarm's
            # announcement, as a barge-in would)
            barge = self._mode == ListenMode.ANSWERING and self.cfg.barge_in != "off"
            if barge:
                self._emit(BargeIn(Trigger.WAKE_WORD))
            trigger = Trigger.BARGE_IN if barge else Trigger.WAKE_WORD
            self._start(trigger, capture[-self.wakes.pre_roll_frames() :], lead=self._wake_lead())
            return
        # Hysteresis, as Silero's own segmenter does: once inside speech, a softer syllable
        # (probability a little under the threshold) still counts as speech.
        threshold = self.cfg.vad_threshold - (SPEECH_HYSTERESIS if seg.in_utterance else 0.0)
        speech = await self.vad.probability(frame) >= threshold
        if self._session is not None:
            self._session.feed(frame, speech)  # cheap: at most starts a decode task
            self._follow_speculation(self._session, speech)
        event = seg.process(FRAME_S, speech)
        turn_end, session = self.turn_end, self._session
        hinted = self.wakes.hinted(self.position_s)  # the wake model may fire yet
        if event is None and turn_end is not None and seg.in_utterance and not hinted:
            words = (lambda: Words(*session.words())) if session is not None else (lambda: NO_WORDS)
            if turn_end.frame(seg.silence_s, lambda: np.concatenate(capture), words):
                event = seg.end_turn()
        if isinstance(event, UtteranceStarted):
            self._publish(SpeechStarted(self._capture_start_s + event.start_s))
        elif isinstance(event, UtteranceEnded):
            audio = np.concatenate(capture)
            utt = Utterance(
                audio=audio,
                trigger=self._trigger,
                decided_at=self._clock(),
                hangover_s=event.silence_s,
                speech_end_s=self.position_s - event.silence_s,
                session=self._session,
                end_reason=event.reason,
                turn_probability=turn_end.last if turn_end is not None else None,
                lead=self._lead,
            )
            self._session = None  # handed over with the utterance: the turn finishes it
            self._finish()
            self._publish(SpeechEnded(len(audio) / SAMPLE_RATE, timed_out=False))
            self._emit(UtteranceReady(utt))
        elif isinstance(event, NoSpeech):
            log.info("no speech within %.1f s after %s", self.cfg.no_speech_timeout_s, self._trigger)
            self._finish()
            self._publish(SpeechEnded(0.0, timed_out=True))
            self._emit(CaptureTimedOut())

    # -- helpers ------------------------------------------------------------------
    def _follow_speculation(self, session: DecodeSession, speech: bool) -> None:
        """Tell the pipeline when a pause's transcript is ready, and when speech resumes
        after it (the session drops that transcript at the same frame)."""
        if speech:
            if self._speculated:
                self._speculated = False
                self._emit(SpeculationDropped())
        elif not self._speculated and (text := session.speculation()) is not None:
            self._speculated = True
            self._emit(Speculation(text))

    def _start(
        self,
        trigger: Trigger,
        frames: list[np.ndarray],
        replay: bool = False,
        lead: str = "",
        flags: list[bool] | None = None,
    ) -> None:
        """Open a capture with ``frames`` already in it (pre-roll; ``lead``: the words they
        are known to start with, the wake phrase; ``flags``: the VAD's verdicts on them,
        else the pre-roll's)."""
        self._trigger = trigger
        self._lead = lead
        if self.turn_end is not None:
            self.turn_end.reset()
        # With a turn detector, silence alone ends a turn only after the long wait.
        self._seg = Segmenter(
            hangover_seconds=self.longest_pause_s,
            max_seconds=self.cfg.max_utterance_s,
            timeout_seconds=self.cfg.no_speech_timeout_s,
        )
        self._capture = list(frames)
        self._speculated = False
        self._capture_start_s = self.position_s - len(frames) * FRAME_S
        if flags is None:
            flags = [s for _, s in self._pre][-len(frames) :] if replay else []
        self._open_session(frames, flags)
        if replay:  # the VAD already judged these frames: let the segmenter see them too
            for speech in flags:
                event = self._seg.process(FRAME_S, speech)
                if isinstance(event, UtteranceStarted):
                    self._publish(SpeechStarted(self._capture_start_s + event.start_s))
        self._pre.clear()
        self._talk_pre.clear()
        self._speech_run = self._near_run = 0
        # Without the wake word, the wake model catches up on the pre-roll and follows the
        # capture's start (``WAKE_WATCH_S``).
        watch = trigger in (Trigger.FOLLOW_UP, Trigger.ALWAYS, Trigger.ALARM) and self.wake is not None
        self.wakes.watch(frames if watch else None)
        self.cancel_follow_up()
        self._emit(CaptureStarted(trigger))
        log.debug("capturing (%s) with %d pre-roll frames", trigger, len(frames))

    def _open_session(self, frames: list[np.ndarray], flags: list[bool]) -> None:
        """Start the incremental decode of a new capture with its pre-roll."""
        self._drop_session()
        if self.sessions is None or self._trigger is Trigger.ALARM:
            return  # (an alarm's capture is mostly not a question: no decode ahead, no speculation)
        self._session = self.sessions(self._lead)
        # the last len(frames) verdicts; unjudged pre-roll counts as silence
        flags = ([False] * len(frames) + flags)[len(flags) :]
        for frame, speech in zip(frames, flags, strict=True):
            self._session.feed(frame, speech)

    def _drop_session(self) -> None:
        """Discard the incremental decode of a capture that produced no utterance."""
        if self._session is not None:
            self._session.cancel()
            self._session = None

    def _wake_lead(self) -> str:
        return wake_phrase_text(self.wake.name) if self.wake is not None and self._keep_phrase else ""

    def _finish(self) -> None:
        self._drop_session()
        self._capture = None
        self._seg = None
        self.wakes.watch(None)
        self.vad.reset()
        self.wakes.reset()  # stale audio in its buffer must not fire again

    async def _is_speech(self, frame: np.ndarray) -> bool:
        return await self.vad.probability(frame) >= self.cfg.vad_threshold
