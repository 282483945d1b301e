"""Whisper's full 30 s window vs a right-sized one (``stt.window``), on the same clips.

Every clip is decoded the way ``FasterWhisperTranscriber`` decodes it, once on the full
window (faster-whisper's ``transcribe``) and once per ``--pads`` value on a short window
(``whisper_window.ShortWindow``: the audio plus that padding, falling back to the full
window when the short decode looks wrong; the fallback's time is included). Sets:

- ``human``: the real recordings of ``../shared/testdata/human-speech`` (WER over the
  command, question and other clips, whole clips, no VAD);
- ``fixtures``: the Piper/espeak-spoken fixtures, whole (lead and tail silence included);
- ``cut``: the same fixtures cut 0.1 s after their speech ends, as an incremental
  session hands a pause's audio to the decoder (little silence after the words);
- ``generated``: 200 short commands in several voices and speeds, a third in noise
  (``tools/bench/command_corpus.py``).

With ``--moonshine``, each set is also decoded by Moonshine tiny-en
(``tools/bench/moonshine_stt.py``: a new transcriber per clip, and one reused).

Printed per set and mode: decode ms p50/p95, WER (pooled, ``stats.word_errors``), finished
transcripts with a back-to-back repetition (``whisper_window.repetition``), fallbacks to
the full window and why, transcripts that differ from the full window's.

    .venv/bin/python -m tools.bench.stt_window [--pads 3,6,10] [--sets human,generated]
        [--moonshine] [--human DIR] [--show]
"""

from __future__ import annotations

import argparse
import json
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np

from iris_voice.config import SttConfig
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.whisper_window import ShortWindow, repetition
from tools.bench.command_corpus import ensure_commands
from tools.bench.rooms_speech import HUMAN, KINDS
from tools.bench.stats import normalize, p50, p95, word_errors
from tools.testbed.fixtures import ensure_fixtures, load_manifest, read_wav

CUT_AFTER_S = 0.1
"""Silence kept after the last word in the ``cut`` set (the middle of a 150 ms pause, and then some)."""


def read_clip(path: Path) -> np.ndarray:
    """A 16 kHz mono 16-bit WAV as float32."""
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768


def clip_sets(human: Path) -> dict[str, list[dict]]:
    """name → clips: {"name", "audio", "ref" (reference text), "wer" (counts in the WER)}."""
    sets: dict[str, list[dict]] = {"human": [], "fixtures": [], "cut": [], "generated": []}
    for clip in json.loads((human / "manifest.json").read_text()):
        sets["human"].append({"name": clip["file"], "audio": read_clip(human / clip["file"]),
                              "ref": clip["text"], "wer": clip.get("kind") in KINDS})  # fmt: skip
    for name, entry in load_manifest().items():
        audio = read_wav(name).astype(np.float32) / 32768
        sets["fixtures"].append({"name": name, "audio": audio, "ref": entry["text"], "wer": True})
        end = entry["speech_end"] + round(CUT_AFTER_S * 16000)
        sets["cut"].append({"name": name, "audio": audio[:end], "ref": entry["text"], "wer": True})
    folder, commands = ensure_commands()
    for c in commands:
        label = f"{c.file} ({c.voice}{', ' + c.noise if c.noise else ''})"
        audio = read_clip(folder / c.file)
        sets["generated"].append({"name": label, "audio": audio, "ref": c.text, "wer": True})
    return sets


def run_mode(stt: Any, window: ShortWindow | None, clips: list[dict]) -> list[dict]:
    """Each clip decoded one way: text, ms, the fallback reason (short windows). ``stt``
    is Whisper (``window`` None: the full window) or any engine with ``transcribe_sync``."""
    rows = []
    for clip in clips:
        if hasattr(stt, "prepare"):
            stt.prepare()  # untimed (Moonshine's fresh transcriber)
        start = time.perf_counter()
        if not isinstance(stt, FasterWhisperTranscriber):
            text = stt.transcribe_sync(clip["audio"])
        elif window is None:
            text = " ".join(stt._full(clip["audio"]).split())
        else:
            text = " ".join(window.decode(clip["audio"], "", stt._full).split())
        ms = (time.perf_counter() - start) * 1000
        rows.append({"text": text, "ms": ms, "fallback": window.last if window else None})
    return rows


def summary(label: str, clips: list[dict], rows: list[dict], full: list[dict]) -> str:
    """One line of figures for a set decoded one way."""
    ms = [r["ms"] for r in rows]
    counted = [(c, r) for c, r in zip(clips, rows, strict=True) if c["wer"]]
    counts = [word_errors(c["ref"], r["text"]) for c, r in counted]
    e, n = sum(x for x, _ in counts), sum(y for _, y in counts)
    loops = sum(repetition(r["text"]) for r in rows)
    reasons: dict[str, int] = {}
    for r in rows:
        if r["fallback"]:
            reasons[r["fallback"]] = reasons.get(r["fallback"], 0) + 1
    differ = sum(normalize(r["text"]) != normalize(f["text"]) for r, f in zip(rows, full, strict=True))
    fb = sum(reasons.values())
    why = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
    return (f"  {label:34} decode p50 {p50(ms):6.0f} ms  p95 {p95(ms):6.0f} ms  "
            f"WER {e / n:6.1%} ({e}/{n})  repeats {loops}  fallbacks {fb}{f' ({why})' if why else ''}  "
            f"differ from full {differ}/{len(rows)}")  # fmt: skip


def main(args: argparse.Namespace) -> None:
    """Full window, then each padding, on every set; figures per set and mode."""
    ensure_fixtures()
    wanted = args.sets.split(",")
    sets = {name: clips for name, clips in clip_sets(args.human).items() if name in wanted}
    engines = []
    if args.moonshine:
        from tools.bench.moonshine_stt import MoonshineBench

        engines = [MoonshineBench(fresh=True), MoonshineBench(fresh=False)]
    stt = FasterWhisperTranscriber(SttConfig(window="full"))
    stt.transcribe_sync(np.zeros(16000, np.float32))  # load and warm up
    model = stt._model
    pads = [float(p) for p in args.pads.split(",")]
    print(f"Whisper {stt.name} int8, {stt.cfg.threads} threads: full 30 s window vs the audio + padding")
    for name, clips in sets.items():
        print(f"\n{name}: {len(clips)} clips ({sum(c['wer'] for c in clips)} in the WER)", flush=True)
        full = run_mode(stt, None, clips)
        results = {"full": full}
        for pad in pads:
            results[f"short {pad:g}s"] = run_mode(stt, ShortWindow(model, pad), clips)
        for engine in engines:
            engine.prepare()
            engine.transcribe_sync(np.zeros(16000, np.float32))  # load and warm up
            results[engine.name] = run_mode(engine, None, clips)
            if engine.failures:
                print(f"  {engine.name}: {engine.failures} decodes failed (empty transcripts)")
                engine.failures = 0
        for label, rows in results.items():
            print(summary(label, clips, rows, full), flush=True)
        if args.show:
            for i, clip in enumerate(clips):
                texts = {label: rows[i]["text"] for label, rows in results.items()}
                if len({" ".join(normalize(t)) for t in texts.values()}) > 1:
                    print(f"    {clip['name']}: " + " | ".join(f"{k}: {v!r}" for k, v in texts.items()))
        mid = {label: p50(r["ms"] for r in rows) for label, rows in results.items()}
        print("  p50 ratio to full: " + ", ".join(
            f"{label} {mid[label] / mid['full']:.2f}" for label in results if label != "full"))  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pads", default="3,6,10", help="seconds of padding to compare (comma-separated)")
    parser.add_argument("--sets", default="human,fixtures,cut,generated", help="clip sets (comma-separated)")
    parser.add_argument("--moonshine", action="store_true", help="also decode with Moonshine tiny-en")
    parser.add_argument("--human", type=Path, default=HUMAN)
    parser.add_argument("--show", action="store_true", help="print the clips whose transcripts differ")
    main(parser.parse_args())
