"""``iris ask --wav IN.wav [--out OUT.wav]``: voice turns from a file.

The same listener, transcriber, responder and speaker as the daemon, from the same
assembly, with a WAV file as the microphone and another as the speaker. Engines and
the language model are warmed up first, as in the running daemon, and the file plays
out as it would have reached the daemon in real time: while a question is being
captured or answered the frames keep real time (decodes overlap speech; a question
that follows waits, and is not lost), and only the silence in between is skipped. So
the timings are the ones a user would get: ``first_audio_ms`` runs from the end of
speech in the input to the first sample of the reply (the VAD hangover plus everything
after the endpoint decision).

A file is listened to as if IRIS were in ``always`` mode: any speech is a question,
and a leading wake phrase ("Hey Jarvis, …") is dropped from the transcript.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from iris_voice.app.assembly import App, Engines, build_app, build_listener, warm_up
from iris_voice.audio.files import WavSink, WavSource
from iris_voice.config import Config
from iris_voice.errors import LlmError
from iris_voice.llm.client import ChatBackend
from iris_voice.voice.pipeline import VoicePipeline
from iris_voice.voice.speaker import ReplySpeaker

log = logging.getLogger(__name__)


class NullSink:
    """An AudioSink that keeps nothing (file mode without ``--out``)."""

    def __init__(self) -> None:
        self._seconds = 0.0
        self.first_sample_at: float | None = None

    async def open(self) -> bool:
        """Nothing to open."""
        return True

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
    """Runs voice turns from WAV files with warm engines, in one conversation (reusable
    across files); ``async with FileTurns(cfg) as turns`` stops its MCP servers at the end."""

    def __init__(
        self,
        cfg: Config,
        engines: Engines | None = None,
        backend: ChatBackend | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        audio = cfg.audio.model_copy(update={"activation": "always", "barge_in": "off"})
        file_cfg = cfg.model_copy(update={"audio": audio})
        self.app: App = build_app(
            file_cfg, speech=True, wake=False, engines=engines, backend=backend, errlog=errlog
        )
        self.cfg = self.app.cfg
        if self.app.engines is None:
            raise RuntimeError("the assembly built no speech engines")
        self.engines: Engines = self.app.engines
        self.responder = self.app.responder
        self.timers = self.app.timers
        self._warm = False

    async def __aenter__(self) -> FileTurns:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def warmup(self) -> dict[str, float]:
        """Load the speech models and the language model, start the MCP servers (once)."""
        took: dict[str, float] = {}
        if not self._warm:
            await self.app.start_mcp(wait=True)
            took = await warm_up(self.engines)
            if self.cfg.llm.warmup:
                try:
                    await self.responder.warmup()
                except LlmError as exc:
                    # Questions the fast path answers need no model; the others say why they fail.
                    log.warning("language model not warmed up: %s [%s]", exc.message, exc.code)
            self._warm = True
        return took

    async def run(self, wav_in: Path, wav_out: Path | None = None) -> list[dict[str, Any]]:
        """Answer every question spoken in ``wav_in``; the trace of each turn."""
        await self.warmup()
        eng = self.engines
        sink = WavSink(wav_out, eng.tts.sample_rate) if wav_out else NullSink()
        eng.vad.reset()
        listener = build_listener(self.cfg, eng, self.app.bus.publish, wake=False)
        pipeline = VoicePipeline(
            listener, eng.stt, self.responder, ReplySpeaker(eng.tts, sink), self.app.bus,
            wake_name=self.cfg.wake.model,
        )  # fmt: skip
        # Trailing silence lets the endpointer finish a question that runs to the file's end,
        # even one whose last words a turn check calls unfinished (it waits the longest pause).
        pad = listener.longest_pause_s + 0.5
        # Real time also holds while the prompt cache is warmed: in the daemon that happens
        # in the silence after a reply, which the file must not skip past.
        warmer = self.responder.warmer
        source = WavSource(wav_in, trailing_silence_s=pad, pace=lambda: pipeline.busy or warmer.busy)
        try:
            await pipeline.run(source)
        finally:
            sink.close()
        return list(pipeline.turns)

    async def close(self) -> None:
        """Stop the MCP servers and close the timer store."""
        await self.app.close()
