"""A late reply is preceded by the late cue ("One moment."); a prompt one is not, and the
cue never enters the reply's sentences or the conversation's history."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from iris_voice.voice import speaker as speaker_module
from iris_voice.voice.latecue import LateCue
from iris_voice.voice.speaker import ReplySpeaker
from tests.support.fakes import ScriptedBackend
from tests.support.fakes_audio import SILENCE, FakeSink, FakeStt, FakeTts, ScriptSource, frames
from tests.unit.test_pipeline import QUESTION, Harness

pytestmark = pytest.mark.timeout(30)

CUE = "One moment."


def speaker_with_cue(after_s: float) -> tuple[ReplySpeaker, FakeTts, asyncio.Event]:
    """A speaker with a cue, and an event set when the cue goes to the synthesizer's sink."""
    said = asyncio.Event()
    tts = FakeTts(seconds_per_sentence=0.2)

    def on_sentence(text: str) -> None:
        if text == CUE:
            said.set()

    return ReplySpeaker(tts, FakeSink(), on_sentence=on_sentence, cue=LateCue(CUE, after_s)), tts, said


async def test_a_reply_not_begun_by_its_deadline_follows_the_cue():
    speaker, tts, said = speaker_with_cue(0.05)

    async def late() -> AsyncIterator[str]:
        await asyncio.wait_for(said.wait(), 10)  # the model writes only once the cue was said
        yield "Paris is the capital of France."

    reply = await speaker.speak(late(), cue_at=time.monotonic() + 0.05)
    assert tts.spoken == [CUE, "Paris is the capital of France."]
    assert reply.cue_at is not None and reply.first_audio_at is not None
    assert reply.cue_at <= reply.first_audio_at
    # what the user heard of the reply: the model's words, played whole; not the cue
    assert reply.sentences == reply.heard == ["Paris is the capital of France."]
    assert not reply.interrupted


async def test_a_prompt_reply_has_no_cue():
    speaker, tts, _ = speaker_with_cue(60)

    async def prompt() -> AsyncIterator[str]:
        yield "It is noon."

    reply = await speaker.speak(prompt(), cue_at=time.monotonic() + 60)
    assert tts.spoken == ["It is noon."] and reply.cue_at is None
    assert reply.heard == ["It is noon."]


async def test_a_reply_ready_as_the_transcript_comes_has_no_cue_though_the_deadline_passed(monkeypatch):
    # a grace of seconds, not 0.3: a busy machine must not make the reader's first step late
    monkeypatch.setattr(speaker_module, "GRACE_S", 10.0)
    speaker, tts, _ = speaker_with_cue(2.0)

    async def ready() -> AsyncIterator[str]:  # the fast path: the answer as soon as asked
        yield "It is noon."

    # the transcription alone took longer than the deadline: the answer is waited for a moment
    reply = await speaker.speak(ready(), cue_at=time.monotonic() - 1.0)
    assert tts.spoken == ["It is noon."] and reply.cue_at is None


async def test_no_deadline_no_cue_however_late():
    speaker, tts, _ = speaker_with_cue(0.01)

    async def late() -> AsyncIterator[str]:
        await asyncio.sleep(0.2)
        yield "Done."

    reply = await speaker.speak(late())  # an announcement, ``iris say``: never a cue
    assert tts.spoken == ["Done."] and reply.cue_at is None


async def test_the_cue_is_synthesized_once():
    cue, tts = LateCue(CUE, 1.0), FakeTts(seconds_per_sentence=0.2)
    first = await cue.prepare(tts)
    again = await cue.prepare(tts)
    assert tts.spoken == [CUE] and first is again and len(first) == int(0.2 * tts.sample_rate / 2) * 2


class GatedBackend(ScriptedBackend):
    """Answers only once ``gate`` is set (a model still reading on a busy machine)."""

    def __init__(self, *replies, gate: asyncio.Event) -> None:
        super().__init__(*replies)
        self.gate = gate

    async def stream(self, messages, tools, options=None, fmt=None):
        if (options or {}).get("num_predict") != 1:
            await asyncio.wait_for(self.gate.wait(), 10)
        async for chunk in super().stream(messages, tools, options, fmt):
            yield chunk


async def test_a_late_voice_turn_says_the_cue_and_keeps_it_out_of_the_history():
    gate = asyncio.Event()
    backend = GatedBackend("Octopuses have three hearts.", gate=gate)
    h = Harness(backend, FakeStt("Hey Jarvis, tell me a fact."))
    h.pipeline.speaker.cue = LateCue(CUE, 0.05)
    h.pipeline.speaker.on_sentence = lambda text: gate.set() if text == CUE else None
    await h.run(ScriptSource(frames(SILENCE, 1.0) + QUESTION + frames(SILENCE, 2.0)))
    assert h.tts.spoken == [CUE, "Octopuses have three hearts."]
    turn = h.pipeline.turns[-1]
    assert turn["spoken"] == "Octopuses have three hearts."
    timings = turn["timings_ms"]
    assert timings["late_cue_ms"] >= timings["vad_hangover"]
    history = h.chat.conversation.messages()
    assert [m["content"] for m in history if m["role"] == "assistant"] == ["Octopuses have three hearts."]


async def test_a_prompt_voice_turn_has_no_cue():
    h = Harness(ScriptedBackend("It is noon."), FakeStt("Hey Jarvis, what time is it?"))
    h.pipeline.speaker.cue = LateCue(CUE, 20.0)
    await h.run(ScriptSource(frames(SILENCE, 1.0) + QUESTION + frames(SILENCE, 1.0)))
    assert h.tts.spoken == ["It is noon."]
    assert "late_cue_ms" not in h.pipeline.turns[-1]["timings_ms"]
