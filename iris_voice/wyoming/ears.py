"""The hub's ears for a satellite that streams its microphone, as Home Assistant's satellites do.

A stock Wyoming satellite decides nothing about a question: after ``run-pipeline`` it sends
bare ``audio-chunk`` events and leaves the wake word (``start_stage`` wake) and the end of
the question to its server, which answers ``detection``, ``voice-started``,
``voice-stopped`` and ``transcript``. ``RemoteEars`` runs IRIS's own listener — Silero
VAD, the wake word, the end of turn — over that stream (``StreamSource``) and hands each
finished question to the hub's turn. An IRIS satellite sends ``audio-start`` … ``audio-stop``
around a question it endpointed itself, and never needs this.

The models behind the ears (Silero VAD, the wake word, Smart Turn: ~30 MB a set) are the
hub's, not a connection's: ``ListenerPool`` lends a set to each streaming satellite and
takes it back, reset, when the satellite leaves, so a hundred satellites coming and going
load one set, not a hundred.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import numpy as np
from wyoming.event import Event
from wyoming.vad import VoiceStarted, VoiceStopped
from wyoming.wake import Detection

from iris_voice.audio import FRAME_SAMPLES
from iris_voice.events import Trigger
from iris_voice.voice.heard import BargeIn, CaptureStarted, Heard, UtteranceReady
from iris_voice.voice.listener import Listener

log = logging.getLogger(__name__)

STREAM_FORMAT = (16000, 2, 1)
"""The one format a streamed microphone may use: 16 kHz, 16-bit, mono (the stock
satellite's default); anything else is refused at its first chunk."""
MAX_QUEUED_FRAMES = 256
"""Frames (~8 s) waiting for the listener; beyond it the oldest go, as a microphone's would."""

Write = Callable[[Event], Awaitable[None]]


class StreamSource:
    """An ``AudioSource`` fed by ``push``: a satellite's streamed microphone, in frames."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[np.ndarray | None] = asyncio.Queue(MAX_QUEUED_FRAMES)
        self._rest = b""
        self.dropped = 0
        """Frames dropped because the listener fell behind."""

    def push(self, pcm: bytes) -> None:
        """Add 16 kHz mono int16 samples (any length; a half sample waits for the next)."""
        data = self._rest + pcm
        frame_bytes = FRAME_SAMPLES * 2
        whole = len(data) - len(data) % frame_bytes
        self._rest = data[whole:]
        for at in range(0, whole, frame_bytes):
            if self._queue.full():
                self._queue.get_nowait()
                self.dropped += 1
            self._queue.put_nowait(np.frombuffer(data[at : at + frame_bytes], np.int16))

    async def frames(self) -> AsyncIterator[np.ndarray]:
        """The frames as they arrive, until ``close``."""
        while (frame := await self._queue.get()) is not None:
            yield frame

    def close(self) -> None:
        """End the frames (the listener's loop ends)."""
        with contextlib.suppress(asyncio.QueueFull):
            while self._queue.full():
                self._queue.get_nowait()
            self._queue.put_nowait(None)


class ListenerPool:
    """Listeners over sets of listening models, lent and taken back (see the module notes).

    ``load`` makes a set of models (loaded and warmed), ``listen`` a fresh listener over a
    set, ``reset`` clears a set's streaming state before it is lent again. At most ``keep``
    idle sets are kept; one given back beyond them is let go.
    """

    def __init__(
        self,
        load: Callable[[], Awaitable[Any]],
        listen: Callable[[Any], Listener],
        reset: Callable[[Any], None],
        keep: int = 2,
    ) -> None:
        self._load, self._listen, self._reset, self.keep = load, listen, reset, keep
        self._idle: list[Any] = []
        self._lent: dict[int, Any] = {}  # id(listener) → its models
        self.loaded = 0
        """Sets of models loaded since start (``iris status``: flat while satellites come and go)."""

    @property
    def lent(self) -> int:
        """Sets lent out now."""
        return len(self._lent)

    async def take(self) -> Listener:
        """A listener over an idle set of models, or a newly loaded one."""
        if self._idle:
            models = self._idle.pop()
        else:
            models = await self._load()
            self.loaded += 1
            log.info("listening models loaded for a streamed microphone (%d sets so far, %d lent)",
                     self.loaded, len(self._lent) + 1)  # fmt: skip
        listener = self._listen(models)
        self._lent[id(listener)] = models
        return listener

    def give_back(self, listener: Listener) -> None:
        """``listener``'s models, reset, for the next satellite (the listener is done with)."""
        models = self._lent.pop(id(listener), None)
        if models is None:
            return
        try:
            self._reset(models)
        except Exception:  # a model that cannot be reset is not lent again
            log.warning("listening models not reset: let go", exc_info=True)
            return
        if len(self._idle) < self.keep:
            self._idle.append(models)


class RemoteEars:
    """A listener over one satellite's stream; ``on_question`` answers each question heard."""

    def __init__(
        self,
        listener: Listener,
        write: Write,
        on_question: Callable[[np.ndarray, Trigger], Awaitable[None]],
        on_barge_in: Callable[[], None],
        *,
        wake_name: str,
        wake: bool,
    ) -> None:
        self.listener = listener
        self.source = StreamSource()
        self.wake = wake
        """Listen for the wake word (``start_stage`` wake); else the question starts now."""
        self._write = write
        self._on_question = on_question
        self._on_barge_in = on_barge_in
        self._wake_name = wake_name
        self._heard: asyncio.Queue[Heard] = asyncio.Queue(16)
        self._tasks: list[asyncio.Task[None]] = []
        self.questions = 0
        self._dropped = 0

    def start(self) -> None:
        """Begin listening (in the running loop)."""
        self.listen(wake=self.wake)
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self.listener.run(self.source, self._heard), name="remote-ears"),
            loop.create_task(self._follow(), name="remote-ears-heard"),
        ]

    def listen(self, *, wake: bool) -> None:
        """A pipeline (re)starts: at the wake word, or (``wake`` False: the satellite heard
        its wake word itself) with the question itself, from the next frame."""
        self.wake = wake
        self.listener.idle()
        if not wake:
            self.listener.arm(Trigger.PUSH_TO_TALK)

    def push(self, pcm: bytes) -> None:
        """A chunk of the satellite's microphone."""
        self.source.push(pcm)

    def answering(self) -> None:
        """The hub is answering: the wake word interrupts."""
        self.listener.answering()

    def done(self) -> None:
        """The answer is over: back to the wake word (a satellite with a wake word of its own
        starts the next pipeline itself, and streams nothing until then)."""
        self.listener.idle()

    async def close(self) -> None:
        """Stop listening."""
        self.source.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []

    async def _follow(self) -> None:
        while True:
            heard = await self._heard.get()
            if isinstance(heard, CaptureStarted):
                if heard.trigger == Trigger.WAKE_WORD:
                    await self._write(Detection(name=self._wake_name).event())
                await self._write(VoiceStarted().event())
            elif isinstance(heard, UtteranceReady):
                await self._write(VoiceStopped().event())
                if self.source.dropped > self._dropped:  # the listener fell behind the stream
                    log.warning("%d frames of the streamed microphone were dropped before this question",
                                self.source.dropped - self._dropped)  # fmt: skip
                    self._dropped = self.source.dropped
                self.questions += 1
                await self._on_question(heard.utterance.audio, heard.utterance.trigger)
            elif isinstance(heard, BargeIn):
                log.info("the wake word over the answer (%s)", heard.how)
                self._on_barge_in()
