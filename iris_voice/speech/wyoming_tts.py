"""``Synthesizer`` on a Wyoming TTS server (``tts.engine = "wyoming"``), e.g. ``wyoming-piper``.

IRIS already hands the synthesizer one sentence (or first clause) at a time; each is one
request. A server that streams (``supports_synthesize_streaming`` in its ``info``) gets
``synthesize-start`` / ``synthesize-chunk`` / ``synthesize-stop`` and answers audio per
sentence it finds, then ``synthesize-stopped``; any other gets ``synthesize`` and answers
``audio-start`` / ``audio-chunk``… / ``audio-stop``. Either way every ``audio-chunk`` is
yielded the moment it arrives, so playback starts on the first one.

``sample_rate`` is learned at ``warmup`` from the server's ``audio-start`` (a short
synthesis); a later reply at another rate is resampled to it, so the sink never sees a
rate change in the middle of a reply.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from iris_voice.audio.resample import StreamResampler, to_int16
from iris_voice.config import TtsConfig
from iris_voice.errors import Code, SpeechError
from iris_voice.speech.tts import speakable
from iris_voice.speech.wyoming_client import Endpoint, Reachability, Session, connect, describe

log = logging.getLogger(__name__)

DEFAULT_RATE = 22050
"""The rate assumed until the server has said (Piper's medium voices)."""


def tts_endpoint(cfg: TtsConfig) -> Endpoint:
    """The configured TTS server."""
    return Endpoint(cfg.uri, "tts.uri", cfg.timeout_s, Code.TTS_UNREACHABLE)


class WyomingSynthesizer:
    """``Synthesizer`` that asks a Wyoming TTS server for each sentence's audio.

    ``tts.voice`` names one of the server's voices ("" = its default); ``tts.volume``
    scales the samples here; ``tts.length_scale`` has no Wyoming field (set the server's).
    """

    def __init__(self, cfg: TtsConfig) -> None:
        self.cfg = cfg
        self.endpoint = tts_endpoint(cfg)
        self.name = f"wyoming {cfg.uri}"
        self.sample_rate = DEFAULT_RATE
        self.streaming = False
        """The server said (``info``) that it takes text as a stream."""
        self.reach = Reachability(self.endpoint, "speech synthesis server (tts.uri)")
        self._voice = SynthesizeVoice(name=cfg.voice) if cfg.voice else None
        if cfg.length_scale != 1.0:
            scale = cfg.length_scale
            log.warning("tts.length_scale = %g does nothing with tts.engine = \"wyoming\": the pace is "
                        "the server's (wyoming-piper --length-scale %g)", scale, scale)  # fmt: skip

    async def stream(self, text: str) -> AsyncIterator[np.ndarray]:
        """Speak ``text``: int16 mono chunks at ``sample_rate`` as they arrive; nothing for
        text with nothing to pronounce. ``SpeechError`` (``tts-unreachable``, naming
        ``tts.uri``) when the server is gone, too slow (``tts.timeout_s``) or fails."""
        clean = speakable(text)
        if not clean:
            return
        try:
            async for chunk in self._request(clean):
                yield chunk
        except SpeechError as exc:
            self.reach.failed(exc)
            raise
        self.reach.answered()

    async def _request(self, text: str) -> AsyncIterator[np.ndarray]:
        async with connect(self.endpoint) as session:
            if self.streaming:
                await session.send(SynthesizeStart(voice=self._voice).event())
                await session.send(SynthesizeChunk(text).event())
                await session.send(SynthesizeStop().event())
            else:
                await session.send(Synthesize(text, voice=self._voice).event())
            async for chunk in self._audio(session):
                yield chunk

    async def _audio(self, session: Session) -> AsyncIterator[np.ndarray]:
        """The reply's audio, converted to ``sample_rate``, until the reply ends."""
        resampler: StreamResampler | None = None
        while True:
            event = await session.receive()
            if AudioStart.is_type(event.type):
                rate = int(AudioStart.from_event(event).rate)
                if rate != self.sample_rate:
                    log.debug("tts.uri: audio at %d Hz, resampled to %d Hz", rate, self.sample_rate)
                resampler = StreamResampler(rate, self.sample_rate)
            elif AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                if resampler is None or resampler.src_rate != chunk.rate:
                    resampler = StreamResampler(chunk.rate, self.sample_rate)
                samples = resampler.process(self._samples(chunk))
                if samples.size:
                    yield self._scaled(samples)
            elif AudioStop.is_type(event.type):
                if resampler is not None:
                    tail = resampler.process(np.zeros(0, dtype=np.int16), last=True)
                    if tail.size:
                        yield self._scaled(tail)
                    resampler = None
                if not self.streaming:
                    return
            elif SynthesizeStopped.is_type(event.type):
                return

    def _samples(self, chunk: AudioChunk) -> np.ndarray:
        if chunk.width != 2:
            raise SpeechError(
                Code.TTS_UNREACHABLE,
                f"tts.uri: {self.cfg.uri} sent {chunk.width * 8}-bit audio; IRIS plays 16-bit PCM",
            )
        samples = np.frombuffer(chunk.audio, dtype="<i2")
        if chunk.channels > 1:
            usable = len(samples) - len(samples) % chunk.channels
            samples = to_int16(samples[:usable].reshape(-1, chunk.channels))
        return samples.astype(np.int16, copy=False)

    def _scaled(self, samples: np.ndarray) -> np.ndarray:
        if self.cfg.volume == 1.0:
            return samples
        scaled = samples.astype(np.float32) * self.cfg.volume
        return np.clip(scaled, -32768, 32767).astype(np.int16)

    async def warmup(self) -> None:
        """Ask the server what it serves and synthesize a word, learning ``sample_rate``;
        never raises for an unreachable server (IRIS starts, and retries each reply)."""
        started = time.perf_counter()
        try:
            info = await describe(self.endpoint)
        except SpeechError as exc:
            self.reach.failed(exc)
            return
        programs = [p for p in info.tts if p.installed] or info.tts
        if not programs:
            log.warning("tts.uri: %s offers no speech synthesis (tts) program", self.cfg.uri)
            return
        program = programs[0]
        self.streaming = bool(program.supports_synthesize_streaming)
        self.name = f"{program.name} at {self.cfg.uri}"
        try:
            self.sample_rate = await self._probe_rate()
        except SpeechError as exc:
            self.reach.failed(exc)
            return
        self.reach.answered()
        log.info("speech synthesis: %s (%d Hz, %s) ready in %.0f ms", self.name, self.sample_rate,
                 "streaming" if self.streaming else "whole requests",
                 (time.perf_counter() - started) * 1000)  # fmt: skip

    async def _probe_rate(self) -> int:
        """The rate of the server's audio for a short word (what it will send from now on)."""
        async with connect(self.endpoint) as session:
            await session.send(Synthesize("Ready.", voice=self._voice).event())
            rate = DEFAULT_RATE
            while True:
                event = await session.receive()
                if AudioStart.is_type(event.type):
                    rate = int(AudioStart.from_event(event).rate)
                elif AudioStop.is_type(event.type):
                    return rate
