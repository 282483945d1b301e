"""Incremental speech to text: decode an utterance while it is still being spoken.

Whisper decodes a whole window at once, so the usual pipeline waits for the end of
speech and then pays for the whole utterance. Here the listener feeds every captured
frame, with its VAD verdict, to an ``IncrementalSession``; whenever the speaker pauses, the
audio up to the middle of the pause is decoded in a worker thread and its text is
committed, so that at the end of speech only the uncommitted tail is left to decode.

Why commit at VAD pauses rather than at Whisper's word timestamps: a cut in silence
never splits a word, so each committed piece is decoded once, exactly as a single
pass would see that stretch of speech, and is never revised. Word-timestamp
"local agreement" schemes decode the same audio again and again until the words
stop changing — several times the CPU on a machine with 2 cores that also runs the
VAD and the wake word during speech. The price is that speech without any pause
gains nothing, and falls back to one decode at the end (never worse than today).

Rules, each for a reason:

- A pause is ``pause_s`` of consecutive non-speech frames inside the utterance; it
  must be shorter than ``audio.vad_hangover_ms``, or the endpointer ends the
  utterance first. The last pause before the end of speech is one too: the decode of
  everything so far starts while the hangover is still running, so even a short
  question is decoded a little earlier (then it is one decode, as a single pass).
- A cut needs ``min_chunk_s`` of audio since the previous cut (the first: since speech
  began, not counting a pre-roll), with some speech in it: Whisper is less accurate on
  tiny pieces ("Hey Jarvis" alone), and each decode has a fixed cost.
- At most one decode is in flight per session; a pause that comes while one runs is
  skipped (a later pause, or the tail, covers that audio). Decodes never pile up.
- Each piece after the first gets the committed text as Whisper's ``initial_prompt``,
  so it continues the sentence (casing, punctuation, names) as one pass would.
- ``cancel()`` (barge-in, stop, no-speech timeout, a newer question) discards the
  session: a decode already running in its thread cannot be interrupted, but its
  result is dropped and no new decode starts.
- If a partial decode failed, ``finish`` decodes the whole utterance in one pass.
- With ``speculative``, a pause too early for a cut of its own (a short question, or
  less than ``min_chunk_s`` since the last cut) still starts a decode of everything
  not yet committed, as if the speaker were done: if they are, ``finish`` has the
  text already (nothing is left to decode after the end of speech), and
  ``speculation()`` offers it to the pipeline before the end of turn is decided. If
  speech resumes, that text is dropped, uncommitted: the next pause or the tail covers
  the audio again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import numpy as np

from iris_voice.speech.stt import SAMPLE_RATE, as_float32

log = logging.getLogger(__name__)

MIN_SPEECH_S = 0.2
"""Speech a piece must contain before it is worth a decode of its own."""
SPECULATE_MIN_SPEECH_S = 0.7
"""Speech since the last cut before a pause is worth a speculative decode: "Hey Jarvis"
(~0.6 s) and its comma are no question, and a decode of it would hold the model while
the question's own pause comes."""

Decode = Callable[[np.ndarray, str], Awaitable[str]]
"""``decode(float32 audio, initial_prompt) -> text``, running the model off the event loop."""


class PromptedTranscriber(Protocol):
    """A Transcriber whose ``transcribe`` also takes the text said before (Whisper's prompt)."""

    name: str
    """Model name, for logs and ``iris status``."""

    async def transcribe(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> str:
        """Text of ``audio``; ``prompt`` is the text that preceded it, ``lead`` the words it
        starts with (``Transcriber.transcribe``)."""
        ...

    async def warmup(self) -> None:
        """Load the model."""
        ...


def join_texts(pieces: list[str]) -> str:
    """The committed pieces as one transcript (empty pieces dropped, single spaces)."""
    return " ".join(" ".join(p.split()) for p in pieces if p.strip())


class IncrementalSession:
    """One utterance, decoded piece by piece while it is spoken (see the module notes).

    ``feed`` runs on the event loop for every captured frame and only counts and maybe
    starts a decode task; ``finish`` returns the transcript; ``cancel`` discards all.
    """

    def __init__(
        self,
        decode: Decode,
        min_chunk_s: float = 2.0,
        pause_s: float = 0.15,
        speculative: bool = False,
        first: Decode | None = None,
    ) -> None:
        self._decode = decode
        self._first = first or decode  # a decode from the utterance's start (it knows the lead)
        self._speculative = speculative
        self._spec: asyncio.Task[str] | None = None  # a decode of everything up to _spec_cut
        self._spec_cut = 0
        self._min_chunk = round(min_chunk_s * SAMPLE_RATE)
        self._pause = round(pause_s * SAMPLE_RATE)
        self._frames: list[np.ndarray] = []
        self._n = 0  # samples fed
        self._silence_run = 0  # samples of non-speech since the last speech frame
        self._pause_used = False  # this pause already produced a cut
        self._speech_since_cut = 0  # speech samples after the latest cut
        self._last_speech_end = 0  # sample index where the last speech frame ended
        self._first_speech: int | None = None  # sample index where the first speech frame began
        self._cut = 0  # where the next piece starts (the end of the audio being decoded)
        self._committed = 0  # end of the audio whose text is in _texts
        self._texts: list[str] = []
        self._task: asyncio.Task[None] | None = None
        self._failed = False
        self._closed = False  # finishing or cancelled: no new partial decodes
        self.cancelled = False
        """True once the session was discarded."""
        self.partials = 0
        """Pieces decoded while the utterance was spoken (and committed)."""
        self.skipped = 0
        """Pauses passed over because a decode was already running."""
        self.tail_ms: float | None = None
        """How long the decode after the end of speech took (None: nothing was left)."""
        self.speculations = 0
        """Decodes started at a pause as if it ended the utterance."""
        self.speculated = False
        """The transcript came from a decode started at the last pause (no tail decode)."""

    @property
    def busy(self) -> bool:
        """A partial or speculative decode is in flight."""
        return any(t is not None and not t.done() for t in (self._task, self._spec))

    @property
    def committed_s(self) -> float:
        """Seconds of audio whose text is already committed."""
        return self._committed / SAMPLE_RATE

    def feed(self, frame: np.ndarray, speech: bool) -> None:
        """One captured frame (int16 or float, in capture order) and the VAD's verdict on it."""
        self._frames.append(frame)
        self._n += len(frame)
        if speech:
            if self._first_speech is None:
                self._first_speech = self._n - len(frame)
            self._silence_run = 0
            self._pause_used = False
            self._speech_since_cut += len(frame)
            self._last_speech_end = self._n
            self._drop_speculation()  # the speaker was not done after all
            return
        self._silence_run += len(frame)
        if self._closed or self._pause_used or self._silence_run < self._pause:
            return
        cut = self._n - self._silence_run // 2  # the middle of the pause: clear of both words
        if self._speech_since_cut < MIN_SPEECH_S * SAMPLE_RATE:
            return
        # The first piece counts from the first speech, not from a pre-roll the VAD did not
        # judge (a wake-word capture's phrase): a cut too early leaves a tail that
        # continues a prompt, decoded on the slower full window.
        since = (self._first_speech or 0) if self._cut == 0 else self._cut
        if cut - since < self._min_chunk:
            if (
                self._speculative
                and not self.busy
                and self._speech_since_cut >= SPECULATE_MIN_SPEECH_S * SAMPLE_RATE
            ):
                self._pause_used = True
                self._speculate(cut)
            return
        if self.busy:
            # Skip rather than queue: one decode at a time leaves CPU for the VAD and the
            # wake word, and the next pause (or the tail) takes this audio along.
            self.skipped += 1
            self._pause_used = True
            return
        self._pause_used = True
        self._start_partial(cut)

    def _start_partial(self, cut: int) -> None:
        piece = np.concatenate(self._frames)[self._cut : cut]
        start = self._cut
        self._cut = cut
        self._speech_since_cut = 0
        prompt = join_texts(self._texts)
        log.debug("partial decode of %.2f-%.2f s", start / SAMPLE_RATE, cut / SAMPLE_RATE)
        decode = self._first if start == 0 else self._decode
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._partial(decode, piece, prompt, cut), name="stt-partial")

    def _speculate(self, cut: int) -> None:
        """Decode everything not yet committed, up to ``cut``, without committing it."""
        piece = np.concatenate(self._frames)[self._cut : cut]
        self._spec_cut = cut
        self.speculations += 1
        log.debug("speculative decode of %.2f-%.2f s", self._cut / SAMPLE_RATE, cut / SAMPLE_RATE)
        decode = self._first if self._cut == 0 else self._decode
        running = decode(as_float32(piece), join_texts(self._texts))
        self._spec = asyncio.get_running_loop().create_task(running, name="stt-speculative")

    def _drop_speculation(self) -> None:
        if self._spec is not None:
            self._spec.cancel()  # the worker thread finishes its piece; the text is dropped
            self._spec = None

    def words(self) -> tuple[str | None, bool]:
        """The transcript up to the current pause, if a decode started at it (speculative,
        or a cut) has finished and no speech came since; and whether one is still running."""
        if self.cancelled or self._silence_run == 0:
            return None, False
        spec = self._spec
        if spec is not None:
            if not spec.done():
                return None, True
            if spec.cancelled() or spec.exception():
                return None, False
            return join_texts([*self._texts, spec.result()]), False
        if self._cut > self._last_speech_end:  # this pause was cut, and is being committed
            if self._task is not None and not self._task.done():
                return None, True
            if self._committed == self._cut and not self._failed:
                return join_texts(self._texts), False
        return None, False

    def speculation(self) -> str | None:
        """With ``speculative``, the transcript up to the current pause once it is decoded
        and no speech came since (the pipeline may start answering it); None otherwise."""
        return self.words()[0] if self._speculative else None

    async def _partial(self, decode: Decode, piece: np.ndarray, prompt: str, cut: int) -> None:
        try:
            text = await decode(as_float32(piece), prompt)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the final decode falls back to one pass
            log.warning("partial speech decode failed, decoding the whole utterance at the end: %s", exc)
            self._failed = True
            self._closed = True
            return
        if not self.cancelled:
            self._texts.append(text)
            self._committed = cut
            self.partials += 1

    async def finish(self, audio: np.ndarray | None = None) -> str:
        """The transcript: wait for a running piece, decode the tail, join.

        ``audio`` is the whole utterance as captured (the frames fed, concatenated); by
        default the session's own copy.
        """
        self._closed = True
        if self._task is not None:
            await self._task  # it holds the model lock anyway; its text is the prefix we need
        samples = np.concatenate(self._frames) if audio is None else np.asarray(audio)
        start = time.perf_counter()
        if self._spec is not None and self._last_speech_end <= self._spec_cut and not self._failed:
            try:  # the speaker was done at the pause: that decode is the tail
                text = await self._spec
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("speculative speech decode failed, decoding the tail instead: %s", exc)
            else:
                self._texts.append(text)
                self._committed = self._spec_cut
                self.speculated = True
                self.tail_ms = round((time.perf_counter() - start) * 1000, 1)
                return join_texts(self._texts)
        self._drop_speculation()
        if self._failed or len(samples) < self._committed or not self._texts:
            # nothing committed (a short question, or speech without pauses): one pass
            self._texts = [await self._first(as_float32(samples), "")] if samples.size else []
        elif self._last_speech_end > self._committed:
            tail = samples[self._committed :]
            self._texts.append(await self._decode(as_float32(tail), join_texts(self._texts)))
        else:
            # Only silence after the last cut: a decode of it would at best be empty and at
            # worst a hallucination ("you").
            return join_texts(self._texts)
        self.tail_ms = round((time.perf_counter() - start) * 1000, 1)
        return join_texts(self._texts)

    def cancel(self) -> None:
        """Discard the session: drop a running decode's result and start no new one."""
        if self.cancelled:
            return
        self.cancelled = True
        self._closed = True
        if self._task is not None and not self._task.done():
            self._task.cancel()  # the worker thread finishes its piece; the text is dropped
        self._drop_speculation()

    def timings(self) -> dict[str, Any]:
        """Figures for the turn's trace: partial decodes and the tail's decode time."""
        return {
            "stt_partials": self.partials,
            "stt_tail": self.tail_ms,
            "stt_speculations": self.speculations,
            "stt_speculated": self.speculated,
        }


class StreamingTranscriber:
    """A ``Transcriber`` that can also open a ``DecodeSession`` per utterance.

    The pipeline hands ``open_session`` to the listener, which feeds each capture into
    a fresh session; ``transcribe`` is still there for a whole utterance in one pass.
    """

    supports_streaming = True
    """``open_session`` decodes while the user speaks."""

    def __init__(
        self,
        inner: PromptedTranscriber,
        min_chunk_s: float = 2.0,
        pause_s: float = 0.15,
        speculative: bool = False,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.min_chunk_s = min_chunk_s
        self.pause_s = pause_s
        self.speculative = speculative
        """Decode at every pause as if it ended the utterance (``stt.speculative``)."""

    async def transcribe(self, audio: np.ndarray, lead: str = "") -> str:
        """The whole utterance in one pass."""
        return await self.inner.transcribe(audio, lead=lead)

    async def warmup(self) -> None:
        """Load the model."""
        await self.inner.warmup()

    def open_session(self, lead: str = "") -> IncrementalSession:
        """A session for the utterance now being captured (``lead``: the words it starts with)."""
        first = functools.partial(self._decode, lead=lead) if lead else None
        return IncrementalSession(self._decode, self.min_chunk_s, self.pause_s, self.speculative, first)

    async def _decode(self, audio: np.ndarray, prompt: str, lead: str = "") -> str:
        return await self.inner.transcribe(audio, prompt=prompt, lead=lead)
