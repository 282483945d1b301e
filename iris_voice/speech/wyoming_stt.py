"""``Transcriber`` on a Wyoming ASR server (``stt.engine = "wyoming"``), e.g.
``wyoming-faster-whisper`` on a GPU box.

One request per utterance: ``transcribe`` + ``audio-start`` / ``audio-chunk``… /
``audio-stop`` → ``transcript``. A server that streams its transcript
(``supports_transcript_streaming``) answers ``transcript-start`` / ``transcript-chunk``… /
``transcript-stop`` before the final ``transcript``; the final one is the text, and the
chunks are joined only if it never comes. IRIS has endpointed the audio already, so it
goes in one burst (16 kHz int16: 32 kB per second of speech, a few milliseconds on a LAN)
rather than frame by frame while the user speaks: a Whisper server decodes only at
``audio-stop`` anyway. Decoding while the user speaks is IRIS's own ``stt.incremental``
(``stt_stream``), which sends the pieces at pauses and the speculative decode as requests.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop

from iris_voice.config import SttConfig
from iris_voice.errors import Code, SpeechError
from iris_voice.speech.stt import SAMPLE_RATE, DecodeSession, as_float32
from iris_voice.speech.wyoming_client import Endpoint, Reachability, connect, describe

log = logging.getLogger(__name__)

CHUNK_SAMPLES = 1024
"""Samples per ``audio-chunk`` (64 ms at 16 kHz, as Wyoming's own clients send)."""
RETRY_AFTER_S = 2.0
"""After a failure, requests within this long fail at once with the same error: the pieces
of one utterance (``stt.incremental``) must not each wait ``stt.timeout_s`` for a hung
server; the next question, seconds later, tries the server again."""


def stt_endpoint(cfg: SttConfig) -> Endpoint:
    """The configured ASR server."""
    return Endpoint(cfg.uri, "stt.uri", cfg.timeout_s, Code.STT_UNREACHABLE)


class WyomingTranscriber:
    """``Transcriber`` that sends each utterance (or piece of one) to a Wyoming ASR server;
    ``StreamingTranscriber`` wraps it for ``stt.incremental`` as it wraps faster-whisper."""

    supports_streaming = False
    """One request per call (the audio is sent once IRIS has it all)."""

    def __init__(self, cfg: SttConfig) -> None:
        self.cfg = cfg
        self.endpoint = stt_endpoint(cfg)
        self.name = f"wyoming {cfg.uri}"
        self.reach = Reachability(self.endpoint, "speech recognition server (stt.uri)")
        self.streams_transcript = False
        """The server said (``info``) that it streams its transcript."""
        self._failed_at = 0.0
        self.sent_ms: float | None = None
        """The last request's protocol work on this side: connecting and sending the audio."""

    async def transcribe(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> str:
        """Text of ``audio`` (float32 mono, 16 kHz, -1..1; int16 is sent as is); "" for nothing.

        ``prompt`` (the words before this piece, ``stt.incremental``) and ``lead`` (the wake
        phrase the audio starts with) have no Wyoming field: the server hears the audio
        alone, and the pipeline strips the wake phrase from its text.
        Raises ``SpeechError`` (``stt-unreachable``) naming ``stt.uri`` when the server is
        gone, slow beyond ``stt.timeout_s`` or reports an error.
        """
        pcm = _pcm16(audio)
        if pcm.size == 0:
            return ""
        start = time.perf_counter()
        if self.reach.down is not None and time.monotonic() - self._failed_at < RETRY_AFTER_S:
            raise SpeechError(self.endpoint.code, self.reach.down)
        try:
            text = await self._request(pcm)
        except SpeechError as exc:
            self.reach.failed(exc)
            self._failed_at = time.monotonic()
            raise
        self.reach.answered()
        log.debug("remote transcript of %.2f s in %.3f s: %r",
                  pcm.size / SAMPLE_RATE, time.perf_counter() - start, text)  # fmt: skip
        return " ".join(text.split())

    async def _request(self, pcm: np.ndarray) -> str:
        fmt = {"rate": SAMPLE_RATE, "width": 2, "channels": 1}
        start = time.perf_counter()
        async with connect(self.endpoint) as session:
            language = self.cfg.language or None
            await session.send(Transcribe(language=language).event())
            await session.send(AudioStart(**fmt).event())
            data = pcm.tobytes()
            step = CHUNK_SAMPLES * 2
            for offset in range(0, len(data), step):
                await session.send(AudioChunk(audio=data[offset : offset + step], **fmt).event())
            await session.send(AudioStop().event())
            self.sent_ms = (time.perf_counter() - start) * 1000
            pieces: list[str] = []
            while True:
                event = await session.receive()
                if Transcript.is_type(event.type):
                    return str(Transcript.from_event(event).text or "")
                if TranscriptChunk.is_type(event.type):
                    pieces.append(TranscriptChunk.from_event(event).text)
                elif TranscriptStop.is_type(event.type) and pieces:
                    # A streaming server sends the final transcript after the stop; wait
                    # for it, but a server that does not still gets its words heard.
                    try:
                        event = await session.receive()
                    except SpeechError:
                        return "".join(pieces)
                    if Transcript.is_type(event.type):
                        return str(Transcript.from_event(event).text or "")
                    return "".join(pieces)

    def open_session(self, lead: str = "") -> DecodeSession:
        """Not offered: see ``supports_streaming``."""
        raise NotImplementedError("WyomingTranscriber sends whole utterances")

    async def warmup(self) -> None:
        """Ask the server what it serves (``describe``), so a dead server is reported at
        start; never raises for an unreachable server (IRIS starts, and retries each turn)."""
        try:
            info = await describe(self.endpoint)
        except SpeechError as exc:
            self.reach.failed(exc)
            return
        self.reach.answered()
        programs = [p for p in info.asr if p.installed] or info.asr
        if not programs:
            log.warning("stt.uri: %s offers no speech recognition (asr) program", self.cfg.uri)
            return
        program = programs[0]
        self.streams_transcript = bool(program.supports_transcript_streaming)
        models = ", ".join(m.name for m in program.models) or "?"
        self.name = f"{program.name} ({models}) at {self.cfg.uri}"
        log.info("speech recognition: %s", self.name)


def _pcm16(audio: np.ndarray) -> np.ndarray:
    """int16 mono samples: float input (-1..1) is converted, int16 passes through."""
    samples = np.asarray(audio)
    if samples.dtype == np.int16 and samples.ndim == 1:
        return samples
    floats = as_float32(samples)
    return (np.clip(floats, -1.0, 1.0) * 32767.0).astype(np.int16)
