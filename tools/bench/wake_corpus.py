"""Audio without the wake word, for the false-accept half of ``tools/bench/rooms_wake.py``.

Made once, deterministically, into ``$IRIS_CACHE/rooms-wake/<recipe hash>/`` (16 kHz mono
WAVs and ``manifest.json``; never committed) and reused while the recipe is unchanged:

- **speech (Piper)**: every sentence of ``wake_sentences.txt`` in IRIS's packaged Piper
  voice (en_US joe, seeded as the spoken fixtures are), half of them again slower
  (length scale 1.25) and half faster (0.9);
- **speech (espeak-ng)**: every sentence in two of six espeak-ng voices (accents, variants
  and rates differ);
- **noise**: white, pink and brown noise from sox at three peak levels;
- **music-like**: sox chords with tremolo, plucked and synthesized melodies, melodies
  over chords;
- **speech in noise**: runs of the synthesized sentences mixed with sox noise or music at
  10, 5 and 0 dB signal-to-noise ratio.

sox runs with ``-R`` (repeatable noise); espeak-ng is deterministic; Piper's voice noise is
seeded. The human recordings are read by the benchmark itself (they are not copied here).
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import random
import subprocess
import tempfile
import wave
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from iris_voice.audio import SAMPLE_RATE
from iris_voice.audio.files import read_wav
from iris_voice.audio.resample import resample
from iris_voice.speech.model_files import cache_dir

GENERATOR_VERSION = 2  # bump when the way the audio is made changes
SEED = 20261125
"""Seeds Piper's voice noise (ONNX Runtime) and the melodies' notes."""
SENTENCES_FILE = Path(__file__).with_name("wake_sentences.txt")
PIPER_SPEEDS = (1.0, 1.25, 0.9)
"""Length scales: every sentence at 1.0, alternate halves at the others."""
ESPEAK_VOICES = (
    ("en-us+f3", 160),
    ("en-gb+m3", 175),
    ("en-gb-scotland+Annie", 150),
    ("en-029+david", 170),
    ("en-us-nyc+linda", 165),
    ("en-gb-x-rp+Andy", 185),
)
"""(voice+variant, words per minute); each sentence is spoken by two of them."""
NOISES = ("whitenoise", "pinknoise", "brownnoise")
NOISE_PEAKS_DB = (-40, -25, -10)
SIGNAL_S = 20.0
"""Length of each noise and music signal, and of each speech-in-noise run."""
SNRS_DB = (10, 5, 0)
NOTES = (261.63, 293.66, 329.63, 392.0, 440.0, 523.25, 587.33, 659.25)  # C major pentatonic + C5…E5
CHORDS = (
    (261.63, 329.63, 392.0),  # C
    (220.0, 261.63, 329.63),  # Am
    (174.61, 220.0, 261.63),  # F
    (196.0, 246.94, 293.66),  # G
)

CHORD_SIGNALS = (
    ("sine", [0, 1, 2, 3], (5, 40)),
    ("triangle", [0, 3, 1, 2], (3, 60)),
    ("square", [2, 3, 0, 0], (7, 30)),
    ("sawtooth", [1, 2, 3, 0], (4, 50)),
)
"""(waveform, chord order, tremolo speed Hz and depth %) of the four chord signals."""


@dataclass(frozen=True)
class Item:
    """One recording of the corpus."""

    kind: str
    """Which kind of audio (``speech (Piper)``, ``noise``, …): figures are per kind."""
    name: str
    """A short label: the voice, the signal."""
    text: str
    """The words spoken ("" for noise and music)."""
    file: str
    """The WAV, relative to the corpus directory."""
    seconds: float


def sentences() -> list[str]:
    """The everyday sentences (none may contain the wake word)."""
    lines = [s.strip() for s in SENTENCES_FILE.read_text(encoding="utf-8").splitlines()]
    out = [s for s in lines if s and not s.startswith("#")]
    if any("jarvis" in s.lower() for s in out):
        raise ValueError(f"{SENTENCES_FILE}: a sentence contains the wake word")
    return out


def corpus_dir() -> Path:
    """Where the corpus of the current recipe lives."""
    return cache_dir() / "rooms-wake" / _recipe_hash()


def _recipe_hash() -> str:
    recipe = {
        "version": GENERATOR_VERSION,
        "seed": SEED,
        "sentences": sentences(),
        "piper": [version("piper-tts"), PIPER_SPEEDS],
        "espeak": [_tool_version(["espeak-ng", "--version"]), ESPEAK_VOICES],
        "sox": [_tool_version(["sox", "--version"]), NOISES, NOISE_PEAKS_DB, SIGNAL_S, SNRS_DB],
        "music": [CHORD_SIGNALS, CHORDS, NOTES],
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def _tool_version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise SystemExit(f"{cmd[0]} is needed for the wake-word corpus (make audio-deps): {exc}") from None


def ensure_corpus(log=print) -> tuple[Path, list[Item]]:
    """Make the corpus unless the current recipe's is cached; its directory and items."""
    target = corpus_dir()
    rows = cached_manifest(target, "the wake-word corpus", lambda: _generate(target, log), log)
    return target, [Item(**row) for row in rows]


def cached_manifest(target: Path, what: str, make, log=print) -> list[dict]:
    """The rows of ``target/manifest.json``, made once by ``make()`` (a list of dataclasses
    whose files it writes into ``target``) unless a finished manifest is already there."""
    target.mkdir(parents=True, exist_ok=True)
    manifest = target / "manifest.json"
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once make it once
        if not manifest.is_file():
            log(f"making {what} in {target} (once; reused while the recipe holds)")
            manifest.write_text(json.dumps([asdict(i) for i in make()], indent=1) + "\n")
    return json.loads(manifest.read_text())


def _write(path: Path, audio: np.ndarray) -> float:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(audio.astype("<i2").tobytes())
    return round(len(audio) / SAMPLE_RATE, 3)


def _seconds(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        return round(w.getnframes() / w.getframerate(), 3)


def _load16k(path: Path) -> np.ndarray:
    samples, rate = read_wav(path)
    return resample(samples, rate, SAMPLE_RATE)


def _generate(target: Path, log) -> list[Item]:
    texts = sentences()
    items = _piper(target, texts, log)
    items += _espeak(target, texts, log)
    items += _noise(target)
    items += _music(target)
    items += _speech_in_noise(target, items)
    return items


def _piper(target: Path, texts: list[str], log) -> list[Item]:
    import onnxruntime

    from iris_voice.config import TtsConfig
    from iris_voice.speech.tts import PiperSynthesizer

    onnxruntime.set_seed(SEED)  # before the voice's session is created
    items = []

    async def speak_all(synth: PiperSynthesizer, chosen: list[tuple[int, str]], speed: float) -> None:
        for i, text in chosen:
            audio = np.concatenate([c async for c in synth.stream(text)])
            audio = resample(audio, synth.sample_rate, SAMPLE_RATE)
            rel = f"piper/{speed}/{i:03d}.wav"
            items.append(Item("speech (Piper)", f"joe x{speed}", text, rel, _write(target / rel, audio)))

    for speed in PIPER_SPEEDS:
        synth = PiperSynthesizer(TtsConfig(length_scale=speed))
        chosen = [(i, t) for i, t in enumerate(texts) if speed == 1.0 or i % 2 == (speed > 1.0)]
        log(f"  Piper {synth.name} at length scale {speed}: {len(chosen)} sentences")
        asyncio.run(speak_all(synth, chosen, speed))
    return items


def _espeak(target: Path, texts: list[str], log) -> list[Item]:
    log(f"  espeak-ng: {len(texts)} sentences in two of {len(ESPEAK_VOICES)} voices each")
    items = []
    with tempfile.TemporaryDirectory(prefix="iris-wake-") as tmp:
        for i, text in enumerate(texts):
            for k in (i % len(ESPEAK_VOICES), (i + 3) % len(ESPEAK_VOICES)):
                voice, wpm = ESPEAK_VOICES[k]
                out = Path(tmp) / "e.wav"
                cmd = ["espeak-ng", "-v", voice, "-s", str(wpm), "-w", str(out), text]
                subprocess.run(cmd, check=True, timeout=60)
                rel = f"espeak/{k}/{i:03d}.wav"
                seconds = _write(target / rel, _load16k(out))
                items.append(Item("speech (espeak-ng)", voice, text, rel, seconds))
    return items


def _sox(out: Path, *effects: str, channels: int = 1, rate: int = SAMPLE_RATE) -> None:
    """``sox`` from nothing (synth effects) to a 16 kHz mono 16-bit WAV: repeatable noise
    (``-R``), no dither (``-D``: full-scale tones would clip with it). Synthesized at 16 kHz
    where sox allows it: resampled full-scale square waves would overshoot and clip."""
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["sox", "-R", "-D", "-r", str(rate), "-c", str(channels), "-n", "-r", str(SAMPLE_RATE), "-b", "16"]
    cmd += [str(out), *effects]
    if channels > 1:
        cmd += ["remix", "-"]
    subprocess.run(cmd, check=True, timeout=120)


def _noise(target: Path) -> list[Item]:
    items = []
    for colour in NOISES:
        for peak in NOISE_PEAKS_DB:
            rel = f"noise/{colour}{peak}.wav"
            _sox(target / rel, "synth", str(SIGNAL_S), colour, "gain", "-n", str(peak))
            name = f"{colour.removesuffix('noise')} noise, peak {peak} dBFS"
            items.append(Item("noise", name, "", rel, _seconds(target / rel)))
    return items


def _chords(out: Path, wave_: str, order: list[int], tremolo: tuple[float, float]) -> None:
    """Four chords of ``SIGNAL_S / 4`` each, with tremolo (speed Hz, depth %)."""
    parts = []
    for n, c in enumerate(order):
        part = out.with_name(f"{out.stem}-{n}.wav")
        tones = [a for f in CHORDS[c] for a in (wave_, f"{f:.2f}")]
        _sox(part, "synth", str(SIGNAL_S / 4), *tones, "gain", "-10", channels=3)  # three summed: headroom
        parts.append(part)
    effects = ["tremolo", *map(str, tremolo), "gain", "-n", "-12"]
    subprocess.run(["sox", "-R", "-D", *map(str, parts), str(out), *effects], check=True, timeout=120)
    for part in parts:
        part.unlink()


def _melody(out: Path, wave_: str, rng: random.Random) -> None:
    """Notes of a random walk over ``NOTES`` (seeded), 0.2–0.6 s each, to ``SIGNAL_S``."""
    parts, total, i = [], 0.0, rng.randrange(len(NOTES))
    while total < SIGNAL_S:
        length = rng.choice((0.2, 0.3, 0.4, 0.6))
        i = min(len(NOTES) - 1, max(0, i + rng.choice((-2, -1, 1, 2))))
        part = out.with_name(f"{out.stem}-{len(parts)}.wav")
        note = ["synth", str(length), wave_, f"{NOTES[i]:.2f}", "fade", "0.01", str(length), "0.05"]
        _sox(
            part, *note, "gain", "-3", rate=44100 if wave_ == "pluck" else SAMPLE_RATE
        )  # sox plucks at 44.1+ kHz
        parts.append(part)
        total += length
    effects = ["trim", "0", str(SIGNAL_S), "gain", "-n", "-10"]
    subprocess.run(["sox", "-R", "-D", *map(str, parts), str(out), *effects], check=True, timeout=120)
    for part in parts:
        part.unlink()


def _music(target: Path) -> list[Item]:
    rng = random.Random(SEED)
    items = []
    for n, (wave_, order, trem) in enumerate(CHORD_SIGNALS):
        rel = f"music/chords{n}.wav"
        _chords(target / rel, wave_, order, trem)
        name = f"{wave_} chords, tremolo {trem[0]} Hz"
        items.append(Item("music-like", name, "", rel, _seconds(target / rel)))
    for n, wave_ in enumerate(("pluck", "sine", "triangle", "pluck")):
        rel = f"music/melody{n}.wav"
        _melody(target / rel, wave_, rng)
        items.append(Item("music-like", f"{wave_} melody {n}", "", rel, _seconds(target / rel)))
    for n in range(4):  # each melody over the chords of the same number
        rel = f"music/both{n}.wav"
        chords = _load16k(target / f"music/chords{n}.wav").astype(np.int32)
        melody = _load16k(target / f"music/melody{n}.wav").astype(np.int32)
        mixed = _peak(chords[: len(melody)] // 2 + melody // 2, -10)
        items.append(Item("music-like", f"melody {n} over chords {n}", "", rel, _write(target / rel, mixed)))
    return items


def _peak(audio: np.ndarray, db: float) -> np.ndarray:
    x = audio.astype(np.float64)
    x *= 32767 * 10 ** (db / 20) / max(1.0, float(np.abs(x).max()))
    return x.astype(np.int16)


def _speech_in_noise(target: Path, spoken: list[Item]) -> list[Item]:
    """Runs of ``SIGNAL_S`` of the synthesized sentences (0.4 s apart), each mixed with a
    noise or music signal at an SNR of ``SNRS_DB`` (speech RMS over its voiced part)."""
    backgrounds = [f"noise/{c}-25.wav" for c in NOISES] + ["music/both0.wav", "music/melody1.wav"]
    speech = [i for i in spoken if i.kind.startswith("speech")]
    items, cursor, gap = [], 0, np.zeros(round(0.4 * SAMPLE_RATE), np.int16)
    for n in range(12):
        parts, words, total = [], [], 0
        while total < SIGNAL_S * SAMPLE_RATE:
            item = speech[(cursor * 7) % len(speech)]  # a stride through voices and sentences
            cursor += 1
            audio = _load16k(target / item.file)
            parts += [audio, gap]
            words.append(item.text)
            total += len(audio) + len(gap)
        voice = np.concatenate(parts)[: round(SIGNAL_S * SAMPLE_RATE)].astype(np.float64)
        background = _load16k(target / backgrounds[n % len(backgrounds)]).astype(np.float64)
        background = np.resize(background, len(voice))
        snr = SNRS_DB[n % len(SNRS_DB)]
        loud = voice[np.abs(voice) > 300]
        v_rms = float(np.sqrt(np.mean(loud**2))) if loud.size else 1.0
        b_rms = float(np.sqrt(np.mean(background**2))) or 1.0
        mixed = _peak(voice + background * (v_rms / b_rms) / 10 ** (snr / 20), -3)
        rel = f"mixed/{n:02d}.wav"
        name = f"speech over {Path(backgrounds[n % len(backgrounds)]).stem}, SNR {snr} dB"
        items.append(Item("speech in noise", name, " / ".join(words), rel, _write(target / rel, mixed)))
    return items
