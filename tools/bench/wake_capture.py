"""Where a wake-word capture starts, and what Whisper makes of it.

IRIS opens a question's capture when the wake-word model fires, a little after "hey
Jarvis" ends, and keeps ``WAKE_PRE_ROLL_S`` (plus what ``wake.patience`` delays the
detection) of the audio before it. Too little, and a speaker who runs the phrase into the
question loses the question's first syllables, or a late detection (a fast or unusual
voice) cuts into it; the transcript then starts wrong ("What time did you learn?" for
"What time is it in London?"). More keeps the wake phrase itself in the capture: Whisper
then hears the sentence as it was said, and the pipeline drops the phrase from the text.

Each clip ("Hey Jarvis, <question>") runs through IRIS's own ``Listener`` in wake-word mode
with the real VAD and wake model, as fast as it can be fed; each capture is decoded as the
daemon decodes a whole utterance (the short window, ``stt.window = "auto"``), the wake
phrase is stripped as the pipeline strips it, and the text is scored against the question.
Clips: the spoken test fixtures with the wake word (Piper), the room benchmark's (Piper and
espeak-ng), the 200 generated commands with "Hey Jarvis, " first (several voices and
speeds, a third in noise: ``command_corpus``), and the real human "hey jarvis" followed
by each real human question or command.

Configurations: ``pre-roll[+lead]`` in seconds, ``+lead`` telling Whisper the capture opens
with the wake phrase (``Utterance.lead``); the default compares the old capture (0.25 s)
with the phrase kept, without and with the lead.

    .venv/bin/python -m tools.bench.wake_capture [--configs 0.25,1.0,1.0+lead]
        [--sets fixtures,ear,generated,human]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import AudioConfig, Config, SttConfig
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.vad import SileroDetector
from iris_voice.speech.wake import OpenWakeWordDetector
from iris_voice.voice.heard import UtteranceReady
from iris_voice.voice.listener import Listener
from iris_voice.voice.phrases import strip_wake_phrase, wake_phrase_text
from tools.bench.command_corpus import ensure_commands
from tools.bench.ear_fixtures import ensure_ear_fixtures
from tools.bench.stats import p50, pooled_wer, word_errors
from tools.testbed.fixtures import ensure_fixtures, load_manifest, read_wav

LEAD_S = 1.0
TAIL_S = 1.5
HUMAN = Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "human-speech"
WAKE_NAME = "hey_jarvis"


def _pad(audio: np.ndarray) -> np.ndarray:
    lead, tail = (np.zeros(round(s * SAMPLE_RATE), np.int16) for s in (LEAD_S, TAIL_S))
    return np.concatenate([lead, audio.astype(np.int16), tail])


def _question(text: str) -> str:
    return strip_wake_phrase(WAKE_NAME, text)


def clips(sets: list[str]) -> dict[str, list[tuple[str, np.ndarray, str]]]:
    """Set → (name, 16 kHz int16 audio with silence around it, the question's text)."""
    out: dict[str, list[tuple[str, np.ndarray, str]]] = {}
    if "fixtures" in sets:
        ensure_fixtures()
        manifest = load_manifest()
        out["fixtures"] = [
            (n, _pad(read_wav(n)), _question(m["text"])) for n, m in manifest.items() if m.get("wake_word")
        ]
    if "ear" in sets:
        folder = next(wav.parent for wav, *_ in ensure_ear_fixtures() if wav.stem.startswith("ear_"))
        manifest = json.loads((folder / "manifest.json").read_text())
        out["ear"] = [(n, _pad(_read(folder / m["file"])), _question(m["text"])) for n, m in manifest.items()]
    if "generated" in sets:
        folder, commands = ensure_commands(wake=True)
        out["generated"] = [(c.file, _pad(_read(folder / c.file)), _question(c.text)) for c in commands]
    if "human" in sets and (HUMAN / "manifest.json").exists():
        rows = json.loads((HUMAN / "manifest.json").read_text())
        wake = _read(HUMAN / "oww_hey_jarvis.wav")
        gap = np.zeros(round(0.15 * SAMPLE_RATE), np.int16)
        out["human"] = [
            (r["file"], _pad(np.concatenate([wake, gap, _read(HUMAN / r["file"])])), r["text"])
            for r in rows
            if r["kind"] in ("question", "command")
        ]
    return out


def _read(path: Path) -> np.ndarray:
    import wave

    with wave.open(str(path)) as f:
        assert f.getframerate() == SAMPLE_RATE and f.getnchannels() == 1, path
        return np.frombuffer(f.readframes(f.getnframes()), np.int16)


class _Unpaced:
    """The frames of an array, as fast as the listener takes them."""

    def __init__(self, audio: np.ndarray) -> None:
        self.audio = audio

    async def frames(self) -> AsyncIterator[np.ndarray]:
        """Every whole frame, in order."""
        for i in range(0, len(self.audio) - FRAME_SAMPLES + 1, FRAME_SAMPLES):
            yield self.audio[i : i + FRAME_SAMPLES]


async def captures(
    audio: np.ndarray, vad: SileroDetector, wake: OpenWakeWordDetector, cfg: Config, pre_roll_s: float
) -> list[np.ndarray]:
    """The captures IRIS's listener opens on ``audio`` in wake-word mode, keeping
    ``pre_roll_s`` from before a detection."""
    vad.reset()
    wake.reset()
    audio_cfg = AudioConfig(activation="wake_word", end_of_turn="silence")
    listener = Listener(audio_cfg, vad, wake, lambda e: None, wake_threshold=cfg.wake.threshold)
    listener.wakes.pre_roll_s = pre_roll_s
    queue: asyncio.Queue = asyncio.Queue(64)
    await listener.run(_Unpaced(audio), queue)
    out = []
    while not queue.empty():
        item = queue.get_nowait()
        if isinstance(item, UtteranceReady):
            out.append(item.utterance.audio)
    return out


async def main(args: argparse.Namespace, sets: dict[str, list[tuple[str, np.ndarray, str]]]) -> None:
    """Every clip of ``sets`` at every pre-roll; per set and pre-roll: WER, missed, decode time."""
    cfg = Config()
    stt = FasterWhisperTranscriber(SttConfig())
    vad, wake = SileroDetector(), OpenWakeWordDetector(cfg.wake)
    await stt.warmup()
    await vad.warmup()
    await wake.warmup()
    configs = args.configs.split(",")
    lead = wake_phrase_text(WAKE_NAME)
    print(f"configurations (pre-roll before a detection[+lead]): {', '.join(configs)} (+ {wake.late_s:.2f} s "
          f"for wake.patience); end of turn by silence; Whisper {SttConfig().model}, "
          f"window {SttConfig().window}")  # fmt: skip
    for name, items in sets.items():
        results: dict[str, list] = {c: [] for c in configs}
        for clip, audio, ref in items:
            line = []
            for config in configs:
                told = lead if config.endswith("+lead") else ""
                caps = await captures(audio, vad, wake, cfg, float(config.removesuffix("+lead")))
                start = time.perf_counter()
                text = " ".join(_question(stt.transcribe_sync(c, lead=told)) for c in caps)
                ms = (time.perf_counter() - start) * 1000
                results[config].append((word_errors(ref, text), bool(caps), ms))
                line.append(f"{config}: {text!r}")
            if args.show or len({r[-1][0][0] for r in results.values()}) > 1:
                print(f"  {name} {clip}: ref {ref!r}\n    " + "\n    ".join(line), flush=True)
        woken = [i for i in range(len(items)) if all(results[c][i][1] for c in configs)]
        print(f"\n{name}: {len(items)} clips, {len(woken)} woken in every configuration (WER* over those)")
        for config, rows in results.items():
            counts = [c for c, _, _ in rows]
            missed = sum(not heard for _, heard, _ in rows)
            wrong = sum(c[0] > 0 for c in counts)
            heard = pooled_wer(counts[i] for i in woken) if woken else None
            print(f"  {config:9}  WER {pooled_wer(counts):6.1%} ({sum(e for e, _ in counts)}/"
                  f"{sum(n for _, n in counts)})  WER* {heard or 0:6.1%}  clips with an error {wrong:3d}  "
                  f"no capture {missed:2d}  decode p50 {p50(ms for _, _, ms in rows):5.0f} ms",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="0.25,1.0,1.0+lead", help="pre-roll s[+lead], comma-separated")
    parser.add_argument("--sets", default="fixtures,ear,human,generated")
    parser.add_argument("--show", action="store_true", help="every transcript, not only those that differ")
    args = parser.parse_args()
    made = clips(args.sets.split(","))  # (before the event loop: the corpus speaks with its own)
    asyncio.run(main(args, made))
