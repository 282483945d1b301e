"""Build the real engines from the configuration.

The only module that knows which adapter implements which stage; the pipeline and
the daemon see Protocols. Imports are local so ``iris ask`` and ``iris status`` never
pay for loading faster-whisper, Piper or onnxruntime.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from iris_voice.audio.protocols import SpeechDetector, WakeDetector
from iris_voice.config import Config
from iris_voice.events import Event
from iris_voice.stt import Transcriber
from iris_voice.tts import Synthesizer

log = logging.getLogger(__name__)


@dataclass
class Engines:
    """The model-backed stages of a voice pipeline."""

    stt: Transcriber
    tts: Synthesizer
    vad: SpeechDetector
    wake: WakeDetector | None


def needs_wake_word(cfg: Config) -> bool:
    """The wake-word model runs for wake-word activation or wake-word barge-in."""
    return cfg.audio.activation == "wake_word" or cfg.audio.barge_in == "wake_word"


def build_engines(cfg: Config, wake: bool | None = None) -> Engines:
    """Construct (not yet load) the STT, TTS, VAD and wake-word adapters."""
    from iris_voice.audio.vad import SileroDetector
    from iris_voice.stt import FasterWhisperTranscriber
    from iris_voice.tts import PiperSynthesizer

    detector = None
    if needs_wake_word(cfg) if wake is None else wake:
        from iris_voice.audio.wake import OpenWakeWordDetector

        detector = OpenWakeWordDetector(cfg.wake)
    stt: Transcriber = FasterWhisperTranscriber(cfg.stt)
    if cfg.stt.incremental:
        from iris_voice.stt_stream import StreamingTranscriber

        stt = StreamingTranscriber(stt, cfg.stt.incremental_min_s, cfg.stt.incremental_pause_ms / 1000)
    return Engines(stt, PiperSynthesizer(cfg.tts), SileroDetector(), detector)


async def warm_up(engines: Engines, publish: Callable[[Event], None] | None = None) -> dict[str, float]:
    """Load and exercise every model side by side; milliseconds each took."""
    took: dict[str, float] = {}

    async def timed(name: str, coro) -> None:
        t0 = time.perf_counter()
        await coro
        took[name] = round((time.perf_counter() - t0) * 1000, 1)

    jobs = [timed("stt", engines.stt.warmup()), timed("tts", engines.tts.warmup())]
    for name, stage in (("vad", engines.vad), ("wake", engines.wake)):
        warm = getattr(stage, "warmup", None)
        if warm is not None:
            jobs.append(timed(name, warm()))
    await asyncio.gather(*jobs)
    log.info("speech models ready: stt %s (%.0f ms), tts %s (%.0f ms)",
             engines.stt.name, took["stt"], engines.tts.name, took["tts"])  # fmt: skip
    return took
