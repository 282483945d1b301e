"""How much speech on the cancelled microphone interrupts IRIS: measured, not guessed.

With ``audio.barge_in = "voice"`` IRIS stops talking when its speech detector (Silero) hears
a run of speech frames. On the raw microphone IRIS's own voice is speech too; on the
microphone cancelled in-process (``audio/aec.py``) only the canceller's residue is left. This
replays the offline scene of ``aec_scene`` (Piper replies in the test bed's rooms, the human
recordings said over them) through IRIS's canceller — the same :class:`InProcessCanceller`
and :class:`PlayedReference` the daemon runs, the reference handed over in the speaker's
20 ms blocks as they would be written — and runs IRIS's Silero on each 32 ms frame. For each
minimum run of speech frames it prints:

- **false interruptions**: replies (or the part of one before the person speaks) in which
  the rule fired with only IRIS talking, of all replies;
- **detected**: clips said over IRIS in which it fired while the person spoke;
- **detection p50 / p95**: from the person's first loud 32 ms to the frame that fired.

Stopping IRIS then takes one playback block plus the device buffer on top (``make
bench-rooms`` measures it live).

    .venv/bin/python -m tools.bench.aec_bargein [--rooms default,harsh] [--runs 1,2,...] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from iris_voice.audio import FRAME_SAMPLES
from iris_voice.audio.aec import InProcessCanceller
from iris_voice.voice.echoguard import NEAR_SHARE, EchoGuard
from tools.bench.aec_scene import (
    HUMAN,
    RATE,
    ROOMS,
    Scene,
    build_scene,
    human_clips,
    piper_replies,
    room_signals,
)
from tools.bench.stats import p50, percentile

FRAME_S = FRAME_SAMPLES / RATE
TAIL_S = 0.35
"""After a reply, as long as IRIS's echo guard counts IRIS as still audible (``TAIL_S``)."""
RUNS = (1, 2, 3, 4, 6, 8)
"""Minimum runs of speech frames tried (32 ms each)."""


def cancelled(scene: Scene, mic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``mic`` through IRIS's canceller, the played samples handed over in 20 ms blocks
    at the player's rate as the speaker's writer does, each 40 ms (a device buffer)
    before it plays; and, per frame, whether the canceller counted itself converged (IRIS
    lets speech interrupt it only then)."""
    canceller = InProcessCanceller()
    block = round(0.02 * scene.play_rate)
    played = np.clip(np.round(scene.played), -32768, 32767).astype(np.int16)
    pcm = np.clip(np.round(mic), -32768, 32767).astype(np.int16)
    # IRIS plays no chirp: the canceller's first sound is the first reply, as in the daemon
    played[: int(scene.calibration_s * scene.play_rate)] = 0
    pcm[: int(scene.calibration_s * RATE)] = 0
    events = [(i * 0.02 - 0.04, 0, i) for i in range(len(played) // block)]
    events += [((j + 1) * FRAME_S, 1, j) for j in range(len(pcm) // FRAME_SAMPLES)]
    out = np.zeros(len(pcm) // FRAME_SAMPLES * FRAME_SAMPLES, np.int16)
    converged = np.zeros(len(pcm) // FRAME_SAMPLES, bool)
    for _, kind, i in sorted(events):
        if kind == 0:
            canceller.reference.played(played[i * block : (i + 1) * block], scene.play_rate)
        else:
            out[i * FRAME_SAMPLES : (i + 1) * FRAME_SAMPLES] = canceller.process(
                pcm[i * FRAME_SAMPLES : (i + 1) * FRAME_SAMPLES]
            )
            converged[i] = canceller.converged
    return out, converged


def louder_than_echo(scene: Scene, out: np.ndarray) -> np.ndarray:
    """Per frame of the cancelled microphone ``out``, whether IRIS's echo guard takes it as
    louder than IRIS's own echo (``EchoGuard.near_end``, asked of every frame as the listener
    does on the in-process canceller while IRIS speaks): the speaker's level of each 20 ms
    block recorded when it is handed over, 40 ms before it plays, as ``SpeakerSink`` does."""
    block = round(0.02 * scene.play_rate)
    played = scene.played.copy()
    played[: int(scene.calibration_s * scene.play_rate)] = 0
    n = len(played) // block
    levels = np.sqrt(np.mean(np.square(played[: n * block].reshape(n, block)), 1))
    handed = np.arange(n) * 0.02 - 0.04
    now = [0.0]

    def reference(since: float) -> float:
        a, b = np.searchsorted(handed, [since, now[0]], side="left")
        return float(levels[a : b + 1].max()) if b >= a and a < n else 0.0

    guard = EchoGuard(clock=lambda: now[0])
    guard.use("webrtc", "offline")
    guard.reference = reference
    frames = out[: len(out) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
    near = np.zeros(len(frames), bool)
    for j, frame in enumerate(frames):
        now[0] = (j + 1) * FRAME_S
        near[j] = guard.near_end(frame)
    return near


def speech_probabilities(audio: np.ndarray) -> np.ndarray:
    """IRIS's Silero probability for each 32 ms frame, in order (its state carried along)."""
    from iris_voice.speech.vad import SileroDetector

    vad = SileroDetector()

    async def run() -> list[float]:
        frames = audio[: len(audio) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
        return [await vad.probability(f) for f in frames]

    return np.array(asyncio.run(run()))


def fired(speech: np.ndarray, run: int, near: np.ndarray | None = None, share: float = 1.0) -> np.ndarray:
    """Frame indexes where a run of at least ``run`` speech frames, ``share`` of them
    ``near`` (louder than IRIS's echo), completes (then starts afresh)."""
    out, n, k = [], 0, 0
    for i, s in enumerate(speech):
        n, k = (n + 1, k + int(near is None or bool(near[i]))) if s else (0, 0)
        if n >= run and k + 1e-9 >= share * n:
            out.append(i)
            n = k = 0
    return np.array(out, dtype=int)


def judge(
    scene: Scene,
    person: np.ndarray,
    probs: np.ndarray,
    threshold: float,
    allowed: np.ndarray | None = None,
    near: tuple[np.ndarray, float] | None = None,
) -> list[dict[str, Any]]:
    """Per minimum run: false interruptions, detections and their delay (``allowed``: the
    frames on which speech may interrupt at all; ``near``: frames louder than the echo and
    the share of a run that must be)."""
    speech = probs >= threshold
    if allowed is not None:
        speech &= allowed[: len(speech)]
    frame_of = lambda s: int(s / FRAME_S)  # noqa: E731
    loud = np.sqrt(
        np.mean(person[: len(person) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES) ** 2, 1)
    )
    over = [t.over for t in scene.talks]
    echo_only = []  # (first frame, end frame) of IRIS talking with nobody else
    for start, end in scene.replies:
        cut = min([a for a, _ in over if start <= a < end] or [end + TAIL_S])
        echo_only.append((frame_of(start), frame_of(min(cut, end + TAIL_S))))
    rows = []
    for run in RUNS:
        at = fired(speech, run, *(near or (None, 1.0)))
        false = sum(bool(np.any((at >= a) & (at < b))) for a, b in echo_only)
        delays = []
        for a, b in over:
            first = frame_of(a) + int(
                np.argmax(
                    loud[frame_of(a) : frame_of(b) + 1] > 0.1 * loud[frame_of(a) : frame_of(b) + 1].max()
                )
            )
            hit = at[(at >= first) & (at <= frame_of(b) + 1)]
            if len(hit):
                delays.append((hit[0] + 1 - first) * FRAME_S * 1000)
        rows.append({
            "run": run, "min_speech_ms": round(run * FRAME_S * 1000), "false": false,
            "replies": len(echo_only), "detected": len(delays), "over": len(over),
            "p50_ms": p50(delays, 0) if delays else None,
            "p95_ms": percentile(delays, 95, 0) if delays else None,
        })  # fmt: skip
    return rows


def report(results: list[dict[str, Any]]) -> str:
    """The table: one line per room, microphone and minimum run."""
    lines = [
        "room     microphone                    min speech  false interruptions  detected  "
        "detection p50 ms  p95 ms"
    ]
    for r in results:
        for row in r["rows"]:
            p50_ms, p95_ms = (row[k] if row[k] is not None else "-" for k in ("p50_ms", "p95_ms"))
            lines.append(
                f"{r['room']:<8} {r['mic']:<28} {row['min_speech_ms']:>7} ms  "
                f"{row['false']:>11}/{row['replies']:<7}  {row['detected']:>4}/{row['over']:<3}  "
                f"{p50_ms:>16}  {p95_ms:>6}"
            )
    lines.append("(false: replies in which the rule fired with only IRIS talking; detection: from the")
    lines.append(" person's first loud frame to the frame that fired; Silero at audio.vad_threshold;")
    lines.append(" cancelled: once the canceller counts itself converged; louder than echo: and only")
    lines.append(" frames the echo guard takes as louder than IRIS's echo; 50% louder: a run of which half")
    lines.append(" the frames (NEAR_SHARE) are, as IRIS does; from the start: from its first frame)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run it; 0 when it ran, 2 without the human recordings."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rooms", default=",".join(ROOMS))
    ap.add_argument("--human", type=Path, default=HUMAN)
    ap.add_argument("--raw", action="store_true", help="also judge the raw microphone")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if not (args.human / "manifest.json").is_file():
        print(f"nothing to run: no {args.human / 'manifest.json'}", file=sys.stderr)
        return 2
    from iris_voice.config import load

    threshold = load(None)[0].audio.vad_threshold
    scene = build_scene(*piper_replies(), human_clips(args.human))
    results = []
    for name in args.rooms.split(","):
        sig = room_signals(scene, ROOMS[name])
        out, converged = cancelled(scene, sig.mic)
        probs = speech_probabilities(out)
        near = louder_than_echo(scene, out)
        mics = {
            "cancelled": (probs, converged),
            "cancelled, louder than echo": (probs, converged & near[: len(converged)]),
            "cancelled, from the start": (probs, None),
        }
        windows = {f"cancelled, {NEAR_SHARE:.0%} louder": (probs, converged, (near, NEAR_SHARE))}
        if args.raw:
            mics["raw"] = (speech_probabilities(sig.mic), None)
        for mic, (p, allowed, *share) in [*mics.items(), *windows.items()]:
            rows = judge(scene, sig.person, p, threshold, allowed, *share)
            results.append({"room": name, "mic": mic, "rows": rows})
            print(f"  {name} / {mic} done", file=sys.stderr, flush=True)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
