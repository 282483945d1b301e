"""Generated short commands for the speech-to-text benchmarks (``tools/bench/stt_window.py``).

200 short commands and questions of the kinds IRIS is asked (timers, reminders, the time
somewhere, sums, the date, small talk), drawn from templates with a fixed seed, each spoken
once by one of several voices (``wake=True``: "Hey Jarvis, " first, as the wake-word
capture benchmark needs them, ``tools/bench/wake_capture.py``):

- IRIS's packaged Piper voice (en_US joe, voice noise seeded) at length scales 1.0, 1.25
  and 0.85;
- six espeak-ng voices (accents, variants) at 140-190 words per minute;

and every third one mixed with seeded noise (white or brown) at 20, 10 or 5 dB SNR. Each
clip has 0.3 s of silence before and after the words, as a pause's decode sees them.

Made once into ``$IRIS_CACHE/stt-commands/<recipe hash>/`` (``wake-commands/`` with the wake
phrase; 16 kHz mono WAVs and ``manifest.json``; never committed) and reused while the recipe
holds.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import subprocess
import tempfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from iris_voice.audio import SAMPLE_RATE
from iris_voice.audio.resample import resample
from iris_voice.speech.model_files import cache_dir
from tools.bench.wake_corpus import _load16k, _tool_version, _write, cached_manifest

GENERATOR_VERSION = 1  # bump when the way the audio is made changes
SEED = 20261127
COUNT = 200
EDGE_S = 0.3
"""Silence before and after the words."""
WAKE_PREFIX = "Hey Jarvis, "
"""Said first in the wake-word variant of the corpus."""
PIPER_SPEEDS = (1.0, 1.25, 0.85)
ESPEAK_VOICES = (
    ("en-us+f3", 160),
    ("en-gb+m3", 175),
    ("en-gb-scotland+Annie", 150),
    ("en-029+david", 170),
    ("en-us-nyc+linda", 190),
    ("en-gb-x-rp+Andy", 140),
)
NOISE_SNRS_DB = (20, 10, 5)

CITIES = ("Tokyo", "Paris", "London", "Sydney", "New York", "Berlin", "Cairo", "Chicago", "Madrid", "Toronto")
FOODS = ("pasta", "egg", "rice", "tea", "pizza", "bread", "laundry", "oven")
TASKS = ("call my mother", "water the plants", "take the bins out", "check the oven",
         "feed the cat", "send the invoice", "stretch", "buy milk")  # fmt: skip
COUNTRIES = ("France", "Japan", "Canada", "Italy", "Kenya", "Brazil", "Norway", "Egypt")
TEMPLATES = (
    "Set a timer for {n} minutes.",
    "Set a {food} timer for {n} minutes.",
    "What time is it in {city}?",
    "What's {a} times {b}?",
    "What is {a} plus {b}?",
    "Remind me to {task} in {n} minutes.",
    "Cancel the {food} timer.",
    "How long is left on the {food} timer?",
    "What's the date today?",
    "What day is it?",
    "What's the capital of {country}?",
    "Tell me a joke.",
    "How are you today?",
    "Turn off the kitchen lights.",
    "What time is it?",
    "Stop the timer.",
)
NUMBERS = ("two", "three", "five", "eight", "ten", "twelve", "fifteen", "twenty", "forty five")


@dataclass(frozen=True)
class Command:
    """One spoken command of the corpus."""

    text: str
    voice: str
    """``piper joe x1.25``, ``espeak en-us+f3 160``, …"""
    noise: str
    """``""`` (clean) or ``white 10 dB`` / ``brown 5 dB``."""
    file: str
    """The WAV, relative to the corpus directory."""
    seconds: float


def texts(prefix: str = "") -> list[str]:
    """The ``COUNT`` commands, drawn from the templates with the fixed seed, after ``prefix``."""
    rng = random.Random(SEED)
    out = []
    for i in range(COUNT):
        template = TEMPLATES[i % len(TEMPLATES)] if i < len(TEMPLATES) else rng.choice(TEMPLATES)
        out.append(prefix + template.format(
            n=rng.choice(NUMBERS), food=rng.choice(FOODS), city=rng.choice(CITIES),
            a=rng.randint(2, 99), b=rng.randint(2, 99), task=rng.choice(TASKS),
            country=rng.choice(COUNTRIES)))  # fmt: skip
    return out


def corpus_dir(wake: bool = False) -> Path:
    """Where the corpus of the current recipe lives (``wake``: the one with the wake phrase)."""
    recipe = {
        "version": GENERATOR_VERSION,
        "seed": SEED,
        "texts": texts(WAKE_PREFIX if wake else ""),
        "piper": [version("piper-tts"), PIPER_SPEEDS],
        "espeak": [_tool_version(["espeak-ng", "--version"]), ESPEAK_VOICES],
        "noise": [NOISE_SNRS_DB, EDGE_S],
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / ("wake-commands" if wake else "stt-commands") / digest


def ensure_commands(log=print, wake: bool = False) -> tuple[Path, list[Command]]:
    """Make the corpus unless the current recipe's is cached; its directory and commands
    (``wake``: each command after "Hey Jarvis, ")."""
    target = corpus_dir(wake)
    what = f"{COUNT} spoken commands" + (" with the wake phrase" if wake else "")
    rows = cached_manifest(target, what, lambda: _generate(target, WAKE_PREFIX if wake else ""), log)
    return target, [Command(**row) for row in rows]


def _generate(target: Path, prefix: str) -> list[Command]:
    rng = np.random.default_rng(SEED)
    spoken = _speak(texts(prefix))
    edge = np.zeros(round(EDGE_S * SAMPLE_RATE), np.float64)
    commands = []
    for i, (text, voice, audio) in enumerate(spoken):
        signal = np.concatenate([edge, audio.astype(np.float64), edge])
        noise = ""
        if i % 3 == 2:
            snr = NOISE_SNRS_DB[(i // 3) % len(NOISE_SNRS_DB)]
            kind = "white" if (i // 9) % 2 == 0 else "brown"
            signal = _mix(signal, rng, kind, snr)
            noise = f"{kind} {snr} dB"
        rel = f"{i:03d}.wav"
        clipped = np.clip(signal, -32768, 32767).astype(np.int16)
        commands.append(Command(text, voice, noise, rel, _write(target / rel, clipped)))
    return commands


def _speak(all_texts: list[str]) -> list[tuple[str, str, np.ndarray]]:
    """(text, voice, int16-range samples at 16 kHz) for every text: a third by Piper."""
    out: list[tuple[str, str, np.ndarray] | None] = [None] * len(all_texts)
    piper = [(i, t) for i, t in enumerate(all_texts) if i % 3 == 0]
    for k, speed in enumerate(PIPER_SPEEDS):
        chosen = [(i, t) for j, (i, t) in enumerate(piper) if j % len(PIPER_SPEEDS) == k]
        for i, text, audio in _piper(chosen, speed):
            out[i] = (text, f"piper joe x{speed}", audio)
    with tempfile.TemporaryDirectory(prefix="iris-commands-") as tmp:
        for i, text in enumerate(all_texts):
            if out[i] is not None:
                continue
            voice, wpm = ESPEAK_VOICES[i % len(ESPEAK_VOICES)]
            wav = Path(tmp) / "e.wav"
            cmd = ["espeak-ng", "-v", voice, "-s", str(wpm), "-w", str(wav), text]
            subprocess.run(cmd, check=True, timeout=60)
            out[i] = (text, f"espeak {voice} {wpm}", _trim(_load16k(wav).astype(np.float64)))
    return [x for x in out if x is not None]


def _piper(chosen: list[tuple[int, str]], speed: float) -> list[tuple[int, str, np.ndarray]]:
    import onnxruntime

    from iris_voice.config import TtsConfig
    from iris_voice.speech.tts import PiperSynthesizer

    onnxruntime.set_seed(SEED)  # before the voice's session is created
    synth = PiperSynthesizer(TtsConfig(length_scale=speed))

    async def speak(text: str) -> np.ndarray:
        audio = np.concatenate([c async for c in synth.stream(text)])
        return resample(audio, synth.sample_rate, SAMPLE_RATE).astype(np.float64)

    async def speak_all() -> list[tuple[int, str, np.ndarray]]:
        return [(i, text, _trim(await speak(text))) for i, text in chosen]

    return asyncio.run(speak_all())


def _trim(audio: np.ndarray, level: float = 100.0) -> np.ndarray:
    """The samples from the first to the last above ``level`` (the voices' own edges vary)."""
    loud = np.flatnonzero(np.abs(audio) > level)
    return audio[loud[0] : loud[-1] + 1] if loud.size else audio


def _mix(signal: np.ndarray, rng: np.random.Generator, kind: str, snr_db: float) -> np.ndarray:
    """``signal`` plus seeded noise at ``snr_db`` below the speech's RMS."""
    noise = rng.standard_normal(signal.size)
    if kind == "brown":
        noise = np.cumsum(noise)
        noise -= np.convolve(noise, np.ones(401) / 401, mode="same")  # no drift, still low-heavy
    loud = signal[np.abs(signal) > 300]
    s_rms = float(np.sqrt(np.mean(loud**2))) if loud.size else 1.0
    n_rms = float(np.sqrt(np.mean(noise**2))) or 1.0
    return signal + noise * (s_rms / n_rms) / 10 ** (snr_db / 20)
