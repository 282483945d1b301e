"""``iris ask --wav IN.wav [--out OUT.wav]``: a whole voice turn from a file.

The same listener, transcriber, chat loop and speaker as the daemon, with a WAV file
as the microphone and another as the speaker. Engines and the language model are
warmed up first, as in the running daemon, so the timings are the ones a user would
get: ``first_audio_ms`` runs from the end of speech in the input to the first sample
of the reply (the VAD hangover plus everything after the endpoint decision).

A file is listened to as if IRIS were in ``always`` mode: any speech is a question,
and a leading wake phrase ("Hey Jarvis, …") is dropped from the transcript.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from iris_voice.config import Config
from iris_voice.engines import Engines, build_engines, warm_up
from iris_voice.events import EventBus
from iris_voice.listener import Listener
from iris_voice.llm.client import ChatBackend, LlmError
from iris_voice.llm.loop import ChatLoop
from iris_voice.llm.responder import Responder, build_responder
from iris_voice.pipeline import VoicePipeline
from iris_voice.speaker import ReplySpeaker
from iris_voice.tools.builtin import build_registry

log = logging.getLogger(__name__)


class NullSink:
    """An AudioSink that keeps nothing (file mode without ``--out``)."""

    def __init__(self) -> None:
        self._seconds = 0.0

    async def play(self, chunk, sample_rate: int) -> None:
        """Count the audio as played at once."""
        self._seconds += len(chunk) / sample_rate

    async def drain(self) -> None:
        """Nothing is pending."""

    def stop(self) -> float:
        """Nothing to drop."""
        return 0.0

    def played_seconds(self) -> float:
        """Everything given so far."""
        return self._seconds

    def close(self) -> None:
        """Nothing to close."""


class FileTurns:
    """Runs voice turns from WAV files with warm engines (reusable across files)."""

    def __init__(
        self, cfg: Config, engines: Engines | None = None, backend: ChatBackend | None = None
    ) -> None:
        audio = cfg.audio.model_copy(update={"activation": "always", "barge_in": "off"})
        self.cfg = cfg.model_copy(update={"audio": audio})
        self.engines = engines or build_engines(self.cfg, wake=False)
        self.bus = EventBus()
        self.registry, self.timers = build_registry(self.cfg, self.bus.publish)
        if backend is None:
            self.chat: Responder = build_responder(self.cfg, self.registry, self.bus.publish)
        else:  # a given backend (tests): the local loop alone
            self.chat = ChatLoop(backend, self.registry, self.cfg.llm, self.bus.publish)
        self._warm = False

    async def warmup(self) -> dict[str, float]:
        """Load the speech models and the language model (once)."""
        took: dict[str, float] = {}
        if not self._warm:
            took = await warm_up(self.engines)
            if self.cfg.llm.warmup:
                try:
                    await self.chat.warmup()
                except LlmError as exc:
                    # Questions the fast path answers need no model; the others say why they fail.
                    log.warning("language model not warmed up: %s [%s]", exc.message, exc.code)
            self._warm = True
        return took

    async def run(self, wav_in: Path, wav_out: Path | None = None) -> list[dict[str, Any]]:
        """Answer every question spoken in ``wav_in``; the trace of each turn."""
        from iris_voice.audio.files import WavSink, WavSource

        await self.warmup()
        # Trailing silence lets the endpointer finish a question that runs to the file's end.
        pad = self.cfg.audio.vad_hangover_ms / 1000 + 0.5
        source = WavSource(wav_in, trailing_silence_s=pad)
        sink = WavSink(wav_out, self.engines.tts.sample_rate) if wav_out else NullSink()
        eng = self.engines
        self.engines.vad.reset()
        listener = Listener(self.cfg.audio, eng.vad, None, self.bus.publish)
        pipeline = VoicePipeline(
            listener, eng.stt, self.chat, ReplySpeaker(eng.tts, sink), self.bus, wake_name=self.cfg.wake.model
        )
        try:
            await pipeline.run(source)
        finally:
            sink.close()
        return list(pipeline.turns)
