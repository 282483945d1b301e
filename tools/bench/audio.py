"""Benchmark of IRIS's audio I/O on the virtual PipeWire bed (tools/testbed/audiobed.py), in one run.

1. Bring-up time of the bed (bus, pipewire, wireplumber, pipewire-pulse, devices).
2. CPU of an idle ``MicCapture`` (frames of silence flowing, consumed) over ``--seconds``,
   as % of one core from this process's /proc times, next to the same process idle
   without capture (the ratio is what capture costs).
3. CPU of an open, idle ``SpeakerSink`` (its writer feeding silence) over the same time.
4. ``stop()`` latency: from the call to silence in the recording of the speaker
   (an upper bound, see ``SpeakerRecording.wall_time``), median and max of ``--trials``.

``make bench-audio``; ``--json`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

import numpy as np

from iris_voice.audio.capture import MicCapture
from iris_voice.audio.playback import SpeakerSink
from iris_voice.config import AudioConfig
from tools.bench.stats import p50
from tools.testbed.audiobed import VirtualAudio


def cpu_seconds() -> float:
    """User + system CPU of this process (all threads), from /proc/self/stat."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure_cpu(seconds: float) -> float:
    """% of one core used by this process while the loop sleeps ``seconds``."""
    c0, t0 = cpu_seconds(), time.monotonic()
    await asyncio.sleep(seconds)
    return 100 * (cpu_seconds() - c0) / (time.monotonic() - t0)


async def capture_cpu(seconds: float) -> tuple[float, int, int]:
    """CPU while MicCapture runs; also the frames received and dropped."""
    capture = MicCapture(AudioConfig())
    count = 0

    async def consume() -> None:
        nonlocal count
        async for _ in capture.frames():
            count += 1

    task = asyncio.create_task(consume())
    while count < 10:  # the stream is open and flowing
        await asyncio.sleep(0.05)
    start = count
    percent = await measure_cpu(seconds)
    received = count - start
    capture.close()
    await task
    return percent, received, capture.dropped


async def speaker_cpu(seconds: float) -> float:
    """CPU while an open SpeakerSink idles (its writer keeps feeding silence)."""
    sink = SpeakerSink(AudioConfig())
    await sink.open()
    await asyncio.sleep(0.5)
    percent = await measure_cpu(seconds)
    sink.close()
    return percent


async def stop_latency(bed: VirtualAudio, trials: int) -> tuple[list[float], int]:
    """Seconds from ``stop()`` to silence, one per trial; and underflows seen."""
    sink = SpeakerSink(AudioConfig())
    t = np.arange(int(4.0 * 22050)) / 22050
    tone = (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    latencies = []
    for _ in range(trials):
        rec = bed.record_speaker()
        sink.first_sample_at = None
        await sink.play(tone, 22050)
        while sink.first_sample_at is None:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.8 + 0.1 * np.random.rand())  # stop at a random point of a block
        stopped = time.monotonic()
        sink.stop()
        await asyncio.sleep(0.4)
        x = rec.stop()
        loud = np.flatnonzero(np.abs(x.astype(np.int32)) > 0.05 * 32767)
        latencies.append(rec.wall_time(int(loud[-1]) + 1) - stopped)
    underflows = sink.underflows
    sink.close()
    return latencies, underflows


async def run(bed: VirtualAudio, seconds: float, trials: int) -> dict:
    """Every figure of one run."""
    baseline = await measure_cpu(seconds)
    capture, frames, dropped = await capture_cpu(seconds)
    speaker = await speaker_cpu(seconds)
    latencies, underflows = await stop_latency(bed, trials)
    return {
        "idle_process_cpu_percent": round(baseline, 2),
        "capture_cpu_percent": round(capture, 2),
        "capture_cpu_over_idle_percent": round(capture - baseline, 2),
        "capture_frames_per_s": round(frames / seconds, 2),
        "capture_dropped": dropped,
        "speaker_idle_cpu_percent": round(speaker, 2),
        "stop_latency_ms_median": round(1000 * p50(latencies), 1),
        "stop_latency_ms_max": round(1000 * max(latencies), 1),
        "stop_latency_ms_all": [round(1000 * v, 1) for v in latencies],
        "speaker_underflows": underflows,
    }


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="CPU measurement window")
    parser.add_argument("--trials", type=int, default=9, help="stop() latency trials")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    startups = []
    for _ in range(3):
        with VirtualAudio() as bed:
            startups.append(bed.startup_seconds)
    with VirtualAudio() as bed:
        startups.append(bed.startup_seconds)
        bed.use_in_process()
        result = asyncio.run(run(bed, args.seconds, args.trials))
    result = {"bed_startup_s_median": round(p50(startups), 3), **result}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:32} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
