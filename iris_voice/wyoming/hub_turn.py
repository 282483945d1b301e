"""One satellite's turn on the hub: its utterance in, ``transcript`` and the spoken reply out.

The satellite already decided where the question ends (its own VAD), so the hub only
transcribes, answers in that satellite's conversation and streams the reply back,
sentence by sentence as Piper makes it: the satellite hears the first sentence while the
model is still writing the next. The language model is shared by every satellite and runs
one request at a time (``llm.serial.SerialBackend``); the fast path, speech-to-text and synthesis do
not wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event
from wyoming.handle import Handled, NotHandled

from iris_voice.conversation.responder import Responder
from iris_voice.errors import LlmError
from iris_voice.speech.stt import Transcriber
from iris_voice.speech.tts import Synthesizer
from iris_voice.timers.origin import ORIGIN
from iris_voice.voice.latecue import GRACE_S, LateCue
from iris_voice.voice.phrases import is_stop_command, strip_wake_phrase
from iris_voice.voice.servergone import UNREACHABLE

log = logging.getLogger(__name__)

CHUNK_SAMPLES = 2048
"""Samples per ``audio-chunk`` the hub sends (~93 ms at Piper's 22050 Hz)."""
Write = Callable[[Event], Awaitable[None]]
T = TypeVar("T")


@dataclass
class TurnResult:
    """What one satellite turn did (the hub's log and the tests read it)."""

    text: str = ""
    """The transcript, wake phrase removed."""
    sentences: list[str] = field(default_factory=list)
    """The reply's sentences as they were sent."""
    error: str = ""
    """Why nothing was answered (empty transcript, a stop command) or what failed."""


async def _send_audio(write: Write, samples: np.ndarray, rate: int, started: list[bool]) -> None:
    """Send int16 ``samples`` as chunks, opening the stream with ``audio-start`` once."""
    if not started[0]:
        await write(AudioStart(rate=rate, width=2, channels=1).event())
        started[0] = True
    pcm = samples.astype(np.int16)
    for i in range(0, len(pcm), CHUNK_SAMPLES):
        await write(
            AudioChunk(rate=rate, width=2, channels=1, audio=pcm[i : i + CHUNK_SAMPLES].tobytes()).event()
        )


async def gated(gate: asyncio.Semaphore | None, job: Awaitable[T]) -> T:
    """``job`` once ``gate`` lets one more speech job run (None: at once)."""
    if gate is None:
        return await job
    async with gate:
        return await job


async def speak_to(
    write: Write,
    tts: Synthesizer,
    sentences: AsyncIterator[str],
    sent: list[str],
    lead: tuple[np.ndarray, int] | None = None,
    gate: asyncio.Semaphore | None = None,
) -> None:
    """Synthesize each sentence as it comes and stream it as one ``audio-start`` …
    ``audio-stop`` (``lead``, e.g. a chime, first); ``sent`` collects the sentences sent.
    Each synthesis step waits for ``gate`` (see ``SatellitePart.speech_jobs``)."""
    started = [False]
    rate = tts.sample_rate
    try:
        if lead is not None:
            await _send_audio(write, lead[0], lead[1], started)
        async for sentence in sentences:
            chunks = tts.stream(sentence)
            while (chunk := await gated(gate, anext(chunks, None))) is not None:
                await _send_audio(write, chunk, rate, started)
            sent.append(sentence)
    finally:
        if started[0]:
            with contextlib.suppress(ConnectionError):  # the satellite went away mid-reply
                await write(AudioStop().event())


async def _read_ahead(
    source: AsyncIterator[str], queue: asyncio.Queue[str | None], first: asyncio.Event
) -> None:
    """Move the responder's sentences into ``queue`` so the model writes on while the
    previous sentence is synthesized; None marks the end. ``first`` is set at the first
    sentence (or the end)."""
    try:
        async for sentence in source:
            await queue.put(sentence)
            first.set()
    finally:
        first.set()
        await queue.put(None)


async def _late_lead(
    cue: LateCue | None, tts: Synthesizer, first: asyncio.Event, deadline: float
) -> tuple[np.ndarray, int] | None:
    """The cue's audio when no sentence is ready by ``deadline`` (the loop's clock), else None."""
    if cue is None:
        return None
    try:
        await asyncio.wait_for(first.wait(), max(GRACE_S, deadline - asyncio.get_running_loop().time()))
        return None
    except TimeoutError:
        log.info("reply late: the satellite hears %r first", cue.text)
        return await cue.prepare(tts), tts.sample_rate


async def _drain(queue: asyncio.Queue[str | None], reader: asyncio.Task[None]) -> AsyncIterator[str]:
    while (sentence := await queue.get()) is not None:
        yield sentence
    await reader  # re-raise the responder's error (LlmError) here, in the turn


async def run_turn(
    origin: str,
    audio: np.ndarray,
    *,
    stt: Transcriber,
    tts: Synthesizer,
    responder: Responder,
    write: Write,
    wake_name: str,
    speaking: asyncio.Lock,
    gate: asyncio.Semaphore | None = None,
    words_only: bool = False,
    gone: Callable[[], bool] = lambda: False,
    cue: LateCue | None = None,
) -> TurnResult:
    """Answer one utterance (int16 mono at 16 kHz) from satellite ``origin``.

    Sends ``transcript``, then the reply as one audio stream, then ``handled`` (the reply's
    text) — or ``not-handled`` when there was nothing to answer. ``speaking`` keeps a timer
    announcement from cutting into the reply's audio on the same connection; ``gate``
    bounds the speech jobs running at once across satellites. With ``words_only`` the
    turn ends at the transcript (the satellite acts on the words itself). A satellite that
    has ``gone`` by the time its decode may start is not decoded for (``ConnectionError``).
    With ``cue``, a reply not begun ``cue.after_s`` after the audio came opens with the cue.
    """
    from wyoming.asr import Transcript

    async def transcribe() -> str:
        if gone():  # it left while the decode waited its turn: the CPU goes to those still here
            raise ConnectionError("the satellite left before its question was transcribed")
        return await stt.transcribe(audio.astype(np.float32) / 32768.0)

    result = TurnResult()
    deadline = asyncio.get_running_loop().time() + (cue.after_s if cue is not None else 0.0)
    text = await gated(gate, transcribe())
    result.text = text = strip_wake_phrase(wake_name, text)
    await write(Transcript(text=text).event())
    log.info("%s heard: %r", origin, text)
    if words_only:
        return result
    if not re.search(r"\w", text) or is_stop_command(text):
        result.error = "stop" if re.search(r"\w", text) else "nothing was said"
        await write(NotHandled(text=result.error).event())
        return result
    token = ORIGIN.set(origin)  # a timer this turn sets rings on this satellite
    queue: asyncio.Queue[str | None] = asyncio.Queue(64)
    before = responder.conversation.version
    first = asyncio.Event()
    reader = asyncio.create_task(
        _read_ahead(responder.sentences(text), queue, first), name=f"answer-{origin}"
    )
    ORIGIN.reset(token)  # the task copied the context; this coroutine's own stays as it was
    try:
        lead = await _late_lead(cue, tts, first, deadline)
        async with speaking:
            try:
                await speak_to(write, tts, _drain(queue, reader), result.sentences, lead=lead, gate=gate)
            except LlmError as exc:
                log.warning("%s: language model failed: %s [%s]", origin, exc.message, exc.code)
                result.error = exc.code
                await speak_to(write, tts, one_sentence(UNREACHABLE), result.sentences, gate=gate)
            await write(Handled(text=" ".join(result.sentences)).event())
    except BaseException:
        await _stop(reader)
        if responder.conversation.version != before:  # keep only what the satellite got
            responder.conversation.amend_last(" ".join(result.sentences))
        raise
    await _stop(reader)
    return result


async def _stop(reader: asyncio.Task[None]) -> None:
    if not reader.done():
        reader.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await reader


async def one_sentence(text: str) -> AsyncIterator[str]:
    """``text`` as a stream of one sentence (an announcement, an apology)."""
    yield text
