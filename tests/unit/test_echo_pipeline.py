"""The echo guard in the voice pipeline: IRIS does not answer or interrupt itself."""

from __future__ import annotations

import asyncio

import pytest

from iris_voice.events import PlaybackStarted, PlaybackStopped
from iris_voice.voice.echoguard import TAIL_S, EchoGuard
from tests.support.fakes import ScriptedBackend
from tests.support.fakes_audio import SPEECH, WAKE, FakeStt, ScriptSource, frames
from tests.unit.test_pipeline import QUESTION, Harness

REPLY = "The largest planet in our solar system is Jupiter."


def guarded(h: Harness, method: str) -> EchoGuard:
    guard = EchoGuard("hey_jarvis")
    guard.use(method, "test")
    h.listener.guard = guard
    h.pipeline.speaker.on_sentence = guard.saying
    return guard


def after_the_reply(h: Harness, source: ScriptSource, delay_s: float, script) -> None:
    """Play ``script`` into the microphone ``delay_s`` (wall clock) after the first reply ends."""

    def on_event(event):
        if isinstance(event, PlaybackStopped) and len(h.pipeline.turns) == 1:
            asyncio.get_running_loop().call_later(delay_s, source.inject, script)

    h.bus.subscribe(on_event)


@pytest.mark.parametrize("method, turns", [("guard", 1), ("off", 2)])
async def test_the_reply_tail_opens_no_follow_up(method, turns):
    h = Harness(
        ScriptedBackend(REPLY, "Again?"), FakeStt("what is the largest planet", "jupiter"), follow_up_s=5.0
    )
    guarded(h, method)
    source = ScriptSource(QUESTION, tail_s=5.0)
    after_the_reply(h, source, 0.0, frames(SPEECH, 0.5))  # the room's echo of "…Jupiter."
    await h.run(source)
    assert len(h.pipeline.turns) == turns


@pytest.mark.parametrize("method, turns", [("guard", 1), ("off", 2)])
async def test_a_transcript_of_its_own_words_is_not_a_question(method, turns):
    h = Harness(
        ScriptedBackend(REPLY, "Again?"),
        FakeStt("what is the largest planet", "in our solar system is jupiter"),
        follow_up_s=5.0,
    )
    guard = guarded(h, method)
    source = ScriptSource(QUESTION, tail_s=6.0)
    after_the_reply(h, source, TAIL_S + 0.1, frames(SPEECH, 0.8))  # a louder echo, after the tail
    await h.run(source)
    assert len(h.pipeline.turns) == turns
    assert guard.dropped == (1 if method == "guard" else 0)


async def test_a_real_follow_up_is_still_answered_with_the_guard():
    h = Harness(
        ScriptedBackend(REPLY, "Saturn's is Titan."),
        FakeStt("first", "and the largest moon of saturn"),
        follow_up_s=5.0,
    )
    guarded(h, "guard")
    source = ScriptSource(QUESTION, tail_s=6.0)
    after_the_reply(h, source, TAIL_S + 0.1, frames(SPEECH, 0.8))
    await h.run(source)
    assert [t["trigger"] for t in h.pipeline.turns] == ["wake_word", "follow_up"]


@pytest.mark.parametrize("method, interrupted", [("guard", False), ("off", True), ("pipewire-webrtc", False)])
async def test_saying_the_wake_phrase_does_not_interrupt_itself(method, interrupted):
    story = " ".join(f"Sentence {i}: you can always say hey Jarvis to wake me." for i in range(1, 9))
    h = Harness(ScriptedBackend(story, "Yes?"), FakeStt("how do I wake you", "yes"))
    h.tts.seconds = 2.0
    guarded(h, method)
    source = ScriptSource(QUESTION, tail_s=4.0)

    def on_event(event):
        if isinstance(event, PlaybackStarted) and len(h.pipeline.turns) == 0:
            # the room brings "hey Jarvis" from the speaker back into the microphone
            asyncio.get_running_loop().call_later(0.25, source.inject, frames(WAKE, 0.2))

    h.bus.subscribe(on_event)
    await h.run(source)
    assert h.pipeline.turns[0]["interrupted"] is interrupted
