"""Incremental vs single-pass speech to text: accuracy and end-of-speech latency.

Each spoken utterance is played in real time (one 32 ms frame every 32 ms) through
IRIS's own ``Listener`` with the real Silero VAD, twice in the same run: once decoded
in one pass after the endpointer decides (today's path), once with a
``stt_stream.IncrementalSession`` fed while it is spoken. Printed per group (short questions,
long multi-sentence utterances made by joining fixtures with natural pauses):

- WER of each mode against the reference text (pooled: edits / reference words, words
  normalized as ``tools.bench.stats.normalize``), and
  how often the two transcripts differ;
- end of speech → final transcript: from the endpointer's decision to the text, median,
  and the incremental/single ratio of the medians; partial decodes per utterance.

    .venv/bin/python -m tools.bench.stt [--reps 1] [--min-chunk 1.0] [--pause-ms 150]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import AudioConfig, SttConfig
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.stt_stream import StreamingTranscriber
from iris_voice.speech.vad import SileroDetector
from iris_voice.voice.heard import Heard, UtteranceReady
from iris_voice.voice.listener import Listener
from tools.bench.stats import (
    edits,  # noqa: F401 (tests/speech/test_whisper_window_models.py imports it here)
    normalize,
    p50,
    pooled_wer,
    word_errors,
)
from tools.testbed.fixtures import BENCH, ensure_fixtures, load_manifest, read_wav

FRAME_S = FRAME_SAMPLES / SAMPLE_RATE
GAP_S = 0.2
"""Pause between joined sentences: a speaker's breath, shorter than the VAD hangover."""
SHORT = [f"bench_{n}" for n in BENCH] + ["pause", "story"]
LONG = [
    ["story", "multiply"],
    ["time_tokyo", "bench_pasta_timer", "bench_france"],
    ["bench_octopus", "bench_hello", "bench_sqrt"],
    ["jarvis_story", "bench_percent", "bench_list_timers"],
    ["bench_time_london", "bench_ten_minute_timer", "bench_time_new_york", "bench_multiply"],
]
"""Multi-sentence utterances: fixtures' speech joined with ``GAP_S`` pauses."""


def utterance_audio(parts: list[str], manifest: dict) -> tuple[np.ndarray, str, int]:
    """0.5 s of silence, the parts' speech joined by ``GAP_S`` pauses, 1 s of silence;
    the reference text; the sample where speech ends."""
    text = " ".join(manifest[n]["text"] for n in parts)
    if len(parts) == 1 and len(manifest[parts[0]]["speech_spans"]) == 1:
        return read_wav(parts[0]), text, manifest[parts[0]]["speech_end"]
    # The ``pause`` fixture's 0.5 s pause would end the utterance (the default hangover):
    # its two halves are joined with a breath-long pause too.
    spans = [(name, a, b) for name in parts for a, b in manifest[name]["speech_spans"]]
    pieces = [np.zeros(SAMPLE_RATE // 2, np.int16)]
    for i, (name, a, b) in enumerate(spans):
        if i:
            pieces.append(np.zeros(round(GAP_S * SAMPLE_RATE), np.int16))
        pieces.append(read_wav(name)[a:b])
    end = sum(len(p) for p in pieces)
    pieces.append(np.zeros(SAMPLE_RATE, np.int16))
    return np.concatenate(pieces), text, end


class PacedSource:
    """Frames of an array at real-time pace (on a fixed schedule, so decodes cannot slow it)."""

    def __init__(self, audio: np.ndarray) -> None:
        self.audio = audio
        self.started = 0.0
        """``time.monotonic()`` when the first frame was due."""

    async def frames(self) -> AsyncIterator[np.ndarray]:
        """The frames, one per ``FRAME_S``."""
        start = self.started = time.monotonic()
        for k, i in enumerate(range(0, len(self.audio) - FRAME_SAMPLES + 1, FRAME_SAMPLES)):
            await asyncio.sleep(max(0.0, start + k * FRAME_S - time.monotonic()))
            yield self.audio[i : i + FRAME_SAMPLES]


async def run_one(
    audio: np.ndarray, speech_end: int, stt: StreamingTranscriber, vad: SileroDetector, incremental: bool
) -> dict:
    """Play ``audio`` through a Listener; decode its utterance one way; text and timings.

    ``e2t_ms`` runs from the endpointer's decision (the pipeline's ``stt`` timing);
    ``wall_ms`` from the moment the last speech sample was played, so it also shows any
    delay partial decodes caused the VAD; ``cpu_s`` is the process CPU time of it all.
    """
    cfg = AudioConfig(activation="always")
    vad.reset()
    listener = Listener(cfg, vad, None, lambda e: None)
    if incremental:
        listener.sessions = stt.open_session
    queue: asyncio.Queue[Heard] = asyncio.Queue(16)
    result: dict = {"stt_partials": 0}
    texts: list[str] = []

    async def consume() -> None:
        # The endpointer may cut a long pause ("Hey Jarvis, … what is"): every utterance
        # is decoded and joined, the latency is the last one's.
        while True:
            heard = await queue.get()
            if not isinstance(heard, UtteranceReady):  # a capture started or timed out
                queue.task_done()
                continue
            utt = heard.utterance
            if utt.session is not None:
                texts.append(await utt.session.finish(utt.audio))
                result["stt_partials"] += utt.session.partials
            else:
                texts.append(await stt.transcribe(utt.audio))
            now = time.monotonic()
            result["e2t_ms"] = (now - utt.decided_at) * 1000
            result["wall_ms"] = (now - source.started - speech_end / SAMPLE_RATE) * 1000
            result["utterances"] = len(texts)
            queue.task_done()

    source = PacedSource(audio)
    cpu = time.process_time()
    consumer = asyncio.create_task(consume())
    await listener.run(source, queue)
    await asyncio.wait_for(queue.join(), 30)
    consumer.cancel()
    result["text"] = " ".join(texts)
    result["cpu_s"] = time.process_time() - cpu
    return result


def report(label: str, rows: list[dict]) -> None:
    """Print one group's figures."""
    out = {}
    for mode in ("single", "incremental"):
        counts = [word_errors(r["ref"], r[mode]["text"]) for r in rows]
        errs, total = sum(e for e, _ in counts), sum(n for _, n in counts)
        e2t = p50(r[mode]["e2t_ms"] for r in rows)
        wall = p50(r[mode]["wall_ms"] for r in rows)
        cpu = p50(r[mode]["cpu_s"] for r in rows)
        rate = pooled_wer(counts)
        out[mode] = (rate, e2t, wall, cpu)
        print(f"  {label:6} {mode:12} WER {rate:6.1%} ({errs}/{total} words)   medians: "
              f"end-of-speech decision -> transcript {e2t:5.0f} ms, last speech sample -> transcript "
              f"{wall:5.0f} ms, CPU {cpu:4.2f} s")  # fmt: skip
    differ = sum(normalize(r["single"]["text"]) != normalize(r["incremental"]["text"]) for r in rows)
    partials = statistics.mean(r["incremental"].get("stt_partials", 0) for r in rows)
    ratio = out["incremental"][1] / out["single"][1]
    wall = out["incremental"][2] / out["single"][2]
    cpu = out["incremental"][3] / out["single"][3]
    print(f"  {label:6} ratio incremental/single: decision->transcript {ratio:.2f}, speech end->transcript "
          f"{wall:.2f}, CPU {cpu:.2f}; transcripts differ in {differ}/{len(rows)}; "
          f"partial decodes per utterance {partials:.1f}")  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    """Both modes on every utterance, alternating, then the figures."""
    manifest = load_manifest()
    inner = FasterWhisperTranscriber(SttConfig())
    stt = StreamingTranscriber(inner, args.min_chunk, args.pause_ms / 1000)
    vad = SileroDetector()
    await stt.warmup()
    await vad.warmup()
    groups = {"short": [[n] for n in SHORT], "long": LONG}
    results: dict[str, list[dict]] = {g: [] for g in groups}
    for rep in range(args.reps):
        for group, utterances in groups.items():
            for parts in utterances:
                audio, ref, end = utterance_audio(parts, manifest)
                row: dict = {"ref": ref, "name": "+".join(parts)}
                # alternate which mode goes first, so neither always runs on a warmer cache
                order = ("single", "incremental") if rep % 2 == 0 else ("incremental", "single")
                for mode in order:
                    row[mode] = await run_one(audio, end, stt, vad, mode == "incremental")
                results[group].append(row)
                s, i = row["single"], row["incremental"]
                es, ei = (word_errors(ref, r["text"])[0] for r in (s, i))
                print(f"  {row['name'][:38]:38} {len(audio) / SAMPLE_RATE:4.1f}s single {s['e2t_ms']:5.0f} ms"
                      f" {es} err  incr {i['e2t_ms']:5.0f} ms {ei} err ({i.get('stt_partials')} partial)"
                      + ("" if not (es or ei) else f"\n      single: {s['text']!r}"
                         f"\n      incr:   {i['text']!r}"), flush=True)  # fmt: skip
    print(f"\nincremental STT, tiny.en int8 on {args.reps} rep(s); min chunk {args.min_chunk} s, "
          f"pause {args.pause_ms} ms, sentences joined with {GAP_S} s pauses")  # fmt: skip
    for group, rows in results.items():
        report(group, rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--min-chunk", type=float, default=SttConfig().incremental_min_s)
    parser.add_argument("--pause-ms", type=int, default=SttConfig().incremental_pause_ms)
    args = parser.parse_args()
    ensure_fixtures()  # outside the event loop: it synthesizes with asyncio.run when stale
    asyncio.run(main(args))
