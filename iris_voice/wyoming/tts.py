"""``TtsPart``: text to speech for ``iris serve``, with IRIS's Piper voice.

``synthesize`` → one ``audio-start``, the chunks of every sentence, ``audio-stop``.
Streaming, in the order ``wyoming-piper`` uses and Home Assistant expects:
``synthesize-start``, then ``synthesize-chunk``s — each sentence they complete is spoken
at once as its own ``audio-start/chunk/stop`` — the ``synthesize`` sent for compatibility
inside a stream is ignored, and ``synthesize-stop`` speaks the rest and ends with
``synthesize-stopped``.

A ``synthesize`` whose text is not a string is answered with an ``error`` (``bad-text``),
one longer than ``serve.max_synthesize_chars`` with an ``error`` (``too-long``) — and so is
a stream once its text adds up to more: the rest of that stream is then ignored up to its
``synthesize-stop``, still answered with ``synthesize-stopped``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import TtsProgram, TtsVoice
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped

from iris_voice import __version__
from iris_voice.llm.sentences import SentenceSplitter
from iris_voice.speech.tts import Synthesizer
from iris_voice.wyoming.info import IRIS, PIPER, voice_language
from iris_voice.wyoming.part import Connection

log = logging.getLogger(__name__)

SAMPLES_PER_CHUNK = 1024
MAX_STREAM_CHARS = 20_000
"""Most text one streamed synthesis may hold unspoken (a sentence never ending)."""
JSON_KINDS = {bool: "true/false", int: "a number", float: "a number", list: "a list", dict: "an object"}
"""What a client sent instead of a string, in its own (JSON) terms."""


@dataclass
class _TextStream:
    """A ``synthesize-start`` stream being received."""

    splitter: SentenceSplitter = field(default_factory=SentenceSplitter)
    pending: int = 0
    """Characters received since the last sentence was spoken (about)."""
    total: int = 0
    """Characters received in the whole stream (capped at ``max_synthesize_chars``)."""
    refused: bool = False
    """An ``error`` was sent for this stream: its further text is ignored."""


class TtsPart:
    """``synthesize`` and ``synthesize-start/chunk/stop`` → audio, one Piper voice."""

    KEY = "tts"

    def __init__(self, tts: Synthesizer, *, language: str, max_synthesize_chars: int = 2000) -> None:
        self.tts = tts
        self.language = voice_language(tts.name, language or "en")
        self.max_chars = max_synthesize_chars
        """Longest text one ``synthesize`` (or one stream, in all) may ask for."""

    def describe(self) -> dict[str, list[Any]]:
        """One TTS program with IRIS's voice, streaming offered."""
        voice = TtsVoice(
            name=self.tts.name, attribution=PIPER, installed=True, languages=[self.language],
            description=f"Piper voice {self.tts.name}", version=None,
        )  # fmt: skip
        program = TtsProgram(
            name="iris-piper", attribution=IRIS, installed=True, version=__version__,
            description="IRIS text to speech (Piper)", voices=[voice], supports_synthesize_streaming=True,
        )  # fmt: skip
        return {"tts": [program]}

    async def handle(self, event: Event, conn: Connection) -> bool:
        """Take the synthesis events."""
        stream: _TextStream | None = conn.state.get(self.KEY)
        if Synthesize.is_type(event.type):
            if stream is None:  # inside a stream it only repeats the text for old servers
                text = await self._text(event, len_so_far=0, conn=conn)
                if text is not None:
                    await self._speak_all(text, conn)
            return True
        if SynthesizeStart.is_type(event.type):
            conn.state[self.KEY] = _TextStream()
            return True
        if SynthesizeChunk.is_type(event.type):
            if stream is None:
                return False
            if not stream.refused:
                await self._chunk(event, stream, conn)
            return True
        if SynthesizeStop.is_type(event.type):
            if stream is None:
                return False
            del conn.state[self.KEY]
            rest = stream.splitter.flush()
            if rest and not stream.refused:
                await self._speak([rest], conn)
            await conn.write_event(SynthesizeStopped().event())
            return True
        return False

    async def _chunk(self, event: Event, stream: _TextStream, conn: Connection) -> None:
        text = await self._text(event, len_so_far=stream.total, conn=conn)
        if text is None:
            stream.refused = True
            return
        stream.total += len(text)
        sentences = stream.splitter.feed(text)
        stream.pending = 0 if sentences else stream.pending + len(text)
        if stream.pending > MAX_STREAM_CHARS:  # a sentence that never ends: speak it now
            rest, stream.pending = stream.splitter.flush(), 0
            sentences.extend([rest] if rest else [])
        for sentence in sentences:
            await self._speak([sentence], conn)

    async def _text(self, event: Event, *, len_so_far: int, conn: Connection) -> str | None:
        """The event's ``text`` when it is a string that keeps the text (``len_so_far``
        characters before it) within ``max_chars``; otherwise None, after an ``error``."""
        text = event.data.get("text") if isinstance(event.data, dict) else None
        if not isinstance(text, str):
            kind = "missing" if text is None else JSON_KINDS.get(type(text), type(text).__name__)
            await self._refuse(f"{event.type} text must be a string, not {kind}", "bad-text", conn)
            return None
        if len_so_far + len(text) > self.max_chars:
            what = "the text streamed since synthesize-start" if len_so_far else f"{event.type} text"
            why = f"{what} is longer than serve.max_synthesize_chars = {self.max_chars} characters"
            await self._refuse(why, "too-long", conn)
            return None
        return text

    async def _refuse(self, why: str, code: str, conn: Connection) -> None:
        log.warning("wyoming client %s: %s; refused", conn.peer, why)
        await conn.write_event(Error(text=why, code=code).event())

    async def _speak_all(self, text: str, conn: Connection) -> None:
        from iris_voice.llm.sentences import split_sentences

        await self._speak(split_sentences(text) or [text], conn)

    async def _speak(self, sentences: list[str], conn: Connection) -> None:
        """One ``audio-start``, every sentence's audio in chunks, ``audio-stop``."""
        rate = self.tts.sample_rate
        await conn.write_event(AudioStart(rate=rate, width=2, channels=1).event())
        for sentence in sentences:
            async for audio in self.tts.stream(sentence):
                pcm = np.asarray(audio, dtype="<i2").tobytes()
                step = SAMPLES_PER_CHUNK * 2
                for i in range(0, len(pcm), step):
                    chunk = AudioChunk(rate=rate, width=2, channels=1, audio=pcm[i : i + step])
                    await conn.write_event(chunk.event())
        await conn.write_event(AudioStop().event())
        log.debug("wyoming synthesize for %s: %d sentence(s)", conn.peer, len(sentences))

    async def closed(self, conn: Connection) -> None:
        """Drop an unfinished text stream."""
        conn.state.pop(self.KEY, None)

    async def aclose(self) -> None:
        """Nothing runs outside a client's own events."""
