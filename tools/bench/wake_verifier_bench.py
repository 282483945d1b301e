"""The wake word alone and with its verifier, on the held-out half of the long corpus.

``python -m tools.bench.wake_verifier_bench [--json FILE]`` (``make bench-wake-verifier``).
For each configuration: false accepts over the held-out hours without the wake word
(prose, names that sound like "Jarvis", speech in noise), per hour, with the upper bound
the corpus length allows (three over the hours when none is seen: the rule of three);
"Hey Jarvis, <request>" detected per voice (10 espeak-ng and 2 flite voices the verifier
never heard, and IRIS's Piper voice) and per speaking rate (120–200 words a minute), clean
and in noise; and the human recordings of ``../shared/testdata/human-speech`` run through
the real detector (the one "hey jarvis" must wake IRIS, no other wake word, and no command
or question).

The corpus is replayed from the wake model's steps (``wake_features``): a configuration's
detections are the steps where ``patience`` steps in a row reach ``threshold``, then the
model's 16-step refill. Nothing here tunes anything: the verifier was trained on the
development half (``tools/train_wake_verifier.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iris_voice.audio import SAMPLE_RATE
from iris_voice.config import WakeConfig
from iris_voice.speech.wake import OpenWakeWordDetector, scan
from iris_voice.speech.wake_verifier import WakeVerifier
from tools.bench.rooms_wake import HUMAN, _load16k
from tools.bench.wake_features import ClipSteps, features, fires, step_scores
from tools.bench.wake_micro import MICRO_STEP_S, micro, micro_clip, micro_fires


@dataclass(frozen=True)
class Config:
    """One way of deciding: the wake model alone or with the verifier."""

    name: str
    threshold: float
    patience: int
    verifier: bool
    micro: str = ""
    """``""``: openWakeWord decides; ``"alone"``: microWakeWord decides at ``threshold``;
    ``"agree"``: openWakeWord's detections that microWakeWord reached ``MICRO_AGREE`` near."""


CONFIGS = (
    Config("model alone, 0.5, patience 3 (before)", 0.5, 3, False),
    Config("model alone, 0.5, patience 1", 0.5, 1, False),
    Config("verifier, 0.5, patience 1", 0.5, 1, True),
    Config("verifier, 0.5, patience 2", 0.5, 2, True),
    Config("verifier, 0.5, patience 3", 0.5, 3, True),
    Config("verifier, 0.7, patience 2", 0.7, 2, True),
    Config("microWakeWord alone, cutoff 0.97 (its own)", 0.97, 1, False, "alone"),
    Config("verifier, 0.5, patience 2, and microWakeWord agreeing", 0.5, 2, True, "agree"),
)
MICRO_AGREE = 0.5
"""microWakeWord's probability that counts as agreeing."""
AGREE_S = (1.0, 0.5)
"""How long before and after openWakeWord's detection microWakeWord may agree."""


def detections(s: ClipSteps, micro: np.ndarray | None, cfg: Config, verifier) -> list[float]:
    """When (seconds into the clip) a configuration wakes IRIS."""
    if cfg.micro == "alone":
        return [(i + 1) * MICRO_STEP_S for i in micro_fires(micro, cfg.threshold)]
    got = [
        (i + 1) * 0.08
        for i in fires(step_scores(s, verifier if cfg.verifier else None), cfg.threshold, cfg.patience)
    ]
    if cfg.micro == "agree":
        t = (np.arange(len(micro)) + 1) * MICRO_STEP_S
        got = [g for g in got if (micro[(t >= g - AGREE_S[0]) & (t <= g + AGREE_S[1])] > MICRO_AGREE).any()]
    return got


def evaluate(
    steps: list[ClipSteps], micro: list[np.ndarray], cfg: Config, verifier: WakeVerifier | None
) -> dict:
    """False accepts and detections of one configuration on the held-out half."""
    fa: dict[str, int] = defaultdict(int)
    hours: dict[str, float] = defaultdict(float)
    hit: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    examples = []
    for s, m in zip(steps, micro, strict=True):
        got = detections(s, m, cfg, verifier)
        if s.clip.kind == "wake":
            engine, voice, wpm = s.clip.voice.split()[:3]
            noisy = "+" in s.clip.voice.split(" ", 3)[-1] and "dB" in s.clip.voice
            for key in (
                f"voice {engine} {voice}" + (" (noise)" if noisy else ""),
                f"wpm {wpm}" + (" (noise)" if noisy else ""),
            ):
                hit[key][0] += bool(got)
                hit[key][1] += 1
        else:
            fa[s.clip.kind] += len(got)
            hours[s.clip.kind] += s.clip.seconds / 3600
            examples += [f"{s.clip.voice}: {s.clip.file} at {t:.1f} s" for t in got]
    total_h = sum(hours.values())
    total = sum(fa.values())
    return {
        "false_accepts": dict(fa),
        "hours": {k: round(v, 2) for k, v in hours.items()},
        "per_hour": round(total / total_h, 3),
        "upper_per_hour": round(max(total, 3) / total_h, 3) if total == 0 else None,
        "detected": {k: f"{a}/{b}" for k, (a, b) in sorted(hit.items())},
        "examples": examples[:12],
    }


def human(cfg: Config) -> list[dict]:
    """The human recordings through the real detectors at this configuration."""
    wake = WakeConfig(threshold=cfg.threshold, patience=cfg.patience, verifier=cfg.verifier)
    rows = []
    for clip in json.loads((HUMAN / "manifest.json").read_text()):
        silence = np.zeros(SAMPLE_RATE, np.int16)
        audio = np.concatenate([silence, _load16k(HUMAN / clip["file"]), silence])
        woke = bool(scan(OpenWakeWordDetector(wake), audio, cfg.threshold).detections)
        if cfg.micro:
            best = float(micro_clip(audio).max(initial=0.0))
            woke = best > cfg.threshold if cfg.micro == "alone" else woke and best > MICRO_AGREE
        expected = clip["text"].lower().strip(" .,!?") == "hey jarvis"
        rows.append({"text": clip["text"], "kind": clip["kind"], "expected": expected, "detected": woke})
    return rows


def _sum(detected: dict[str, str], keep) -> str:
    pairs = [tuple(map(int, v.split("/"))) for k, v in detected.items() if k.startswith("voice") and keep(k)]
    return f"{sum(a for a, _ in pairs)}/{sum(b for _, b in pairs)}"


def print_summary(results: dict[str, dict]) -> None:
    """One line per configuration: the goals' figures side by side."""
    print(
        "\n| configuration | false accepts /h (count, hours) | names | detected clean | in noise "
        "| voices all detected (clean) | human hey jarvis |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, row in results.items():
        count, hours = sum(row["false_accepts"].values()), sum(row["hours"].values())
        clean = [k for k, v in row["detected"].items() if k.startswith("voice") and "noise" not in k]
        whole = sum(1 for k in clean if row["detected"][k].split("/")[0] == row["detected"][k].split("/")[1])
        print(
            f"| {name} | {row['per_hour']} ({count}, {hours:.2f} h) | {row['false_accepts'].get('names', 0)} "
            f"| {_sum(row['detected'], lambda k: 'noise' not in k)} "
            f"| {_sum(row['detected'], lambda k: 'noise' in k)} "
            f"| {whole}/{len(clean)} | {row['human_wake']} |"
        )


def main(argv: list[str] | None = None) -> int:
    """Run every configuration and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    verifier = WakeVerifier.load()
    _, steps = features()
    configs = CONFIGS
    try:
        micro_all = micro()
    except ImportError as exc:
        print(f"microWakeWord rows left out: {exc} (pip install -r requirements/bench-micro-wakeword.txt)")
        micro_all, configs = [np.zeros(0, np.float32)] * len(steps), [c for c in CONFIGS if not c.micro]
    held = [(s, m) for s, m in zip(steps, micro_all, strict=True) if s.clip.half == "held-out"]
    results = {}
    for cfg in configs:
        row = evaluate([s for s, _ in held], [m for _, m in held], cfg, verifier)
        rows = human(cfg) if HUMAN.is_dir() else []
        row["human_wake"] = [r for r in rows if r["expected"] and r["detected"]] and "detected" or "missed"
        row["human_false"] = [r["text"] for r in rows if r["detected"] and not r["expected"]]
        results[cfg.name] = row
        print(f"\n== {cfg.name}" + (f" (verifier asked from {verifier.candidate:g})" if cfg.verifier else ""))
        hours = sum(row["hours"].values())
        print(
            f"  false accepts: {sum(row['false_accepts'].values())} in {hours:.2f} h = {row['per_hour']}/h"
            + (f" (none seen: at most {row['upper_per_hour']}/h, 95 %)" if row["upper_per_hour"] else "")
            + "  by kind "
            + ", ".join(f"{k} {row['false_accepts'].get(k, 0)} in {h} h" for k, h in row["hours"].items())
        )
        for line in row["examples"]:
            print(f"    {line}")
        print("  detected: " + "; ".join(f"{k} {v}" for k, v in row["detected"].items()))
        others = row["human_false"] or "none"
        print(f"  human 'hey jarvis': {row['human_wake']}; other human clips that woke IRIS: {others}")
    print_summary(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
