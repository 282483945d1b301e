"""Benchmark of IRIS's speech engines with the real models, printed in one run (medians).

1. STT: decode time of each spoken fixture with Whisper tiny.en and base (and the
   base/tiny ratio), real-time factor = decode time / audio length.
2. TTS: Piper's time to the first chunk and real-time factor, short and long replies.
3. Always-on listening: CPU cost of Silero VAD and the wake word per 32 ms frame
   (ms of CPU per frame and % of one core), on silence and on speech; plus the wall time
   of one frame through ``asyncio.to_thread`` as the daemon runs it.

``--repeat N`` sets the runs per measurement (default 3). Machine load from other
processes shows up in the figures: compare ratios from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import SttConfig, TtsConfig, WakeConfig
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.tts import PiperSynthesizer
from iris_voice.speech.vad import SileroDetector
from iris_voice.speech.wake import OpenWakeWordDetector
from tools.bench.stats import p50
from tools.testbed.fixtures import ensure_fixtures, load_manifest, read_wav

FRAME_MS = 1000 * FRAME_SAMPLES / SAMPLE_RATE
REPLIES = {
    "short": "It is ten past nine in Tokyo.",
    "long": (
        "Twenty three times forty seven is one thousand and eighty one. "
        "I have set a timer for three minutes. "
        "The sea covers most of the planet, and its stories are older than any ship."
    ),
}


def median_ms(samples: list[float]) -> float:
    """Median of durations in seconds, in milliseconds."""
    return 1000 * p50(samples)


async def bench_stt(repeat: int) -> None:
    """Decode time per fixture, tiny.en vs base."""
    manifest = load_manifest()
    engines = {m: FasterWhisperTranscriber(SttConfig(model=m)) for m in ("tiny.en", "base")}
    for engine in engines.values():
        await engine.warmup()
    print("\nSTT (faster-whisper, int8, 2 threads, beam 1): decode ms, median of", repeat)
    print(f"  {'fixture':24} {'audio s':>7} {'tiny.en':>8} {'base':>8} {'base/tiny':>9}  tiny.en text")
    ratios, rtf = [], {m: [] for m in engines}
    for name in manifest:
        audio = read_wav(name)
        seconds = len(audio) / SAMPLE_RATE
        times, text = {}, ""
        for model, engine in engines.items():
            runs = []
            for _ in range(repeat):
                start = time.perf_counter()
                out = await engine.transcribe(audio)
                runs.append(time.perf_counter() - start)
            times[model] = median_ms(runs)
            rtf[model].append(times[model] / 1000 / seconds)
            text = text or out
        ratios.append(times["base"] / times["tiny.en"])
        print(
            f"  {name:24} {seconds:7.2f} {times['tiny.en']:8.0f} {times['base']:8.0f} "
            f"{ratios[-1]:9.2f}  {text}"
        )
    print(
        f"  median real-time factor: tiny.en {p50(rtf['tiny.en']):.2f}, "
        f"base {p50(rtf['base']):.2f}; base/tiny {p50(ratios):.2f}x"
    )


async def bench_tts(repeat: int) -> None:
    """Piper: time to the first chunk and real-time factor."""
    synth = PiperSynthesizer(TtsConfig())
    await synth.warmup()
    print(f"\nTTS (Piper {synth.name}, {synth.sample_rate} Hz): median of {repeat}")
    print(f"  {'reply':6} {'chunks':>6} {'audio s':>7} {'first ms':>8} {'total ms':>8} {'RTF':>5}")
    for label, text in REPLIES.items():
        firsts, totals, audio_s, count = [], [], 0.0, 0
        for _ in range(repeat):
            start = time.perf_counter()
            first = None
            samples = count = 0
            async for chunk in synth.stream(text):
                first = first if first is not None else time.perf_counter() - start
                samples += len(chunk)
                count += 1
            totals.append(time.perf_counter() - start)
            firsts.append(first or 0.0)
            audio_s = samples / synth.sample_rate
        total = p50(totals)
        print(
            f"  {label:6} {count:6} {audio_s:7.2f} {median_ms(firsts):8.0f} {1000 * total:8.0f} "
            f"{total / audio_s:5.2f}"
        )


def split(samples: np.ndarray) -> list[np.ndarray]:
    """Whole FRAME_SAMPLES frames of ``samples``."""
    return [samples[i : i + FRAME_SAMPLES] for i in range(0, len(samples) - FRAME_SAMPLES + 1, FRAME_SAMPLES)]


def cpu_per_frame(step, frames: list[np.ndarray], repeat: int) -> float:
    """Median CPU ms (all threads of this process) per frame for ``step(frame)``."""
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for frame in frames:
            step(frame)
        runs.append((time.process_time() - start) / len(frames))
    return median_ms(runs)


async def bench_listen(repeat: int) -> None:
    """Always-on listening cost: Silero + wake word per 32 ms frame."""
    vad, wake = SileroDetector(), OpenWakeWordDetector(WakeConfig())
    await vad.warmup()
    await wake.warmup()
    speech = read_wav("jarvis_story")
    sources = {
        "silence": np.zeros(10 * SAMPLE_RATE, dtype=np.int16),
        "speech": np.tile(speech, 3),
    }
    print(
        f"\nListening, CPU ms of this process per {FRAME_MS:.0f} ms frame (% of one core), median of {repeat}"
    )
    print(f"  {'audio':8} {'silero':>14} {'wake word':>14} {'both':>14}")
    for label, samples in sources.items():
        frames = split(samples)
        v = cpu_per_frame(vad.probability_sync, frames, repeat)
        w = cpu_per_frame(wake.process_sync, frames, repeat)
        cells = [f"{ms:6.3f} ({100 * ms / FRAME_MS:4.1f}%)" for ms in (v, w, v + w)]
        print(f"  {label:8} {cells[0]:>14} {cells[1]:>14} {cells[2]:>14}")
    frames = split(speech)
    walls = []
    for frame in frames:
        start = time.perf_counter()
        await vad.probability(frame)
        await wake.process(frame)
        walls.append(time.perf_counter() - start)
    print(f"  one frame through asyncio.to_thread (VAD + wake), wall: median {median_ms(walls):.3f} ms")


async def main() -> None:
    """Command-line entry: ``python -m tools.bench.speech [--repeat N] [--only stt|tts|listen]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["stt", "tts", "listen"])
    args = ap.parse_args()
    ensure_fixtures()
    if args.only in (None, "stt"):
        await bench_stt(args.repeat)
    if args.only in (None, "tts"):
        await bench_tts(args.repeat)
    if args.only in (None, "listen"):
        await bench_listen(args.repeat)


if __name__ == "__main__":
    asyncio.run(main())
