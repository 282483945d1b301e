"""Turns started at a pause (``stt.speculative``): adopted once when the question is
confirmed with the same words, and without a trace — nothing spoken, no timer set,
nothing remembered — when the speaker goes on."""

from __future__ import annotations

import asyncio

import numpy as np

from iris_voice.config import AudioConfig, LlmConfig
from iris_voice.events import EventBus, TurnDiscarded, TurnFinished
from iris_voice.speech.stt_stream import StreamingTranscriber
from iris_voice.voice.listener import Listener
from iris_voice.voice.pipeline import VoicePipeline
from iris_voice.voice.speaker import ReplySpeaker
from tests.support.fakes import ScriptedBackend, builtin_registry, chat_assistant
from tests.support.fakes_audio import SILENCE, SPEECH, FakeSink, FakeTts, FakeVad, ScriptSource, frames


class WordsByRuns:
    """A prompted transcriber that knows what was said by how many runs of speech the
    audio holds: run 1 is "Set a timer", runs 1-2 "Set a timer for eight minutes"."""

    name = "words-by-runs"
    WORDS = ["Set a timer", "for eight minutes."]

    def __init__(self) -> None:
        self.decodes: list[str] = []

    async def transcribe(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> str:
        speech = (np.rint(audio[::512] * 32768) == SPEECH).astype(int)
        runs = int(speech[0]) + int(np.sum(np.diff(speech) == 1)) if speech.size else 0
        skip = len(prompt.split()) and 1  # a piece after a committed prefix continues it
        text = " ".join(self.WORDS[skip : skip + runs])
        self.decodes.append(text)
        await asyncio.sleep(0.01)
        return text

    async def warmup(self) -> None:
        """Nothing to load."""


class Bed:
    """A pipeline with incremental, speculative STT and a chat loop that sets timers."""

    def __init__(self, *replies) -> None:
        self.cfg = AudioConfig(activation="always", vad_hangover_ms=450, end_of_turn="silence")
        self.bus = EventBus()
        self.events: list = []
        self.bus.subscribe(self.events.append)
        self.backend = ScriptedBackend(*replies)
        self.registry = builtin_registry()
        self.chat = chat_assistant(self.backend, self.registry, LlmConfig(warm_cache=False), self.bus.publish)
        self.stt = WordsByRuns()
        self.tts = FakeTts()
        listener = Listener(self.cfg, FakeVad(), None, self.bus.publish)
        stt = StreamingTranscriber(self.stt, min_chunk_s=2.0, pause_s=0.15, speculative=True)
        self.pipeline = VoicePipeline(listener, stt, self.chat, ReplySpeaker(self.tts, FakeSink()), self.bus)

    async def run(self, script) -> None:
        await asyncio.wait_for(self.pipeline.run(ScriptSource(script, speed=2.0, tail_s=2.0)), 30)

    async def timers(self) -> str:
        """What list_timers says now."""
        return (await self.registry.call("list_timers", {})).result


async def test_a_dropped_start_speaks_nothing_sets_no_timer_and_is_not_remembered():
    bed = Bed(
        [("set_timer", {"duration": "1 minute"})],  # what a start at the pause would do
        [("set_timer", {"duration": "8 minutes"})],  # the whole question
    )
    script = frames(SPEECH, 0.7) + frames(SILENCE, 0.35) + frames(SPEECH, 0.8)
    await bed.run(script)
    # the start at the pause asked the model with the first words only; it was dropped
    assert [r["messages"][-1]["content"] for r in bed.backend.requests] == [
        "Set a timer",
        "Set a timer for eight minutes.",
    ]
    assert [e.text for e in bed.events if isinstance(e, TurnDiscarded)] == ["Set a timer"]
    # one timer, the one asked for, set once; one turn spoken and remembered
    listing = await bed.timers()
    assert listing.startswith("You have 1 timer:") and "a timer for 8 minutes" in listing, listing
    assert len([e for e in bed.events if isinstance(e, TurnFinished)]) == 1
    assert len(bed.tts.spoken) == 1 and "timer" in bed.tts.spoken[0].lower()
    assert [m["content"] for m in bed.chat.conversation.messages() if m["role"] == "user"] == [
        "Set a timer for eight minutes."
    ]
    assert bed.pipeline.turns[-1]["transcript"] == "Set a timer for eight minutes."
    # the whole question was started at its own final pause, and adopted
    assert bed.pipeline.speculation == {"started": 2, "adopted": 1, "dropped": 1}


async def test_a_start_confirmed_with_the_same_words_is_adopted_once():
    bed = Bed([("set_timer", {"duration": "8 minutes"})])
    bed.stt.WORDS = ["Set a timer for eight minutes.", "never said"]
    script = frames(SPEECH, 1.2)  # one breath, then the silence that ends it
    await bed.run(script)
    assert len(bed.backend.requests) == 1  # the model was asked once, at the pause
    assert not [e for e in bed.events if isinstance(e, TurnDiscarded)]
    turn = bed.pipeline.turns[-1]
    assert turn["speculative"] is True and turn["timings_ms"]["speculative"] is True
    assert turn["timings_ms"]["stt_speculated"] is True  # nothing left to decode at the end
    assert len(bed.stt.decodes) == 1
    assert bed.pipeline.speculation == {"started": 1, "adopted": 1, "dropped": 0}
    listing = await bed.timers()
    assert listing.startswith("You have 1 timer:") and "a timer for 8 minutes" in listing, listing
    assert len(bed.tts.spoken) == 1


async def test_a_read_only_tool_may_run_early_but_a_timer_waits():
    """Inside a held turn the clock runs and its sentence is ready at once; set_timer
    waits for the confirmation; neither is remembered before it."""
    backend = ScriptedBackend(
        [("get_current_time", {"timezone": "Tokyo"})], [("set_timer", {"duration": "2 minutes"})]
    )
    registry = builtin_registry()
    assistant = chat_assistant(backend, registry, LlmConfig(warm_cache=False))
    got: list[str] = []

    async def consume(text: str, hold: asyncio.Event) -> None:
        async for s in assistant.sentences(text, hold=hold):
            got.append(s)

    clock_hold = asyncio.Event()
    clock = asyncio.create_task(consume("What time is it in Tokyo?", clock_hold))
    for _ in range(100):
        if got:
            break
        await asyncio.sleep(0.01)
    assert got and "Tokyo" in got[0]  # answered while held
    assert not clock.done() and assistant.conversation.turns == []  # not remembered yet
    clock_hold.set()
    await asyncio.wait_for(clock, 2)
    assert len(assistant.conversation.turns) == 1

    timer_hold = asyncio.Event()
    timer = asyncio.create_task(consume("Set a two minute timer.", timer_hold))
    await asyncio.sleep(0.2)
    assert not timer.done() and len(got) == 1  # waiting for confirmation before the timer
    assert "No timers" in (await registry.call("list_timers", {})).result
    timer_hold.set()
    await asyncio.wait_for(timer, 2)
    assert "2 minutes" in (await registry.call("list_timers", {})).result
    assert len(assistant.conversation.turns) == 2
