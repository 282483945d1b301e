"""The voice turn: IDLE → LISTENING → TRANSCRIBING → THINKING → SPEAKING → IDLE.

``VoicePipeline`` ties the stages together through their Protocols only: the listener
tells it what it heard on one queue (a capture started, an utterance is ready, a
barge-in, nobody spoke), the transcriber turns utterances into text, the responder
streams sentences, and the reply speaker plays them as they come. One turn runs at a
time, as its own task, so a barge-in or ``iris stop`` cancels it cleanly; the sink is
shared with announcements (timers, ``iris say``) through one lock, so IRIS never talks
over itself. What is heard when a server is gone is ``servergone``'s, what a
transcript's wake phrase and stop words mean is ``phrases``', what a turn's record holds
is ``turnrecord``'s (their names stay importable from here).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from iris_voice.audio import SAMPLE_RATE
from iris_voice.audio.protocols import AudioSink, AudioSource
from iris_voice.conversation.responder import Responder
from iris_voice.conversation.trace import TurnTrace
from iris_voice.errors import LlmError, SpeechError, is_speech_server_code
from iris_voice.events import (
    EventBus,
    LlmUnavailable,
    PlaybackStarted,
    PlaybackStopped,
    State,
    StateChanged,
    Transcript,
    Trigger,
)
from iris_voice.speech.stt import Transcriber
from iris_voice.voice.heard import (
    BargeIn,
    CaptureStarted,
    CaptureTimedOut,
    Heard,
    Speculation,
    Utterance,
    UtteranceReady,
)
from iris_voice.voice.held import HeldTurn
from iris_voice.voice.latecue import cue_deadline
from iris_voice.voice.listener import Listener
from iris_voice.voice.phrases import is_stop_command, is_wake_phrase_alone, strip_wake_phrase
from iris_voice.voice.servergone import UNREACHABLE, not_transcribed, say_stt_unreachable, voice_gone
from iris_voice.voice.speaker import ReplySpeaker, SpokenReply
from iris_voice.voice.turnrecord import stop_trace, voice_turn_record

log = logging.getLogger(__name__)


class VoicePipeline:
    """Runs voice turns, text turns and announcements over shared stages."""

    def __init__(
        self,
        listener: Listener,
        stt: Transcriber,
        responder: Responder,
        speaker: ReplySpeaker,
        bus: EventBus,
        *,
        wake_name: str = "hey_jarvis",
        on_stop: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.listener = listener
        self.stt = stt
        self.responder = responder
        self.speaker = speaker
        self.bus = bus
        self._on_stop = on_stop or (lambda: None)
        self._clock = clock
        self._wake_name = wake_name
        self.state = State.IDLE
        self.turns: deque[dict[str, Any]] = deque(maxlen=20)
        """Traces of the latest turns, newest last (``iris status``)."""
        self.turn_count = 0
        """Turns since start (voice and typed; a spoken stop command is one too)."""
        self.speech_lock = asyncio.Lock()
        """Held while anything plays: a reply, an announcement, ``iris say``."""
        self._heard: asyncio.Queue[Heard] = asyncio.Queue(16)
        self._pending: Utterance | None = None  # the next question; a newer one replaces it
        self._pending_set = asyncio.Event()
        self._turn: asyncio.Task[None] | None = None
        self._held: HeldTurn | None = None  # a turn started at a pause (stt.speculative)
        self.speculation = {"started": 0, "adopted": 0, "dropped": 0}
        """Turns started at a pause, and what became of them (``iris status``)."""
        # The transcriber says once whether it decodes while the user speaks.
        listener.sessions = stt.open_session if stt.supports_streaming else None

    @property
    def sink(self) -> AudioSink:
        """Where speech goes."""
        return self.speaker.sink

    @property
    def answering(self) -> bool:
        """A captured question waits or is being answered."""
        turn_running = self._turn is not None and not self._turn.done()
        return turn_running or self._pending is not None or not self._heard.empty()

    @property
    def busy(self) -> bool:
        """A question is being captured, waits, or is being answered (file mode keeps real
        time while this holds)."""
        return self.listener.capturing or self.answering

    def _set(self, state: State) -> None:
        if state != self.state:
            self.state = state
            self.bus.publish(StateChanged(state))

    # -- tasks ----------------------------------------------------------------------
    async def run(self, source: AudioSource) -> None:
        """Listen to ``source`` and answer each question until cancelled (or the source ends)."""
        async with asyncio.TaskGroup() as tg:
            listening = tg.create_task(self.listener.run(source, self._heard), name="listener")
            follower = tg.create_task(self._follow(), name="heard")
            worker = tg.create_task(self._worker(), name="turns")
            await listening
            while self.answering:  # the source ended (a file): answer what is left, then stop
                await asyncio.sleep(0.02)
            follower.cancel()
            worker.cancel()

    async def _follow(self) -> None:
        """Act on what the listener heard, at once (a barge-in must not wait for a turn)."""
        while True:
            heard = await self._heard.get()
            if isinstance(heard, Speculation):
                self._speculate(heard.text)
                continue
            if not isinstance(heard, UtteranceReady):
                self._drop_held()  # the speaker went on, or a new capture began
            if isinstance(heard, CaptureStarted) and self.state == State.IDLE:
                self._set(State.LISTENING)
            elif isinstance(heard, BargeIn):
                self.barge_in(str(heard.how))
            elif isinstance(heard, CaptureTimedOut) and self.state == State.LISTENING:
                self._set(State.IDLE)
            elif isinstance(heard, UtteranceReady):
                if self._pending is not None and self._pending.session is not None:
                    self._pending.session.cancel()  # a newer question wins
                self._pending = heard.utterance
                self._pending_set.set()

    async def _worker(self) -> None:
        while True:
            await self._pending_set.wait()
            self._pending_set.clear()
            utt, self._pending = self._pending, None
            if utt is None:
                continue
            self._turn = asyncio.create_task(self._voice_turn(utt), name="turn")
            try:
                await asyncio.wait([self._turn])
            finally:
                if not self._turn.done():  # the daemon is stopping: take the turn down too
                    self._turn.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._turn
                self._turn = None
            self._quiet()

    def _speculate(self, heard: str) -> None:
        """Start answering what was said up to a pause, held until the question is confirmed
        (``HeldTurn``) — unless IRIS is busy with a turn, a typed question or speech."""
        self._drop_held()
        text = strip_wake_phrase(self._wake_name, heard)
        if self.answering or self.speech_lock.locked() or not re.search(r"\w", text):
            return
        if is_stop_command(text):
            return  # "stop" is handled when the question is confirmed, never ahead
        self._held = HeldTurn(self.responder, text)
        self.speculation["started"] += 1

    def _drop_held(self) -> None:
        if self._held is not None:
            self._held.discard()
            self._held = None
            self.speculation["dropped"] += 1

    # -- commands -------------------------------------------------------------------
    def barge_in(self, how: str) -> None:
        """The user interrupted: silence now, cancel the turn, listen (the listener captures)."""
        heard = self.sink.stop()
        log.info("barge-in (%s): %.2f s of queued speech dropped", how, heard)
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()
        self._on_stop()
        self._set(State.LISTENING)

    def stop(self) -> bool:
        """``iris stop`` / "stop": silence whatever is playing and cancel the turn; True if anything was."""
        self._drop_held()
        active = self._turn is not None and not self._turn.done()
        dropped = self.sink.stop()
        if active and self._turn is not None:
            self._turn.cancel()
        self._on_stop()
        self.listener.cancel_follow_up()
        return active or dropped > 0

    def listen(self) -> None:
        """``iris listen``: capture a question now, without the wake word."""
        self.stop()
        self.listener.arm(Trigger.PUSH_TO_TALK)
        self._set(State.LISTENING)

    def _after_speaking(self) -> None:
        self.listener.idle()
        self._set(State.LISTENING if self.listener.capturing else State.IDLE)

    def _quiet(self) -> None:
        """A turn or an announcement ended: if nothing waits, the model's prompt cache
        catches up with the conversation while the user is quiet (the next turn cancels it)."""
        if not self.answering:
            self.responder.idle()

    async def announce(self, text: str, clip: tuple[np.ndarray, int] | None = None) -> SpokenReply | None:
        """Speak an announcement once no turn is running; None when it was cut off."""
        # Never over the user: wait for a running turn and for a question being asked.
        while (self._turn is not None and not self._turn.done()) or self.listener.capturing:
            await asyncio.sleep(0.1)
        async with self.speech_lock:
            self._set(State.SPEAKING)
            self.listener.answering()  # the wake word now interrupts the announcement
            try:
                if clip is not None:
                    await self.speaker.play_clip(*clip)
                return await self.speaker.say(text)
            except SpeechError as exc:
                # The remote voice is gone (its adapter logged it once): an alarm still
                # rings with its chime; anything else gets one, so it is not silence.
                if not await voice_gone(self.speaker, exc, "announcement", sound=clip is None):
                    raise
                return None
            except asyncio.CancelledError:
                self.sink.stop()
                raise
            finally:
                self._after_speaking()
                self._quiet()

    async def ask_text(self, text: str, speak: bool = False) -> dict[str, Any]:
        """A typed question (``iris ask`` through the daemon): the trace, spoken if ``speak``."""
        async with self.speech_lock:
            trace = TurnTrace(text=text)
            if speak:
                reply = await self.speaker.speak(self.responder.sentences(text, trace))
                trace.extra["spoken"] = reply.spoken
            else:
                async for _ in self.responder.sentences(text, trace):
                    pass
        result = trace.to_dict()
        self.turns.append(result)
        self.turn_count += 1
        self._quiet()
        return result

    # -- one voice turn ---------------------------------------------------------------
    async def _voice_turn(self, utt: Utterance) -> None:
        timings: dict[str, Any] = {"vad_hangover": round(utt.hangover_s * 1000, 1)}
        session = utt.session
        try:
            self._set(State.TRANSCRIBING)
            started = self._clock()
            try:
                if session is not None:  # most of it was decoded while the user spoke: the tail is left
                    text = await session.finish(utt.audio)
                    timings.update(session.timings())
                else:
                    text = await self.stt.transcribe(utt.audio.astype(np.float32) / 32768.0, lead=utt.lead)
            except SpeechError as exc:
                if not is_speech_server_code(exc.code):
                    raise
                await self._stt_unreachable(utt, exc, timings)
                return
            timings["stt"] = round((self._clock() - started) * 1000, 1)
            # (a capture that kept the wake phrase as its lead and says nothing more: "")
            nothing = not re.search(r"\w", text)
            wake_alone = is_wake_phrase_alone(self._wake_name, text) or bool(utt.lead and nothing)
            raw, text = text.strip(), strip_wake_phrase(self._wake_name, text)
            woken = utt.trigger is not Trigger.ALARM or raw != text  # (over an alarm: said it)
            self.bus.publish(Transcript(text, timings["stt"]))
            log.info("heard: %r (stt %.0f ms)", text, timings["stt"])
            held = self._held
            if held is not None and held.text != text:
                self._drop_held()  # the question came out different: answer the real one
                held = None
            guard = self.listener.guard
            began_at = utt.decided_at - len(utt.audio) / SAMPLE_RATE  # pre-roll and hangover included
            if utt.trigger != Trigger.WAKE_WORD and guard is not None and guard.is_echo(text, began_at):
                text = ""  # IRIS heard itself: no turn (the guard logged it)
            if not woken and not is_stop_command(text):
                log.info("heard %r over a ringing alarm without the wake word: not a stop, ignored", text)
                return
            if utt.trigger is Trigger.ALARM and woken:  # the wake phrase the ring hid from its model:
                log.info("heard the wake phrase over a ringing alarm: it stops")  # as a barge-in would
                self.sink.stop()
                self._on_stop()
            if wake_alone and woken:
                # "Hey Jarvis." and a long pause (or a capture cut there): the question is yet
                # to come, and must not need the wake word a second time.
                log.info("heard the wake phrase alone: listening for the question")
                self.listener.follow_up()
            if not re.search(r"\w", text) or is_stop_command(text):
                self._drop_held()
                if re.search(r"\w", text):
                    self._record(utt, text, stop_trace(text), SpokenReply(), timings)
                    self.stop()
                return
            self._held = None
            if held is not None:
                self.speculation["adopted"] += 1
            timings["speculative"] = held is not None
            await self._answer(utt, text, timings, held)
        except asyncio.CancelledError:
            raise
        except Exception:  # STT/TTS failures are logged; the daemon keeps listening
            log.exception("voice turn failed")
        finally:
            if session is not None:
                session.cancel()  # a barge-in or stop mid-decode: drop what is still running
            # Words heard over an alarm's announcement leave the announcement in charge.
            if utt.trigger is not Trigger.ALARM or not self.speech_lock.locked():
                self._after_speaking()

    async def _answer(
        self, utt: Utterance, text: str, timings: dict[str, Any], held: HeldTurn | None = None
    ) -> None:
        trace = held.trace if held is not None else TurnTrace(text=text)
        reply = SpokenReply()

        def first_audio(r: SpokenReply) -> None:
            self._set(State.SPEAKING)
            if r.first_audio_at is not None:
                ms = utt.hangover_s * 1000 + (r.first_audio_at - utt.decided_at) * 1000
                timings["first_audio_ms"] = round(ms, 1)
                self.bus.publish(PlaybackStarted(timings["first_audio_ms"]))

        self.listener.answering()
        self._set(State.THINKING)
        try:
            async with self.speech_lock:
                try:
                    sentences = (
                        held.sentences() if held is not None else self.responder.sentences(text, trace)
                    )
                    late = cue_deadline(self.speaker.cue, utt)
                    await self.speaker.speak(sentences, reply, first_audio, late)
                except LlmError as exc:
                    log.warning("language model failed: %s [%s]", exc.message, exc.code)
                    self.bus.publish(LlmUnavailable(exc.code, exc.message))
                    trace.extra["error"] = {"code": exc.code, "message": exc.message}
                    await self.speaker.say(UNREACHABLE)
                except SpeechError as exc:
                    # The remote voice is gone (its adapter logged it once): the answer is
                    # in the trace and the log; the user hears a chime instead of nothing.
                    if not await voice_gone(self.speaker, exc, "reply", trace):
                        raise
        except asyncio.CancelledError:
            self.responder.conversation.amend_last(reply.spoken)
            self.bus.publish(PlaybackStopped(True, reply.spoken))
            raise
        finally:
            if reply.cue_at is not None:  # from the end of speech, as first_audio_ms
                cue_s = utt.hangover_s + reply.cue_at - utt.decided_at
                timings["late_cue_ms"] = round(cue_s * 1000, 1)
            self._record(utt, text, trace, reply, timings)
        self.bus.publish(PlaybackStopped(False, reply.spoken))
        self.listener.follow_up()

    async def _stt_unreachable(self, utt: Utterance, exc: SpeechError, timings: dict[str, Any]) -> None:
        """The remote speech recognition server is gone: one sentence says so (a chime if
        the voice is gone too), the turn is recorded with the error; IRIS keeps listening
        and the next utterance tries the server again."""
        trace = not_transcribed(exc)
        reply = SpokenReply()
        self.listener.answering()
        try:
            async with self.speech_lock:
                self._set(State.SPEAKING)
                reply = await say_stt_unreachable(self.speaker, trace)
        finally:
            trace.finish()
            self._record(utt, "", trace, reply, timings)

    def _record(
        self, utt: Utterance, text: str, trace: TurnTrace, reply: SpokenReply, timings: dict[str, Any]
    ) -> None:
        now, device_at = self._clock(), self.sink.first_sample_at
        self.turns.append(voice_turn_record(utt, text, trace, reply, timings, now=now, device_at=device_at))
        self.turn_count += 1
