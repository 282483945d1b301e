"""Short words count: a real one-word "stop" (0.7 s, tests/fixtures/human) is heard and
transcribed "stop" by the real Silero VAD, endpointer and Whisper, in file mode and by the
daemon's listener after the wake word; a click, a burst of noise or a cough-like burst is
never a turn."""

from __future__ import annotations

import asyncio
import re
import wave
from pathlib import Path

import numpy as np
import pytest

from iris_voice.audio import SAMPLE_RATE
from iris_voice.audio.files import WavSource
from iris_voice.config import Config, LlmConfig, ToolsConfig
from iris_voice.voice.heard import Heard, UtteranceReady
from tests.support.audiosignals import silence, write_wav

pytestmark = [pytest.mark.speech, pytest.mark.timeout(300)]

STOP = Path(__file__).resolve().parents[1] / "fixtures" / "human" / "mycroft_stop.wav"
RNG = np.random.default_rng(14)


def read(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == SAMPLE_RATE and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).copy()


def padded(x: np.ndarray, before: float = 1.0, after: float = 1.0) -> np.ndarray:
    return np.concatenate([silence(before, SAMPLE_RATE), x, silence(after, SAMPLE_RATE)])


def click() -> np.ndarray:
    """5 ms of a full-scale 1 kHz square wave (what ``sox synth 0.005 square`` makes)."""
    t = np.arange(int(0.005 * SAMPLE_RATE)) / SAMPLE_RATE
    return (np.sign(np.sin(2 * np.pi * 1000 * t)) * 29000).astype(np.int16)


def noise_burst(seconds: float = 0.1) -> np.ndarray:
    """White noise at half scale."""
    return (RNG.uniform(-0.5, 0.5, int(seconds * SAMPLE_RATE)) * 32767).astype(np.int16)


def cough() -> np.ndarray:
    """A cough-like burst: 250 ms of low-passed noise, a sharp attack and a fast decay."""
    n = int(0.25 * SAMPLE_RATE)
    raw = RNG.normal(0, 1, n)
    low = np.convolve(raw, np.ones(8) / 8, mode="same")  # most energy below ~1 kHz
    env = np.minimum(1.0, np.arange(n) / (0.01 * SAMPLE_RATE)) * np.exp(-np.arange(n) / (0.07 * SAMPLE_RATE))
    x = low * env
    return (x / np.abs(x).max() * 0.9 * 32767).astype(np.int16)


def words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def file_config(tmp_path: Path) -> Config:
    """Defaults, with a private timers file and no language model (none is needed)."""
    return Config(
        llm=LlmConfig(warmup=False, host="http://127.0.0.1:9"),
        tools=ToolsConfig(timers_db=str(tmp_path / "t.db")),
    )


async def test_a_real_stop_is_a_turn_in_file_mode_and_noises_are_not(speech_manifest, tmp_path):
    from iris_voice.app.filemode import FileTurns

    stop = read(STOP)
    cases = {
        "stop as recorded": stop,
        "stop with silence around it": padded(stop),
        "stop 20 dB quieter": padded((stop * 0.1).astype(np.int16)),
    }
    noises = {"click": click(), "noise burst 100 ms": noise_burst(), "cough-like burst": cough()}
    async with FileTurns(file_config(tmp_path)) as turns:
        for name, audio in {**cases, **{n: padded(x) for n, x in noises.items()}}.items():
            wav = write_wav(tmp_path / "in.wav", audio, SAMPLE_RATE)
            got = await turns.run(wav)
            if name in noises:
                assert got == [], f"{name} became a turn: {[t['transcript'] for t in got]}"
            else:
                assert [words(t["transcript"]) for t in got] == [["stop"]], (name, got)
                assert got[0]["command"] == "stop" and got[0]["reply"] == ""


async def test_a_real_stop_after_the_wake_word_is_heard_by_the_daemons_listener(speech_manifest, tmp_path):
    """The wake-word listener (Silero, openWakeWord, Smart Turn as configured) keeps the
    whole short word after "Hey Jarvis" (and the phrase itself, told to Whisper as the lead)."""
    from iris_voice.app.assembly import build_app, build_listener, warm_up
    from tools.testbed.fixtures import read_wav

    audio = np.concatenate(
        [read_wav("jarvis"), silence(0.3, SAMPLE_RATE), read(STOP), silence(2.0, SAMPLE_RATE)]
    )
    wav = write_wav(tmp_path / "in.wav", audio, SAMPLE_RATE)
    app = build_app(file_config(tmp_path), speech=True, wake=True)
    assert app.engines is not None and app.engines.wake is not None
    try:
        await warm_up(app.engines)
        listener = build_listener(app.cfg, app.engines, lambda _event: None)
        heard: asyncio.Queue[Heard] = asyncio.Queue(16)
        await listener.run(WavSource(wav, trailing_silence_s=2.0), heard)
        ready = [
            h for h in (heard.get_nowait() for _ in range(heard.qsize())) if isinstance(h, UtteranceReady)
        ]
        assert len(ready) == 1, ready
        utt = ready[0].utterance
        assert utt.trigger == "wake_word" and utt.lead == "Hey Jarvis,"
        text = await app.engines.stt.transcribe(utt.audio.astype(np.float32) / 32768.0, lead=utt.lead)
        assert words(text) == ["stop"], text
    finally:
        await app.close()
