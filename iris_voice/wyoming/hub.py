"""The hub's side of satellites: IRIS in other rooms, each with its own conversation.

A satellite (``iris satellite``, ``wyoming.satellite``) runs the microphone, the wake word and
VAD endpointing; the hub runs speech-to-text, the language model with its tools and timers,
and text-to-speech. ``SatellitePart`` is the ``ServicePart`` of ``iris serve`` that speaks
to satellites, using the ``wyoming`` package's own events:

=====================  ==============================================================
satellite → hub        ``run-satellite`` ``{"name": "kitchen"}`` once, on connecting
hub → satellite        ``satellite-connected`` (accepted) or ``error``
satellite → hub        per turn: ``run-pipeline`` (``start_stage`` asr, ``end_stage`` tts,
                       ``wake_word_name``), ``audio-start``, ``audio-chunk`` …, ``audio-stop``
                       (16-bit mono; 16 kHz preferred, other formats are converted).
                       With ``end_stage`` asr the turn ends at the ``transcript``: a
                       satellite asking what was said over its ringing timer.
hub → satellite        ``transcript``; the reply as ``audio-start``, ``audio-chunk`` …
                       (sentence by sentence as synthesized), ``audio-stop``; then the end of
                       the turn: ``handled`` (the reply's text) or ``not-handled`` (nothing
                       to answer: silence, "stop", over 30 s; ``text`` says which)
satellite → hub        ``pause-satellite``: stop the turn under way (a barge-in); a new
                       ``run-pipeline`` does the same
hub → satellite        any time: ``timer-finished`` ``{"id": "12"}`` then the chime and the
                       announcement as one audio stream (which the satellite repeats
                       until it is dismissed: ``wyoming.ring``)
=====================  ==============================================================

A name belongs to the connection that holds it: a second ``run-satellite`` with the same
name is refused (``error`` code ``name-taken``) while the first satellite answers a
``ping`` within ``PROBE_S``; one that does not (a satellite restarted after a power cut,
its old link half-open) gives way to the new one. IRIS satellites ping the hub every few
seconds, so the server's idle timeout keeps their links and drops dead ones.

Each satellite name has its own conversation (kitchen and office are different
conversations, kept across reconnects and held while the satellite is connected) in the
``Conversations`` the whole of IRIS shares (``conversation.origins``: origin
``satellite:NAME``), all sharing one language model through ``SerialBackend``. A timer set
in a satellite's turn stores that satellite's name (``timers.service.ORIGIN``) and rings
there; while that satellite is away, the hub's own speaker rings it when the hub has one,
else the timer stays pending in the database (so a crash loses nothing) for at most
``satellite.hold_timers_s`` until the satellite returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.handle import NotHandled
from wyoming.ping import Ping, Pong
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.satellite import PauseSatellite, RunSatellite, SatelliteConnected

from iris_voice.config import Config
from iris_voice.conversation.origins import Conversations, satellite_origin
from iris_voice.conversation.responder import Assistant, build_responder
from iris_voice.events import Event as IrisEvent
from iris_voice.events import TimerFinished
from iris_voice.llm.client import ChatBackend, OllamaBackend
from iris_voice.llm.serial import SerialBackend
from iris_voice.speech.stt import Transcriber
from iris_voice.speech.tts import Synthesizer
from iris_voice.timers.rows import MAX_ORIGIN
from iris_voice.timers.service import TimerService
from iris_voice.tools.registry import ToolRegistry
from iris_voice.voice.latecue import LateCue
from iris_voice.wyoming.audio import AudioFormatError, AudioIntake, audio_format
from iris_voice.wyoming.ears import STREAM_FORMAT, ListenerPool, RemoteEars
from iris_voice.wyoming.hub_timers import SatelliteTimers
from iris_voice.wyoming.hub_turn import TurnResult, gated, run_turn
from iris_voice.wyoming.part import Connection
from iris_voice.wyoming.trust import RefusalLog
from iris_voice.wyoming.wire import printable

log = logging.getLogger(__name__)

STATE_KEY = "satellite"
"""This part's key in ``Connection.state``."""
MAX_UTTERANCE_S = 30.0
"""The longest utterance the hub accepts; more is a satellite that never stopped."""
_NAME = re.compile(r"^[\w .-]+$")
PROBE_S = 2.0
"""How long a satellite holding a name has to answer a ``ping`` when another claims it."""


@dataclass
class Satellite:
    """One connected satellite."""

    name: str
    """What the satellite calls itself (``satellite.name``): its room."""
    conn: Connection
    """Its connection."""
    speaking: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while an audio stream goes to it (a reply or an announcement)."""
    listening: bool = False
    """A turn's audio is expected (``run-pipeline`` … ``audio-stop``)."""
    audio: AudioIntake | None = None
    """The utterance being received, from its ``audio-start`` (format checked) on."""
    audio_format: tuple[int, int, int] = (0, 0, 0)
    """The utterance's ``(rate, width, channels)``, as its ``audio-start`` declared."""
    wake_name: str = ""
    """The wake word of the current turn (``run-pipeline``'s ``wake_word_name``)."""
    turn: asyncio.Task[TurnResult] | None = None
    """The turn being answered."""
    words_only: bool = False
    """The turn ends at the transcript (``end_stage`` asr: "stop" over a ringing timer)."""
    heard: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by every event from the satellite: a name's holder answering the probe."""
    ears: RemoteEars | None = None
    """The hub's listener over a streamed microphone (a stock satellite's), once it streams."""
    stream_wake: bool = False
    """The streamed pipeline starts at the wake word (else the question starts at once)."""
    gone: bool = False
    """The connection closed: nothing more is lent to it."""


class SatellitePart:
    """The ``ServicePart`` that answers satellites (see the module notes for the protocol)."""

    def __init__(
        self,
        cfg: Config,
        registry: ToolRegistry,
        stt: Transcriber,
        tts: Synthesizer,
        *,
        backend: ChatBackend | None = None,
        conversations: Conversations | None = None,
        listener: ListenerPool | None = None,
        publish: Callable[[IrisEvent], None] | None = None,
        local_announce: Callable[[TimerFinished], None] | None = None,
        hold_timers_s: float = 3600.0,
        speech_jobs: int = 1,
    ) -> None:
        self.cfg = cfg
        self.registry = registry
        self.stt = stt
        self.tts = tts
        self.publish = publish
        self.local_announce = local_announce
        """Rings a timer on the hub's own speaker (the desktop daemon's alarms); None: no speaker."""
        self.hold_timers_s = hold_timers_s
        self.speech_jobs = asyncio.Semaphore(speech_jobs) if speech_jobs > 0 else None
        """Speech-model steps (a transcription, one sentence's synthesis) running at once
        across satellites (``satellite.hub_speech_jobs``; None: no bound)."""
        if conversations is None:  # a hub of its own (tests): its conversations over ``backend``
            template = build_responder(
                cfg, registry, publish, SerialBackend(backend or OllamaBackend(cfg.llm))
            )
            conversations = Conversations(
                template.sibling, keep=cfg.conversations.keep, idle_s=cfg.conversations.idle_s
            )
        self.conversations = conversations
        """Every conversation of IRIS, by origin; the satellites' are ``satellite:NAME``."""
        self.listener = listener
        """Lends the hub's ears to a satellite that streams its microphone, and takes them
        back when it leaves (None: such a satellite is refused ``no-ears``)."""
        self.connected: dict[str, Satellite] = {}
        """Satellites connected now, by name."""
        self.timers: TimerService | None = None
        self.turns: list[tuple[str, TurnResult]] = []
        """The latest finished turns (satellite, result), newest last (at most 50)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self.refusals = RefusalLog()
        """Refused satellite streams and names: logged once per peer per minute."""
        self.cue = LateCue.from_config(cfg.tts)
        """Said to a satellite before a late reply (``tts.late_cue_s``); None: never. Made
        ready when the first satellite connects, not in the late turn that needs it."""
        self.ringer = SatelliteTimers(self)
        """Satellites' timers: shown there, rung there."""

    # -- the ServicePart Protocol ----------------------------------------------------
    def describe(self) -> dict[str, list[Any]]:
        """Nothing in ``info``: satellites are IRIS's own, they do not need discovering
        (``Info.satellite`` describes a satellite, not a hub)."""
        return {}

    async def handle(self, event: Event, conn: Connection) -> bool:
        """Take satellite events: ``run-satellite`` from any client the server let in (its
        allow-list and token), the rest from a satellite."""
        if RunSatellite.is_type(event.type):
            await self._hello(event, conn)
            return True
        sat: Satellite | None = conn.state.get(STATE_KEY)
        if sat is None:
            return False  # a plain Wyoming client: the other parts' business
        sat.heard.set()
        if Pong.is_type(event.type):
            return True
        if RunPipeline.is_type(event.type):
            run = RunPipeline.from_event(event)
            self._stop_turn(sat, "a new turn")
            if run.start_stage not in (PipelineStage.ASR, PipelineStage.WAKE):
                await conn.write_event(
                    Error(text="a satellite's turn starts at wake or asr", code="bad-stage").event()
                )
                return True
            sat.wake_name = run.wake_word_name or self.cfg.wake.model
            sat.words_only = run.end_stage == PipelineStage.ASR
            sat.stream_wake = run.start_stage == PipelineStage.WAKE
            sat.listening, sat.audio = True, None
            if sat.ears is not None:
                sat.ears.listen(wake=sat.stream_wake)
            return True
        if PauseSatellite.is_type(event.type):
            self._stop_turn(sat, "pause-satellite")
            return True
        if not sat.listening:
            return False  # audio outside a satellite turn (the ASR part's, for example)
        if AudioStart.is_type(event.type):
            return await self._audio_start(sat, event)
        if AudioChunk.is_type(event.type) and sat.audio is None:
            return await self._stream(sat, event)  # no audio-start: the microphone, streamed
        if AudioChunk.is_type(event.type):
            # Per chunk on the loop: a format check and one append within the budget; the
            # resampling waits for audio-stop and runs in a thread.
            try:
                same = sat.audio is not None and audio_format(event.data) == sat.audio_format
            except AudioFormatError:
                same = False
            if same and sat.audio is not None:
                sat.audio.add(event.payload or b"")  # beyond the budget: swallowed, refused at the stop
            return True
        if AudioStop.is_type(event.type):
            intake, sat.audio, sat.listening = sat.audio, None, False
            if intake is not None and intake.overflow:
                log.warning("%s: an utterance over %.0f s, not answered", sat.name, MAX_UTTERANCE_S)
                await conn.write_event(NotHandled(text="too long").event())
                return True
            audio = await intake.to_16k_mono("int16") if intake is not None else np.zeros(0, np.int16)
            sat.turn = self._spawn(self._turn(sat, audio), f"satellite-{sat.name}")
            return True
        return False

    async def _stream(self, sat: Satellite, event: Event) -> bool:
        """A chunk of a streamed microphone: the hub's ears find the wake word and the end
        of the question (``wyoming.ears``)."""
        try:
            fmt = audio_format(event.data)
        except AudioFormatError:
            fmt = None
        if fmt != STREAM_FORMAT or self.listener is None:
            why = "send 16 kHz 16-bit mono" if self.listener is not None else "this hub has no ears"
            self.refusals.warn(sat.conn.peer.rsplit(":", 1)[0], f"satellite {sat.name} streams: {why}")
            sat.listening = False
            code = "bad-audio" if self.listener is not None else "no-ears"
            await sat.conn.write_event(Error(text=f"a streamed microphone: {why}", code=code).event())
            return True
        if sat.ears is None:
            listener = await self.listener.take()
            ears = RemoteEars(
                listener, sat.conn.write_event, lambda audio, _t: self._heard(sat, audio),
                lambda: self._stop_turn(sat, "the wake word"), wake_name=sat.wake_name, wake=sat.stream_wake,
            )  # fmt: skip
            if sat.ears is None and not sat.gone:  # another chunk made them while the models loaded
                sat.ears = ears
                ears.start()
                log.info("%s streams its microphone: the hub listens (%s)", sat.name,
                         "wake word" if sat.stream_wake else "a question")  # fmt: skip
            else:
                self.listener.give_back(listener)
                if sat.ears is None:  # it left while the models loaded
                    return True
        sat.ears.push(event.payload or b"")
        return True

    async def _heard(self, sat: Satellite, audio: np.ndarray) -> None:
        """The ears heard a question: answer it, then listen again."""
        if sat.ears is not None:
            sat.ears.answering()
        sat.turn = self._spawn(self._turn(sat, audio), f"satellite-{sat.name}")
        # Not awaited: the ears go on listening, so the wake word can stop the answer.
        sat.turn.add_done_callback(lambda _t: sat.ears.done() if sat.ears is not None else None)

    async def _audio_start(self, sat: Satellite, event: Event) -> bool:
        """A turn's audio begins: its format is checked before a byte of it is kept."""
        try:
            sat.audio_format = audio_format(event.data)
            sat.audio = AudioIntake(sat.audio_format[0], sat.audio_format[2], MAX_UTTERANCE_S)
        except AudioFormatError as exc:
            sat.listening, sat.audio = False, None
            why = f"satellite {sat.name}: {exc}; the turn is dropped"
            self.refusals.warn(sat.conn.peer.rsplit(":", 1)[0], why)
            await sat.conn.write_event(Error(text=f"{exc}: send 16-bit mono PCM", code="bad-audio").event())
        return True

    async def closed(self, conn: Connection) -> None:
        """A satellite went away: stop its turn; its conversation stays for its return."""
        sat: Satellite | None = conn.state.pop(STATE_KEY, None)
        if sat is None:
            return
        self._stop_turn(sat, "disconnected")
        sat.gone = True
        if sat.ears is not None:
            await sat.ears.close()
            if self.listener is not None:
                self.listener.give_back(sat.ears.listener)  # the models, for the next satellite
            sat.ears = None
        if self.connected.get(sat.name) is sat:
            del self.connected[sat.name]
        log.info("satellite %s disconnected (%s)", sat.name, conn.peer)
        if sat.name not in self.connected:
            self.conversations.release(satellite_origin(sat.name))

    # -- satellites ---------------------------------------------------------------------
    async def _hello(self, event: Event, conn: Connection) -> None:
        data = event.data or {}
        error = await self.attach(str(data.get("name", "")).strip(), conn)
        await conn.write_event(error.event() if error is not None else SatelliteConnected().event())

    async def attach(self, name: str, conn: Connection) -> Error | None:
        """Make ``conn`` satellite ``name`` (a ``run-satellite`` it sent, or a satellite this
        hub connected to); the ``error`` refusing it, or None."""
        if not name or len(name) > MAX_ORIGIN or not _NAME.match(name):
            return Error(text=f"bad satellite name {printable(name, 40)}", code="bad-name")
        old = self.connected.get(name)
        if old is not None and old.conn is not conn:
            if await self._alive(old):
                why = f"satellite name {name} claimed while {old.conn.peer} holds it"
                self.refusals.warn(conn.peer.rsplit(":", 1)[0], why)
                taken = f"a satellite named {name!r} is connected; give this one another satellite.name"
                return Error(text=taken, code="name-taken")
            log.info("satellite %s reconnected from %s (%s did not answer)", name, conn.peer, old.conn.peer)
            self._stop_turn(old, "replaced")
            old.conn.state.pop(STATE_KEY, None)
        sat = Satellite(name, conn)
        conn.state[STATE_KEY] = sat
        self.connected[name] = sat
        self.conversations.hold(satellite_origin(name))
        log.info("satellite %s connected from %s", name, conn.peer)
        if self.cue is not None and not self.cue.ready:
            self._spawn(self._prepare_cue(self.cue), "late-cue")
        if self.timers is not None:
            self.timers.poke()  # timers it missed while away ring now
        return None

    async def _alive(self, sat: Satellite) -> bool:
        """Does the satellite holding a name still answer? A ``ping``, then any event within
        ``PROBE_S`` (IRIS satellites and Wyoming's answer ``pong``)."""
        sat.heard.clear()
        try:
            async with asyncio.timeout(PROBE_S):
                await sat.conn.write_event(Ping(text="name-probe").event())
                await sat.heard.wait()
            return True
        except (TimeoutError, ConnectionError, OSError):
            return False

    def responder(self, name: str) -> Assistant:
        """The conversation of satellite ``name`` for a turn starting now."""
        return self.conversations.get(satellite_origin(name))

    async def _prepare_cue(self, cue: LateCue) -> None:
        try:
            await gated(self.speech_jobs, cue.prepare(self.tts))
        except Exception as exc:  # a voice that is gone: the first late turn tries again
            log.warning("late cue not synthesized: %s", exc)

    def _spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _stop_turn(self, sat: Satellite, why: str) -> None:
        sat.listening, sat.audio = False, None
        if sat.turn is not None and not sat.turn.done():
            log.info("%s: turn stopped (%s)", sat.name, why)
            sat.turn.cancel()

    async def _turn(self, sat: Satellite, audio: np.ndarray) -> TurnResult:
        try:
            result = await run_turn(
                sat.name, audio, stt=self.stt, tts=self.tts, responder=self.responder(sat.name),
                write=sat.conn.write_event, wake_name=sat.wake_name, speaking=sat.speaking,
                gate=self.speech_jobs, words_only=sat.words_only, gone=sat.conn.gone, cue=self.cue,
            )  # fmt: skip
        except (ConnectionError, OSError) as exc:  # the satellite went away: nobody to answer
            log.info("%s: connection lost during the turn (%s)", sat.name, exc)
            return TurnResult(error="connection lost")
        except Exception:  # logged here: a task's exception must not wait for the GC to be seen
            log.exception("%s: turn failed", sat.name)
            with contextlib.suppress(ConnectionError, OSError):
                await sat.conn.write_event(Error(text="the hub failed to answer", code="turn-failed").event())
            return TurnResult(error="turn failed")
        self.turns = [*self.turns[-49:], (sat.name, result)]
        self.conversations.idle(satellite_origin(sat.name))  # a follow-up continues this one
        return result

    # -- timers -------------------------------------------------------------------------
    def attach_timers(
        self, timers: TimerService, subscribe: Callable[[Callable[[IrisEvent], None]], Any]
    ) -> None:
        """Ring satellites' timers on them (``wyoming.hub_timers``): ``timers`` (whose ``run``
        the server runs) holds a timer while its satellite is away, and ``subscribe``
        (``EventBus.subscribe``) brings every timer event."""
        self.timers = timers
        timers.hold = self.ringer.hold
        subscribe(self.ringer.on_event)

    def hold(self, row: Any, now: float) -> float | None:
        """The timer service's ``Hold`` (``SatelliteTimers.hold``)."""
        return self.ringer.hold(row, now)

    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        """A task this part cancels when it closes."""
        return self._spawn(coro, name)

    async def aclose(self) -> None:
        """Cancel the turns and announcements under way."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
