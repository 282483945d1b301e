"""Speaking a reply: sentences in, audio out, and an account of what was actually heard.

The chat loop's sentences are read by one task and synthesized by another, so the
model keeps writing sentence two while sentence one is being synthesized and played.
Each sentence's end is recorded as a position in the sink's playback clock; after a
barge-in, the sentences whose audio fully played are what the user heard, and only
those go into the conversation history. A reply still unwritten at its deadline is
preceded by the late cue (``latecue``), which is none of the reply's sentences.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import numpy as np

from iris_voice.audio.protocols import AudioSink
from iris_voice.speech.tts import Synthesizer
from iris_voice.voice.latecue import GRACE_S, LateCue

log = logging.getLogger(__name__)

_END = object()


CUT_TOLERANCE_S = 0.05
"""Audio a reply may lose to rounding and resampling and still count as played whole."""


@dataclass
class SpokenReply:
    """What happened while a reply was spoken."""

    sentences: list[str] = field(default_factory=list)
    """Every sentence handed to the synthesizer, in order."""
    heard: list[str] = field(default_factory=list)
    """The sentences whose audio finished playing (all of them unless interrupted)."""
    interrupted: bool = False
    """True when cut off (barge-in, ``iris stop``) before the end."""
    first_audio_at: float | None = None
    """``time.monotonic()`` when the first audio reached the sink."""
    tts_first_ms: float | None = None
    """Synthesis time of the first audio chunk."""
    audio_s: float = 0.0
    """Seconds of audio produced."""
    cue_at: float | None = None
    """``time.monotonic()`` when the late cue went to the sink, if the reply was late."""

    @property
    def spoken(self) -> str:
        """The heard part as one text."""
        return " ".join(self.heard)


class ReplySpeaker:
    """Speaks streams of sentences through a ``Synthesizer`` into an ``AudioSink``."""

    def __init__(
        self,
        tts: Synthesizer,
        sink: AudioSink,
        clock: Callable[[], float] = time.monotonic,
        max_pending: int = 8,
        on_sentence: Callable[[str], None] | None = None,
        cue: LateCue | None = None,
    ) -> None:
        self.tts = tts
        self.cue = cue
        """Said when a reply is late (``speak``'s ``cue_at``); None never."""
        self.on_sentence = on_sentence
        """Told each sentence as it goes to the synthesizer (the echo guard listens)."""
        self.sink = sink
        self._clock = clock
        self._max_pending = max_pending

    async def play_clip(self, samples: np.ndarray, rate: int) -> None:
        """Play a ready-made clip (a chime) and wait until it has been heard."""
        await self.sink.play(samples, rate)
        await self.sink.drain()

    async def speak(
        self,
        sentences: AsyncIterator[str],
        reply: SpokenReply | None = None,
        on_first_audio: Callable[[SpokenReply], None] | None = None,
        cue_at: float | None = None,
    ) -> SpokenReply:
        """Speak every sentence and wait until the audio has played.

        Pass ``reply`` to read what was heard even if this is cancelled (barge-in):
        it is filled in as the speech goes. An exception from ``sentences`` (the model
        server failing) is raised after what was already said has been played. With
        ``cue_at`` (on this speaker's clock) and a ``cue``, a first sentence not ready by
        then is preceded by the cue.
        """
        reply = reply if reply is not None else SpokenReply()
        queue: asyncio.Queue[object] = asyncio.Queue(self._max_pending)
        failure: list[BaseException] = []
        base = self.sink.played_seconds()
        ends: list[float] = []  # playback-clock position where each sentence's audio ends

        async def read() -> None:
            try:
                async for sentence in sentences:
                    await queue.put(sentence)
            except Exception as exc:  # handed to the speaking side, raised after playback
                failure.append(exc)
            finally:
                await queue.put(_END)

        reader = asyncio.create_task(read(), name="reply-reader")
        try:
            if cue_at is None:
                item, cue_s = await queue.get(), 0.0
            else:
                item, cue_s = await self._first(queue, cue_at, reply)
            base += cue_s  # the cue plays first and is none of the reply's sentences
            while item is not _END:
                sentence = str(item)
                reply.sentences.append(sentence)
                if self.on_sentence is not None:
                    self.on_sentence(sentence)
                started = self._clock()
                async for chunk in self.tts.stream(sentence):
                    if reply.first_audio_at is None:
                        reply.tts_first_ms = round((self._clock() - started) * 1000, 1)
                    await self.sink.play(chunk, self.tts.sample_rate)
                    reply.audio_s += len(chunk) / self.tts.sample_rate
                    if reply.first_audio_at is None:
                        reply.first_audio_at = self._clock()
                        if on_first_audio is not None:
                            on_first_audio(reply)
                ends.append(reply.audio_s)
                self._update_heard(reply, ends, base)
                item = await queue.get()
            await self.sink.drain()
            self._update_heard(reply, ends, base)
            if self.sink.played_seconds() - base + CUT_TOLERANCE_S < reply.audio_s:
                reply.interrupted = True  # the sink was stopped under it (a barge-in over an announcement)
            else:
                reply.heard = list(reply.sentences)
        except asyncio.CancelledError:
            reply.interrupted = True
            self._update_heard(reply, ends, base)
            raise
        finally:
            if not reader.done():
                reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            with contextlib.suppress(Exception):
                await sentences.aclose()  # type: ignore[attr-defined]  # lets the chat loop record the turn
        if failure:
            raise failure[0]
        return reply

    async def _first(
        self, queue: asyncio.Queue[object], cue_at: float, reply: SpokenReply
    ) -> tuple[object, float]:
        """The first item of ``queue``, and the seconds of cue played before it: the cue
        plays when there is one and the item is not there by ``cue_at``."""
        if self.cue is None:
            return await queue.get(), 0.0
        try:
            return await asyncio.wait_for(queue.get(), max(GRACE_S, cue_at - self._clock())), 0.0
        except TimeoutError:
            pass
        samples = await self.cue.prepare(self.tts)
        if self.on_sentence is not None:
            self.on_sentence(self.cue.text)  # the echo guard hears IRIS say it
        reply.cue_at = self._clock()
        log.info("reply late: saying %r", self.cue.text)
        await self.sink.play(samples, self.tts.sample_rate)
        return await queue.get(), len(samples) / self.tts.sample_rate

    def _update_heard(self, reply: SpokenReply, ends: list[float], base: float) -> None:
        played = self.sink.played_seconds() - base + 1e-6
        reply.heard = [s for s, end in zip(reply.sentences, ends, strict=False) if end <= played]

    async def say(self, text: str) -> SpokenReply:
        """Speak one fixed text (``iris say``, an announcement)."""

        async def one() -> AsyncIterator[str]:
            yield text

        return await self.speak(one())
