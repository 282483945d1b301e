"""One assembly: every part of IRIS built from a ``Config``, the same for every entry point.

The daemon, ``iris ask`` (typed or ``--wav``), ``iris tools``, the demo and the
benchmarks all get their parts here — timers, tools, MCP servers, the responder and,
for voice, the speech engines — so they cannot drift apart. This is the only module
that knows which adapter implements which stage; heavy imports (faster-whisper, Piper,
onnxruntime, the MCP SDK) happen only when a part is wanted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from iris_voice.app import checks
from iris_voice.audio.protocols import AudioSink, AudioSource
from iris_voice.config import Config
from iris_voice.conversation.origins import Conversations
from iris_voice.conversation.responder import Assistant, build_responder
from iris_voice.events import Event, EventBus
from iris_voice.llm.client import ChatBackend, OllamaBackend
from iris_voice.llm.serial import SerialBackend
from iris_voice.speech.endpoint import TurnEnd
from iris_voice.speech.stt import Transcriber
from iris_voice.speech.tts import Synthesizer
from iris_voice.speech.turn import TurnDetector
from iris_voice.speech.vad import SpeechDetector
from iris_voice.speech.wake import WakeDetector
from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerStore
from iris_voice.tools.builtin import build_registry
from iris_voice.tools.registry import ToolRegistry
from iris_voice.voice.listener import Listener
from iris_voice.voice.phrases import is_wake_phrase_alone
from iris_voice.wyoming.ears import ListenerPool

if TYPE_CHECKING:  # the MCP SDK is imported only when a server is configured
    from iris_voice.tools.mcp.manager import McpManager

log = logging.getLogger(__name__)


@dataclass
class Engines:
    """The model-backed stages of a voice pipeline."""

    stt: Transcriber
    tts: Synthesizer
    vad: SpeechDetector
    wake: WakeDetector | None
    turn: TurnDetector | None = None
    """The end-of-turn model (``audio.end_of_turn = "smart_turn"``)."""


def needs_wake_word(cfg: Config) -> bool:
    """The wake-word model runs for wake-word activation or wake-word barge-in."""
    return cfg.audio.activation == "wake_word" or cfg.audio.barge_in == "wake_word"


def build_engines(cfg: Config, wake: bool | None = None, *, listen_only: bool = False) -> Engines:
    """Construct (not yet load) the STT, TTS, VAD and wake-word adapters. ``listen_only``:
    VAD, wake word and end of turn alone (a satellite: its hub transcribes and speaks)."""
    from iris_voice.speech.vad import SileroDetector

    detector = None
    if needs_wake_word(cfg) if wake is None else wake:
        from iris_voice.speech.wake import OpenWakeWordDetector

        detector = OpenWakeWordDetector(cfg.wake)
    turn = None
    if cfg.audio.end_of_turn == "smart_turn":
        from iris_voice.speech.turn import SmartTurnDetector

        turn = SmartTurnDetector()
    if listen_only:
        return Engines(None, None, SileroDetector(), detector, turn)  # type: ignore[arg-type]
    return Engines(build_transcriber(cfg), build_synthesizer(cfg), SileroDetector(), detector, turn)


def build_transcriber(cfg: Config) -> Transcriber:
    """faster-whisper here, or the Wyoming server at ``stt.uri`` (``stt.engine = "wyoming"``);
    either decodes while the user speaks with ``stt.incremental`` (remotely: one request per
    piece at a pause, and per speculative decode)."""
    stt: Transcriber
    if cfg.stt.engine == "wyoming":
        from iris_voice.speech.wyoming_stt import WyomingTranscriber

        stt = WyomingTranscriber(cfg.stt)
    else:
        from iris_voice.speech.stt import FasterWhisperTranscriber

        stt = FasterWhisperTranscriber(cfg.stt)
    if cfg.stt.incremental:
        from iris_voice.speech.stt_stream import StreamingTranscriber

        stt = StreamingTranscriber(
            stt, cfg.stt.incremental_min_s, cfg.stt.incremental_pause_ms / 1000, cfg.stt.speculative
        )
    return stt


def build_synthesizer(cfg: Config) -> Synthesizer:
    """Piper here, or the Wyoming server at ``tts.uri`` (``tts.engine = "wyoming"``)."""
    if cfg.tts.engine == "wyoming":
        from iris_voice.speech.wyoming_tts import WyomingSynthesizer

        return WyomingSynthesizer(cfg.tts)
    from iris_voice.speech.tts import PiperSynthesizer

    return PiperSynthesizer(cfg.tts)


def build_listener(
    cfg: Config, engines: Engines, publish: Callable[[Event], None], *, wake: bool = True
) -> Listener:
    """The listener over ``engines`` as ``cfg`` says: the wake word (unless ``wake`` is
    False: file mode and benchmarks listen as in ``always`` mode) and the end of turn."""
    detector = engines.wake if wake and needs_wake_word(cfg) else None
    turn_end = None
    if engines.turn is not None or (cfg.stt.incremental and cfg.stt.speculative):
        # The sound of the pause (Smart Turn, or the silence), then the words before it.
        audio = cfg.audio
        turn_end = TurnEnd(
            engines.turn,
            audio.end_of_turn_threshold,
            silence_s=audio.vad_hangover_ms / 1000,
            recheck_s=audio.end_of_turn_recheck_ms / 1000,
            lead_in=functools.partial(is_wake_phrase_alone, cfg.wake.model),
        )
    return Listener(
        cfg.audio,
        engines.vad,
        detector,
        publish,
        wake_threshold=cfg.wake.threshold,
        turn_end=turn_end,
        keep_phrase=cfg.wake.keep_phrase,
    )


def build_devices(
    cfg: Config, source: AudioSource | None, sink: AudioSink | None, publish: Callable[[Event], None]
) -> tuple[AudioSource, AudioSink]:
    """The microphone and the speaker ``cfg.audio`` names, unless given (tests, file mode)."""
    if source is None or sink is None:
        from iris_voice.audio.capture import MicCapture
        from iris_voice.audio.playback import SpeakerSink

        source = source or MicCapture(cfg.audio, publish=publish)
        sink = sink or SpeakerSink(cfg.audio, publish=publish)
    return source, sink


def remote_listener(cfg: Config) -> ListenerPool:
    """The hub's ears for satellites that stream their microphones (``wyoming.ears``): sets
    of VAD, wake-word and end-of-turn models, each lent to one satellite at a time and
    reset for the next; up to four idle sets kept (fewer with a smaller ``serve.max_clients``)."""

    async def load() -> Engines:
        engines = build_engines(cfg, listen_only=True)
        await asyncio.gather(
            *(e.warmup() for e in (engines.vad, engines.wake, engines.turn) if e is not None)
        )
        return engines

    def reset(engines: Engines) -> None:
        engines.vad.reset()
        if engines.wake is not None:
            engines.wake.reset()

    def listen(engines: Engines) -> Listener:
        return build_listener(cfg, engines, lambda _event: None)

    return ListenerPool(load, listen, reset, keep=max(1, min(cfg.serve.max_clients, 4)))


async def warm_up(engines: Engines) -> dict[str, float]:
    """Load and exercise every model side by side; milliseconds each took."""
    took: dict[str, float] = {}

    async def timed(name: str, coro: Any) -> None:
        t0 = time.perf_counter()
        await coro
        took[name] = round((time.perf_counter() - t0) * 1000, 1)

    jobs = [timed("stt", engines.stt.warmup()), timed("tts", engines.tts.warmup())]
    jobs.append(timed("vad", engines.vad.warmup()))
    if engines.wake is not None:
        jobs.append(timed("wake", engines.wake.warmup()))
    if engines.turn is not None:
        jobs.append(timed("turn", engines.turn.warmup()))
    await asyncio.gather(*jobs)
    log.info("speech models ready: stt %s (%.0f ms), tts %s (%.0f ms)",
             engines.stt.name, took["stt"], engines.tts.name, took["tts"])  # fmt: skip
    return took


@dataclass
class App:
    """Every part of an assembled IRIS (see ``build_app``)."""

    cfg: Config
    """The configuration as the parts see it (with the MCP hint in the system prompt)."""
    bus: EventBus
    """Where every part publishes."""
    timers: TimerService
    """Timers and reminders (its ``run`` fires them; only the daemon runs it)."""
    registry: ToolRegistry
    """Built-in tools, and MCP tools once their servers list them."""
    responder: Assistant
    """Answers this machine's turns (the microphone, ``iris ask``): the ``desktop``
    conversation of ``conversations``."""
    backend: OllamaBackend
    """The model server, for health probes (``iris status``, ``iris doctor``)."""
    mcp: McpManager | None = None
    """The MCP servers (None when none is configured)."""
    engines: Engines | None = None
    """The speech engines (voice entry points only)."""
    conversations: Conversations = field(default=None)  # type: ignore[assignment]
    """Every conversation by origin (``conversation.origins``); made from ``responder``."""
    _closed: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.conversations is None:
            # Other origins' conversations are built like this machine's and share its model
            # server, one request at a time.
            serial = SerialBackend(self.responder.chat.backend)
            cfg, registry, publish = self.cfg, self.registry, self.bus.publish
            template: list[Assistant] = []  # built on the first other origin's turn, then shared

            def make() -> Assistant:
                if not template:
                    template.append(build_responder(cfg, registry, publish=publish, backend=serial))
                return template[0].sibling()

            self.conversations = Conversations(
                make, keep=cfg.conversations.keep, idle_s=cfg.conversations.idle_s, home=self.responder
            )

    async def start_mcp(self, task_group: asyncio.TaskGroup | None = None, *, wait: bool = False) -> None:
        """Start the MCP servers in the background (in ``task_group``: the daemon's), or for
        a one-shot command, ``wait`` until each is ready or failed once."""
        if self.mcp is None:
            return
        await self.mcp.start(task_group)
        if wait:
            await self.mcp.wait_settled()

    async def close(self, timeout: float = 8.0) -> None:
        """Stop the MCP servers and close the timer store (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.mcp is not None:
            await self.mcp.stop(timeout=timeout)
        self.timers.store.close()


def build_app(
    cfg: Config,
    *,
    speech: bool = False,
    wake: bool | None = None,
    engines: Engines | None = None,
    backend: ChatBackend | None = None,
    bus: EventBus | None = None,
    errlog: TextIO | None = None,
) -> App:
    """Check ``cfg`` (``checks``) and build every part; nothing is started or loaded yet.

    ``speech`` adds the speech engines (``engines`` given ones; ``wake`` overrides whether
    the wake-word model is built); ``backend`` replaces the Ollama server (tests); MCP
    servers' stderr goes to ``errlog`` (default: IRIS's).
    """
    checks.check(cfg, speech=speech and engines is None)
    bus = bus or EventBus()
    store = TimerStore(Path(cfg.tools.timers_db).expanduser() if cfg.tools.timers_db else None)
    timers = TimerService(store, bus.publish, tz_name=cfg.tools.timezone or None)
    registry = build_registry(cfg, timers)
    mcp = None
    if cfg.mcp.active():
        from iris_voice.tools.mcp.manager import McpManager, with_mcp_hint

        mcp = McpManager(cfg.mcp, errlog=errlog)
        mcp.register(registry, meta=not cfg.retrieval.enabled or cfg.retrieval.meta_tools)
        cfg = cfg.model_copy(update={"llm": with_mcp_hint(cfg.llm, mcp)})
    responder = build_responder(cfg, registry, publish=bus.publish, backend=backend)
    if speech and engines is None:
        engines = build_engines(cfg, wake)
    return App(cfg, bus, timers, registry, responder, OllamaBackend(cfg.llm), mcp, engines)


@contextlib.asynccontextmanager
async def open_app(
    cfg: Config,
    *,
    speech: bool = False,
    wait_mcp: bool = True,
    errlog: TextIO | None = None,
    **kwargs: Any,
) -> AsyncIterator[App]:
    """``build_app`` for a one-shot command: MCP servers started (and waited for, so their
    tools are listed) on entry, everything stopped on exit."""
    app = build_app(cfg, speech=speech, errlog=errlog, **kwargs)
    try:
        await app.start_mcp(wait=wait_mcp)
        yield app
    finally:
        await app.close()
