"""The hub with its real speech models: a Wyoming client from the ``wyoming`` package sends a
spoken fixture as a satellite would, and gets Whisper's transcript and Piper's spoken
answer back (the fast path answers the time, so no language model is needed)."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.pipeline import PipelineStage, RunPipeline

from iris_voice.config import Config
from iris_voice.events import EventBus
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.tts import PiperSynthesizer
from iris_voice.timers.service import TimerService
from iris_voice.timers.store import TimerStore
from iris_voice.tools.builtin import build_registry
from iris_voice.wyoming.hub import SatellitePart
from tests.support.hub_helpers import EchoBackend
from tools.testbed.fixtures import read_wav
from tools.testbed.hubs import start_hub

pytestmark = pytest.mark.speech


@pytest.fixture(scope="module")
def engines(speech_manifest):
    cfg = Config()
    return FasterWhisperTranscriber(cfg.stt), PiperSynthesizer(cfg.tts)


async def ask(port: int, name: str, audio: np.ndarray) -> tuple[str, str, np.ndarray, int]:
    """One satellite turn: (transcript, handled text, reply samples, reply rate)."""
    client = AsyncTcpClient("127.0.0.1", port)
    await client.connect()
    try:
        await client.write_event(Event("run-satellite", {"name": name}))
        assert (await client.read_event()).type == "satellite-connected"
        run = RunPipeline(
            start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS, wake_word_name="hey_jarvis"
        )
        await client.write_event(run.event())
        fmt = {"rate": 16000, "width": 2, "channels": 1}
        await client.write_event(AudioStart(**fmt).event())
        pcm = audio.astype(np.int16)
        for i in range(0, len(pcm), 1024):
            await client.write_event(AudioChunk(audio=pcm[i : i + 1024].tobytes(), **fmt).event())
        await client.write_event(AudioStop().event())
        transcript, chunks, rate = "", [], 0
        while True:
            event = await asyncio.wait_for(client.read_event(), 60)
            assert event is not None
            if event.type == "transcript":
                transcript = event.data["text"]
            elif event.type == "audio-chunk":
                chunk = AudioChunk.from_event(event)
                chunks.append(np.frombuffer(chunk.audio, np.int16))
                rate = chunk.rate
            elif event.type in ("handled", "not-handled", "error"):
                assert event.type == "handled", event
                return transcript, event.data["text"], np.concatenate(chunks), rate
    finally:
        await client.disconnect()


async def test_a_spoken_question_comes_back_as_transcript_and_spoken_answer(engines, tmp_path: Path) -> None:
    stt, tts = engines
    cfg = Config.model_validate({"tools": {"timezone": "Asia/Tokyo"}})
    bus = EventBus()
    timers = TimerService(TimerStore(tmp_path / "t.db"), bus.publish, tz_name="Asia/Tokyo")
    backend = EchoBackend()
    part = SatellitePart(cfg, build_registry(cfg, timers), stt, tts, backend=backend, publish=bus.publish)
    server, port = await start_hub([part])
    try:
        transcript, text, reply, rate = await ask(port, "kitchen", read_wav("jarvis_time_tokyo"))
    finally:
        await part.aclose()
        await server.stop()
        timers.store.close()
    assert "tokyo" in transcript.lower() and "jarvis" not in transcript.lower()
    assert backend.requests == []  # the fast path answered
    hour = datetime.now(ZoneInfo("Asia/Tokyo")).hour % 12 or 12
    assert re.search(rf"\b({hour}|{hour % 12 + 1}|{(hour - 2) % 12 + 1})\b", text), text
    assert rate == tts.sample_rate and len(reply) > rate  # over a second of speech
    said = await stt.transcribe(_to_16k(reply, rate))
    # The audio says the answer, not just noise. Piper draws its durations with noise, and
    # Whisper has written its "Tokyo" as "tokivo": the place is checked loosely.
    assert re.search(r"\btok", said.lower()), said


def _to_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    import soxr

    return soxr.resample(samples.astype(np.float32) / 32768.0, rate, 16000).astype(np.float32)
