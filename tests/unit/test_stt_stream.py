"""Incremental speech to text (``iris_voice.speech.stt_stream``) with a fake decoder.

Each fed frame carries its own index as its sample value, so the fake decoder can
say which frames a piece covered ("3-70"; a cut may split a frame: "0-77 77-120"), and
with the count of samples decoded the tests check that the pieces tile the utterance:
in order, no sample decoded twice, none left out.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import AudioConfig, LlmConfig
from iris_voice.events import EventBus, SpeechEnded, Transcript
from iris_voice.speech.stt_stream import IncrementalSession, StreamingTranscriber, join_texts
from iris_voice.tools.registry import ToolRegistry
from iris_voice.voice.listener import Listener
from iris_voice.voice.pipeline import VoicePipeline
from iris_voice.voice.speaker import ReplySpeaker
from tests.support.fakes import ScriptedBackend, chat_assistant
from tests.support.fakes_audio import (
    SILENCE,
    SPEECH,
    WAKE,
    FakeSink,
    FakeTts,
    FakeVad,
    FakeWake,
    ScriptSource,
    frames,
)

FRAME_S = FRAME_SAMPLES / SAMPLE_RATE


class FakeDecoder:
    """Decodes a piece into "first-last" frame indices; can hold decodes until released."""

    def __init__(self, hold: bool = False, fail_first: bool = False) -> None:
        self.calls: list[tuple[str, str]] = []  # (text, prompt)
        self.samples = 0  # decoded, in all
        self.in_flight = 0
        self.max_in_flight = 0
        self.release = asyncio.Event()
        if not hold:
            self.release.set()
        self.fail_first = fail_first

    async def __call__(self, audio: np.ndarray, prompt: str) -> str:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self.release.wait()
            await asyncio.sleep(0.001)
            index = np.rint(audio * 32768).astype(int)
            text = f"{index[0]}-{index[-1]}"
            self.calls.append((text, prompt))
            self.samples += audio.size
            if self.fail_first and len(self.calls) == 1:
                raise RuntimeError("engine broke")
            return text
        finally:
            self.in_flight -= 1


class Feeder:
    """Feeds a session numbered frames: ``speech(s)`` / ``silence(s)``."""

    def __init__(self, session: IncrementalSession) -> None:
        self.session = session
        self.n = 0

    def _feed(self, seconds: float, speech: bool) -> None:
        for _ in range(round(seconds / FRAME_S)):
            self.session.feed(np.full(FRAME_SAMPLES, self.n, np.int16), speech)
            self.n += 1

    def speech(self, seconds: float) -> None:
        self._feed(seconds, True)

    def silence(self, seconds: float) -> None:
        self._feed(seconds, False)


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0.005)


def tiles(text: str, dec: FakeDecoder, frames_fed: int) -> bool:
    """The pieces "a-b c-d …" follow each other and cover all ``frames_fed`` frames once."""
    expected = 0
    for piece in text.split():
        a, b = (int(x) for x in piece.split("-"))
        if a not in (expected, expected - 1):  # expected - 1: the cut split that frame
            return False
        expected = b + 1
    return expected == frames_fed and dec.samples == frames_fed * FRAME_SAMPLES


async def test_a_short_utterance_is_decoded_once_after_it_ends():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15)
    f = Feeder(s)
    f.speech(0.6), f.silence(0.2), f.speech(0.8)  # a pause, but before 2 s of audio
    await settle()
    assert dec.calls == [] and s.partials == 0
    text = await s.finish()
    assert dec.calls == [(f"0-{f.n - 1}", "")]  # the whole utterance, one pass, no prompt
    assert text == f"0-{f.n - 1}" and s.timings()["stt_partials"] == 0


async def test_only_decodes_from_the_start_are_told_the_words_it_opens_with():
    """A wake-word capture keeps the wake phrase: the first piece (and a speculative decode
    from the start) is decoded with it as the lead; the tail continues the committed text."""
    leads: list[tuple[str, str]] = []
    dec = FakeDecoder()

    async def first(audio: np.ndarray, prompt: str) -> str:
        text = await dec(audio, prompt)
        leads.append((text, "Hey Jarvis,"))
        return text

    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15, speculative=True, first=first)
    f = Feeder(s)
    f.speech(2.4), f.silence(0.2)  # a cut at this pause: the first piece
    await settle()
    f.speech(0.8)
    text = await s.finish()
    first_piece, tail = text.split()
    assert leads == [(first_piece, "Hey Jarvis,")]  # the tail was decoded without the lead
    assert [c[0] for c in dec.calls] == [first_piece, tail] and tiles(text, dec, f.n)


async def test_a_pre_roll_before_the_speech_does_not_count_toward_the_first_piece():
    """A wake-word capture opens with a second of unjudged pre-roll: the first cut still
    waits for ``min_chunk_s`` after speech began (an early cut leaves a prompted tail)."""
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15)
    f = Feeder(s)
    f.silence(1.2), f.speech(1.2), f.silence(0.2)  # 2.6 s of audio, 1.2 s since speech began
    await settle()
    assert dec.calls == [] and s.partials == 0
    f.speech(1.0), f.silence(0.2)  # now 2.4 s since speech began
    await settle()
    assert s.partials == 1


async def test_a_pause_after_enough_audio_commits_a_prefix_and_only_the_tail_is_left():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15)
    f = Feeder(s)
    f.speech(2.4)
    f.silence(0.1)  # shorter than a pause: no cut
    await settle()
    assert dec.calls == []
    f.silence(0.1)  # now 0.2 s: a pause
    await settle()
    assert len(dec.calls) == 1 and s.partials == 1
    first = dec.calls[0][0]
    pause_start = round(2.4 / FRAME_S)
    cut_frame = int(first.split("-")[1])
    assert pause_start <= cut_frame < pause_start + round(0.2 / FRAME_S)  # cut inside the pause
    f.speech(1.0), f.silence(0.3)
    text = await s.finish()
    assert len(dec.calls) == 2
    assert dec.calls[1][1] == first  # the tail continues the committed text
    assert tiles(text, dec, f.n), text
    assert s.tail_ms is not None


async def test_at_most_one_decode_is_in_flight_and_busy_pauses_are_skipped():
    dec = FakeDecoder(hold=True)
    s = IncrementalSession(dec, min_chunk_s=1.0, pause_s=0.15)
    f = Feeder(s)
    for _ in range(4):  # four pauses, each after more than 1 s of speech
        f.speech(1.2), f.silence(0.2)
        await settle()
    assert dec.max_in_flight == 1 and s.busy and s.skipped == 3
    dec.release.set()
    f.speech(0.5), f.silence(0.3)
    text = await s.finish()
    assert dec.max_in_flight == 1
    assert s.partials == 1 and len(dec.calls) == 2  # the held piece, then one tail for the rest
    assert tiles(text, dec, f.n), text


async def test_cancel_drops_the_running_decode_and_starts_no_other():
    dec = FakeDecoder(hold=True)
    s = IncrementalSession(dec, min_chunk_s=1.0, pause_s=0.15)
    f = Feeder(s)
    f.speech(1.2), f.silence(0.2)
    await settle()
    assert s.busy
    s.cancel()
    await settle()
    assert not s.busy and s.cancelled
    dec.release.set()
    f.speech(1.2), f.silence(0.2)
    await settle()
    assert dec.calls == [] and s.partials == 0 and s.committed_s == 0


async def test_the_last_pause_starts_the_decode_before_the_end_and_the_silent_tail_is_skipped():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15)
    f = Feeder(s)
    f.speech(2.5), f.silence(0.32)  # the hangover: the pause at 0.15 s already started a decode
    text = await s.finish()
    assert len(dec.calls) == 1 and s.tail_ms is None  # no second decode of silence
    assert text == dec.calls[0][0]
    assert int(text.split("-")[1]) >= round(2.5 / FRAME_S)  # all of the speech is in it


async def test_a_failed_partial_decode_falls_back_to_one_pass():
    dec = FakeDecoder(fail_first=True)
    s = IncrementalSession(dec, min_chunk_s=1.0, pause_s=0.15)
    f = Feeder(s)
    f.speech(1.2), f.silence(0.2), f.speech(1.2), f.silence(0.2)
    await settle()
    text = await s.finish()
    assert len(dec.calls) == 2  # the failed piece, then the whole utterance; no more partials
    assert text == f"0-{f.n - 1}" and dec.calls[-1][1] == ""


async def test_a_piece_needs_speech_in_it():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=1.0, pause_s=0.15)
    f = Feeder(s)
    f.silence(1.5), f.speech(0.1), f.silence(0.3)  # pre-roll silence and a click
    await settle()
    assert dec.calls == []


def test_join_texts_drops_empty_pieces_and_extra_spaces():
    assert join_texts(["Hey Jarvis. ", "", "  What time  is it?"]) == "Hey Jarvis. What time is it?"
    assert join_texts([]) == ""


# --- in the pipeline -------------------------------------------------------------------


class FakePromptedStt:
    """A prompted transcriber over ``FakeDecoder`` (what ``FasterWhisperTranscriber`` offers)."""

    name = "fake-prompted"

    def __init__(self) -> None:
        self.decoder = FakeDecoder()

    async def transcribe(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> str:
        return await self.decoder(audio, prompt)

    async def warmup(self) -> None:
        """Nothing to load."""


def pipeline(stt: StreamingTranscriber, **audio) -> tuple[VoicePipeline, list]:
    cfg = AudioConfig(**{"vad_hangover_ms": 300, "no_speech_timeout_s": 1.0, **audio})
    bus = EventBus()
    events: list = []
    bus.subscribe(events.append)
    listener = Listener(cfg, FakeVad(), FakeWake(), bus.publish)
    chat = chat_assistant(ScriptedBackend("Sure."), ToolRegistry(), LlmConfig(), publish=bus.publish)
    return VoicePipeline(listener, stt, chat, ReplySpeaker(FakeTts(), FakeSink()), bus), events


async def test_the_pipeline_decodes_a_long_question_while_it_is_spoken():
    inner = FakePromptedStt()
    p, events = pipeline(StreamingTranscriber(inner, min_chunk_s=1.0, pause_s=0.15))
    script = frames(WAKE, 0.2) + frames(SPEECH, 1.5) + frames(SILENCE, 0.2) + frames(SPEECH, 1.0)
    await asyncio.wait_for(p.run(ScriptSource(script)), 20)
    (transcript,) = [e for e in events if isinstance(e, Transcript)]
    assert len(transcript.text.split()) >= 2  # a committed piece and the tail, joined
    t = p.turns[-1]["timings_ms"]
    assert t["stt_partials"] >= 1 and "stt" in t


async def test_an_abandoned_capture_cancels_its_session():
    opened: list[IncrementalSession] = []
    inner = FakePromptedStt()
    stt = StreamingTranscriber(inner, min_chunk_s=1.0, pause_s=0.15)
    original = stt.open_session

    def spy(lead: str = "") -> IncrementalSession:
        opened.append(original(lead))
        return opened[-1]

    stt.open_session = spy  # type: ignore[method-assign]
    p, events = pipeline(stt)
    await asyncio.wait_for(p.run(ScriptSource(frames(WAKE, 0.2) + frames(SILENCE, 1.5))), 20)
    assert any(isinstance(e, SpeechEnded) and e.timed_out for e in events)
    assert len(opened) == 1 and opened[0].cancelled
    assert inner.decoder.calls == []


@pytest.mark.parametrize("incremental", [False, True])
def test_the_engines_wrap_whisper_only_when_incremental(incremental):
    from iris_voice.app.assembly import build_engines
    from iris_voice.config import Config, SttConfig

    cfg = Config(stt=SttConfig(incremental=incremental, incremental_min_s=3.0, incremental_pause_ms=120))
    stt = build_engines(cfg, wake=False).stt
    assert isinstance(stt, StreamingTranscriber) is incremental
    if incremental:
        session = stt.open_session()
        assert session._min_chunk == 3 * SAMPLE_RATE and session._pause == round(0.12 * SAMPLE_RATE)
