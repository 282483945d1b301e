"""The jobs of ``iris serve``, each a ``ServicePart``: speech to text (``AsrPart``),
answers (``HandlePart``) and, in ``wyoming.tts``, text to speech — and ``service_parts``, the
one place their list is made.

Each part keeps its per-connection state in ``Connection.state`` under its own key.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.handle import Handled, HandledChunk, HandledStart, HandledStop, NotHandled
from wyoming.info import AsrModel, AsrProgram, HandleModel, HandleProgram

from iris_voice import __version__
from iris_voice.conversation.origins import Conversations, wyoming_origin
from iris_voice.errors import IrisError, LlmError
from iris_voice.speech.stt import Transcriber
from iris_voice.wyoming.audio import AudioFormatError, AudioIntake, audio_format
from iris_voice.wyoming.hub import SatellitePart
from iris_voice.wyoming.info import IRIS, OLLAMA, WHISPER, languages
from iris_voice.wyoming.part import Connection, ServicePart
from iris_voice.wyoming.tts import JSON_KINDS, TtsPart

if TYPE_CHECKING:
    from iris_voice.config import Config
    from iris_voice.events import EventBus, TimerFinished
    from iris_voice.speech.tts import Synthesizer
    from iris_voice.timers.service import TimerService
    from iris_voice.tools.registry import ToolRegistry
    from iris_voice.voice.listener import Listener

log = logging.getLogger(__name__)

HANDLE_STREAM_KEY = "handled_streaming"
"""A ``transcript``'s ``context`` with this key true asks for ``handled-start/chunk/stop``."""
NOT_REACHABLE = "My language model is not reachable right now."


class SpeechEngines(Protocol):
    """The speech engines the parts serve."""

    stt: Transcriber
    tts: Synthesizer


class ServedApp(Protocol):
    """What the parts need of an assembled IRIS (``app.assembly.App`` is one)."""

    cfg: Config
    bus: EventBus
    timers: TimerService
    registry: ToolRegistry
    conversations: Conversations
    engines: SpeechEngines | None


@dataclass
class _Utterance:
    """Audio of one ``transcribe`` being received."""

    language: str | None
    fmt: tuple[int, int, int] | None = None
    """``(rate, width, channels)`` of the ``audio-start``; None before it."""
    intake: AudioIntake | None = None
    skipped: int = 0
    """Chunks dropped for a format that is not the stream's (logged once)."""


class AsrPart:
    """``transcribe`` + ``audio-start/chunk/stop`` → ``transcript``, with IRIS's Whisper.

    Only audio that follows a ``transcribe`` is this part's (a satellite's microphone
    stream is another part's). The client's audio (16-bit PCM, any rate from 8 to 96 kHz,
    mono or stereo) is mixed to mono and resampled to 16 kHz; more than
    ``max_utterance_s`` is refused with an ``error`` and dropped. An ``audio-start`` with
    another format is answered with an ``error`` (``bad-audio``); a chunk whose format is
    not the stream's (or not a format at all) is skipped.
    """

    KEY = "asr"

    def __init__(self, stt: Transcriber, *, language: str, max_utterance_s: float) -> None:
        self.stt = stt
        self.language = language
        self.max_utterance_s = max_utterance_s
        self._decoding = asyncio.Lock()  # one decode at a time, in the order asked
        self.skipped = 0
        """Decodes not started because their client had left while they waited."""

    def describe(self) -> dict[str, list[Any]]:
        """One ASR program with IRIS's Whisper model."""
        model = AsrModel(
            name=self.stt.name, attribution=WHISPER, installed=True, languages=languages(self.language),
            description=f"Whisper {self.stt.name} (CTranslate2)", version=None,
        )  # fmt: skip
        program = AsrProgram(
            name="iris-whisper", attribution=IRIS, installed=True, version=__version__,
            description="IRIS speech to text (faster-whisper)", models=[model],
            supports_transcript_streaming=False,
        )  # fmt: skip
        return {"asr": [program]}

    async def handle(self, event: Event, conn: Connection) -> bool:
        """Take ``transcribe`` and the audio after it."""
        utt: _Utterance | None = conn.state.get(self.KEY)
        if Transcribe.is_type(event.type):
            language = Transcribe.from_event(event).language
            conn.state[self.KEY] = _Utterance(language if isinstance(language, str) and language else None)
            return True
        if utt is None:
            return False
        if AudioStart.is_type(event.type):
            return await self._start(event, utt, conn)
        if AudioChunk.is_type(event.type) and utt.intake is not None:
            await self._add(event, utt, conn)
            return True
        if AudioStop.is_type(event.type) and utt.intake is not None:
            del conn.state[self.KEY]
            if not utt.intake.overflow:
                async with self._decoding:
                    if conn.gone():  # it sent audio-stop and left: nobody reads the transcript
                        self.skipped += 1
                        log.info("wyoming client %s left before its transcription began: skipped", conn.peer)
                        return True
                    text = await self._transcribe(utt.intake)
                log.info("wyoming transcribe for %s: %r", conn.peer, text)
                await conn.write_event(Transcript(text=text, language=utt.language or self.language).event())
            return True
        return False

    async def _start(self, event: Event, utt: _Utterance, conn: Connection) -> bool:
        try:
            utt.fmt = audio_format(event.data)
        except AudioFormatError as exc:
            del conn.state[self.KEY]
            log.info("wyoming client %s: %s", conn.peer, exc)
            error = Error(text=f"{exc}: send 16-bit mono or stereo PCM at 8-96 kHz", code="bad-audio")
            await conn.write_event(error.event())
            return True
        rate, _width, channels = utt.fmt
        # A second audio-start begins the utterance's audio again.
        utt.intake = AudioIntake(rate, channels, self.max_utterance_s)
        return True

    async def _add(self, event: Event, utt: _Utterance, conn: Connection) -> None:
        """One chunk: O(its size) on the event loop — a format check and one append."""
        intake = utt.intake
        if intake is None or intake.overflow:
            return
        # The chunk's own format must be the stream's: a mismatch would be noise.
        try:
            same = audio_format(event.data) == utt.fmt
        except AudioFormatError:
            same = False
        if not same:
            if not utt.skipped:
                log.info("wyoming client %s: chunk format differs from audio-start; skipped", conn.peer)
            utt.skipped += 1
            return
        if not intake.add(event.payload or b""):
            limit = f"more than serve.max_utterance_s = {self.max_utterance_s:g} s of audio"
            log.warning("wyoming client %s sent %s; dropped", conn.peer, limit)
            await conn.write_event(Error(text=limit, code="too-long").event())

    async def _transcribe(self, intake: AudioIntake) -> str:
        if intake.frames == 0:
            return ""
        return await self.stt.transcribe(await intake.to_16k_mono("float32"))

    async def closed(self, conn: Connection) -> None:
        """Drop a half-received utterance."""
        conn.state.pop(self.KEY, None)

    async def aclose(self) -> None:
        """Nothing runs outside a client's own events."""


class HandlePart:
    """``transcript`` → ``handled`` with IRIS's answer: the hub's fast path, tools, timers and
    a conversation of the client's own (``conversation.origins.wyoming_origin``: the
    ``conversation_id`` Home Assistant puts in the transcript's ``context``, else the
    connection, forgotten when it closes). One turn at a time, beside this machine's own.

    When the language model is unreachable the answer is ``not-handled`` with a short
    sentence. A client that puts ``"handled_streaming": true`` in the transcript's
    ``context`` gets ``handled-start``, one ``handled-chunk`` per sentence as it is ready,
    ``handled`` (the whole answer, for compatibility) and ``handled-stop``.
    """

    def __init__(
        self, conversations: Conversations, *, language: str, model: str, lock: asyncio.Lock | None = None
    ) -> None:
        self.conversations = conversations
        self.language = language
        self.model = model
        self._turn = lock or asyncio.Lock()
        """Held for each turn: the daemon's voice turns hold the same one (one conversation)."""

    def describe(self) -> dict[str, list[Any]]:
        """One handle program: IRIS's conversation over its model."""
        model = HandleModel(
            name=self.model, attribution=OLLAMA, installed=True, languages=languages(self.language),
            description="IRIS's answers: intent fast path, tools, timers, the language model", version=None,
        )  # fmt: skip
        program = HandleProgram(
            name="iris", attribution=IRIS, installed=True, version=__version__,
            description="IRIS voice assistant", models=[model], supports_handled_streaming=True,
        )  # fmt: skip
        return {"handle": [program]}

    async def handle(self, event: Event, conn: Connection) -> bool:
        """Answer a ``transcript``."""
        if not Transcript.is_type(event.type):
            return False
        request = Transcript.from_event(event)
        if request.text is not None and not isinstance(request.text, str):  # a list, a number: no words
            kind = JSON_KINDS.get(type(request.text), type(request.text).__name__)
            why = f"transcript text must be a string, not {kind}"
            await conn.write_event(Error(text=why, code="bad-text").event())
            return True
        text = (request.text or "").strip()
        context = request.context if isinstance(request.context, dict) else {}
        stream = context.get(HANDLE_STREAM_KEY) is True
        if not text:
            await conn.write_event(NotHandled(text="I didn't catch that.").event())
            return True
        said: list[str] = []
        origin = wyoming_origin(context, conn.peer)
        async with self._turn:
            try:
                async for sentence in self.conversations.get(origin).sentences(text):
                    if stream and not said:
                        await conn.write_event(HandledStart().event())
                    said.append(sentence)
                    if stream:
                        await conn.write_event(HandledChunk(text=sentence).event())
            except LlmError as exc:
                log.warning("wyoming handle for %s: %s [%s]", conn.peer, exc.message, exc.code)
                if not said:
                    await conn.write_event(NotHandled(text=NOT_REACHABLE).event())
                    return True
            except IrisError as exc:
                log.warning("wyoming handle for %s: %s [%s]", conn.peer, exc.message, exc.code)
                if not said:
                    await conn.write_event(NotHandled(text="Sorry, something went wrong.").event())
                    return True
        reply = " ".join(said)
        log.info("wyoming handle for %s (%s): %r -> %r", conn.peer, origin, text, reply)
        await conn.write_event(Handled(text=reply).event())
        if stream and said:
            await conn.write_event(HandledStop().event())
        if origin != wyoming_origin(None, conn.peer):  # a connection's own ends with it: not worth warming
            self.conversations.idle(origin)
        return True

    async def closed(self, conn: Connection) -> None:
        """A conversation that was the connection's own ends with it."""
        self.conversations.forget(wyoming_origin(None, conn.peer))

    async def aclose(self) -> None:
        """Nothing runs outside a client's own events."""


def service_parts(
    app: ServedApp,
    *,
    turn_lock: asyncio.Lock | None = None,
    local_announce: Callable[[TimerFinished], None] | None = None,
    listener: Callable[[], Awaitable[Listener]] | None = None,
) -> list[ServicePart]:
    """The parts of ``iris serve`` in the order events are offered to them; speech parts
    and the satellites' part only when ``app`` has speech engines. ``turn_lock``: the lock
    the desktop daemon's own turns hold, so a client's turn and a spoken one never share the
    conversation at once. ``local_announce``: rings a satellite's timer on this machine's
    speaker while that satellite is away (the desktop daemon's alarms; None for the headless
    hub, which keeps it for the satellite's return). ``listener``: makes the hub's ears for a
    satellite that streams its microphone (``wyoming.ears``)."""
    cfg = app.cfg
    parts: list[ServicePart] = []
    if app.engines is not None:
        eng = app.engines
        satellites = SatellitePart(
            cfg, app.registry, eng.stt, eng.tts, conversations=app.conversations, listener=listener,
            publish=app.bus.publish, local_announce=local_announce,
            hold_timers_s=cfg.satellite.hold_timers_s, speech_jobs=cfg.satellite.hub_speech_jobs,
        )  # fmt: skip
        satellites.attach_timers(app.timers, app.bus.subscribe)
        # First: a satellite's audio is its turn, not a plain transcription.
        parts.append(satellites)
        limit = cfg.serve.max_utterance_s
        parts.append(AsrPart(eng.stt, language=cfg.stt.language, max_utterance_s=limit))
        parts.append(
            TtsPart(eng.tts, language=cfg.stt.language, max_synthesize_chars=cfg.serve.max_synthesize_chars)
        )
    parts.append(
        HandlePart(app.conversations, language=cfg.stt.language, model=cfg.llm.model, lock=turn_lock)
    )
    return parts
