"""Endpointing benchmark: does a VAD hangover cut a sentence with a pause in two, and what
does it cost in latency?

Each fixture (the ``pause`` fixture, the ``endpoint_*`` fixtures with 0.3/0.5/0.7 s of
silence mid-sentence, and every spoken benchmark question) goes once through IRIS's real
Silero VAD (``SileroDetector``, 32 ms frames); the speech probabilities are then replayed
through IRIS's ``Segmenter`` at each hangover with the listener's threshold and hysteresis,
exactly as ``Listener`` feeds it. For each hangover it reports:

- **cut**: the segmenter decided the utterance was over before the speech really ended
  (the second half would become a second question);
- **cost**: from the true end of speech (the fixture manifest) to the decision — what the
  hangover adds to first audio (the hangover plus Silero's lag on the last syllable).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import AudioConfig
from iris_voice.speech.vad import Segmenter, SileroDetector, UtteranceEnded
from iris_voice.voice.listener import SPEECH_HYSTERESIS
from tools.bench import endpoint_turn
from tools.bench.stats import p50
from tools.testbed.fixtures import BENCH, ENDPOINT, HESITATIONS, ensure_fixtures, load_manifest, read_wav

HANGOVERS_MS = (200, 300, 400, 500, 600, 800)
FRAME_S = FRAME_SAMPLES / SAMPLE_RATE


def probabilities(detector: SileroDetector, samples: np.ndarray) -> list[float]:
    """Silero's speech probability per frame, from a fresh state, with 1 s of silence after."""
    detector.reset()
    padded = np.concatenate([samples, np.zeros(SAMPLE_RATE, dtype=np.int16)])
    n = len(padded) // FRAME_SAMPLES
    return [detector.probability_sync(padded[i * FRAME_SAMPLES : (i + 1) * FRAME_SAMPLES]) for i in range(n)]


def decide(probs: list[float], hangover_ms: int, audio: AudioConfig) -> UtteranceEnded | None:
    """The first end-of-utterance decision at this hangover, as ``Listener`` would make it."""
    seg = Segmenter(
        hangover_seconds=hangover_ms / 1000, max_seconds=audio.max_utterance_s, timeout_seconds=None
    )
    for p in probs:
        threshold = audio.vad_threshold - (SPEECH_HYSTERESIS if seg.in_utterance else 0.0)
        event = seg.process(FRAME_S, p >= threshold)
        if isinstance(event, UtteranceEnded):
            return event
    return None


def judge(probs: list[float], entry: dict, hangover_ms: int, audio: AudioConfig) -> dict:
    """Cut or not, and the cost (ms from the true end of speech to the decision)."""
    event = decide(probs, hangover_ms, audio)
    true_end = entry["speech_end"] / SAMPLE_RATE
    if event is None:
        return {"cut": False, "cost_ms": None}
    decided = event.end_s + event.silence_s
    return {"cut": decided < true_end, "cost_ms": round((decided - true_end) * 1000, 1)}


def run(names: list[str], hangovers: tuple[int, ...]) -> dict[str, dict[int, dict]]:
    """Fixture name → hangover → verdict."""
    audio = AudioConfig()
    detector = SileroDetector()
    manifest = load_manifest()
    out: dict[str, dict[int, dict]] = {}
    for name in names:
        probs = probabilities(detector, read_wav(name))
        out[name] = {h: judge(probs, manifest[name], h, audio) for h in hangovers}
    return out


def report(results: dict[str, dict[int, dict]], hangovers: tuple[int, ...]) -> None:
    """Per pause fixture: cut or not at each hangover; then cuts and cost per hangover."""
    manifest = load_manifest()
    pauses = [n for n in results if len(manifest[n]["speech_spans"]) > 1]
    print("== Mid-sentence pauses: is the utterance cut in two? (hangover in ms)")
    print(f"  {'fixture':26} {'pause':>5}  " + " ".join(f"{h:>5}" for h in hangovers))
    for name in pauses:
        spans = manifest[name]["speech_spans"]
        gap = (spans[1][0] - spans[0][1]) / SAMPLE_RATE
        cells = " ".join(f"{'CUT' if results[name][h]['cut'] else 'ok':>5}" for h in hangovers)
        print(f"  {name:26} {gap:5.2f}  {cells}")
    print("\n== Per hangover: cuts, and the cost to first audio (true end of speech -> decision)")
    print(
        f"  {'hangover':>8}  {'pause cuts':>10}  {'question cuts':>13}  {'cost mean':>9}  {'median':>7}  (ms)"
    )
    questions = [n for n in results if n not in pauses]
    for h in hangovers:
        cuts_p = sum(results[n][h]["cut"] for n in pauses)
        cuts_q = [n for n in questions if results[n][h]["cut"]]
        costs = [results[n][h]["cost_ms"] for n in questions if not results[n][h]["cut"]]
        costs = [c for c in costs if c is not None]
        mean = round(statistics.fmean(costs), 1) if costs else None
        median = p50(costs, 1)
        print(f"  {h:>8}  {cuts_p:>4}/{len(pauses):<5}  {len(cuts_q):>6}/{len(questions):<6}  {mean!s:>9}  "
              f"{median!s:>7}  {' '.join(cuts_q)}")  # fmt: skip


def main() -> int:
    """Command line: ``python -m tools.bench.endpoint [--json OUT]``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="also write the verdicts to this file")
    p.add_argument("--no-smart-turn", action="store_true", help="only the silence hangovers")
    args = p.parse_args()
    ensure_fixtures()
    names = ["pause", *ENDPOINT, *HESITATIONS, *(f"bench_{n}" for n in BENCH)]
    results = run(names, HANGOVERS_MS)
    report(results, HANGOVERS_MS)
    turn: dict = {}
    if not args.no_smart_turn:
        manifest, detector = load_manifest(), SileroDetector()
        recordings = {}
        for n in names:
            if n == "pause":
                continue
            audio, end = read_wav(n), manifest[n]["speech_end"] / SAMPLE_RATE
            if manifest[n].get("wake_word"):
                # The daemon's capture starts at the wake word, not before it: so here too.
                start = endpoint_turn.after_wake(probabilities(detector, audio))
                audio, end = audio[start:], end - start / SAMPLE_RATE
            recordings[n] = (audio, end)
        recordings |= {n: (a, None) for n, a in endpoint_turn.human_clips().items()}
        turn = endpoint_turn.run(recordings, lambda audio: probabilities(detector, audio))
        endpoint_turn.report(turn)
    if args.json:
        Path(args.json).write_text(json.dumps({"silence": results, "smart_turn": turn}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
