"""Hours of audio for the wake word's second opinion: a development half and a held-out half.

Made once, deterministically, into ``$IRIS_CACHE/wake-long/<recipe hash>/`` (16 kHz mono
WAVs and ``manifest.json``; never committed), from what the test bed's packages carry:

- **prose**: the fortune cookies of Debian's ``fortunes`` package (quotations, literature,
  riddles, platitudes; public domain or free), read in runs of about a minute;
- **names**: running speech with names that sound like "Jarvis" (Travis, Mavis, Marvin,
  "Hey Harvey, …"), written here;
- **wake**: "Hey Jarvis" said alone and before a command, every voice at several speeds
  (words per minute 120–200 for espeak-ng, the same stretches for flite and Piper);
- **noise**: the speech mixed with white, pink or brown noise at 10, 5 and 0 dB SNR.

Voices: IRIS's Piper voice (en_US joe), espeak-ng (accents and variants, female and male)
and flite (Debian's ``flite``: slt, rms, awb, kal16). The halves share no espeak-ng or
flite voice, no text and no name; Piper's voice speaks in both (it is IRIS's own, the one
the microphone hears most), different texts in each. The development half trains the
verifier (``tools/train_wake_verifier.py``); the held-out half is only measured
(``tools/bench/wake_verifier_bench.py``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iris_voice.audio import SAMPLE_RATE
from iris_voice.speech.model_files import cache_dir
from tools.bench.wake_corpus import _load16k, _peak, _tool_version, _write, cached_manifest

GENERATOR_VERSION = 2
SEED = 20261128
FORTUNES = Path("/usr/share/games/fortunes")
FORTUNE_FILES = (
    "fortunes", "literature", "wisdom", "people", "humorists", "education", "food", "work",
    "platitudes", "riddles", "science", "love", "men-women", "pets", "sports", "kids",
    "miscellaneous", "politics", "law", "medicine", "songs-poems", "magic", "paradoxum",
)  # fmt: skip
"""Files of prose (art, code, Star Trek and Debian jokes left out)."""
HALVES = ("dev", "held-out")
ESPEAK = {
    "dev": ("en-us+f1", "en-gb+m3", "en-gb-scotland+Annie", "en-029+david", "en-us+m1",
            "en-gb-x-gbclan+f3", "en-us+klatt", "en-gb+Steph"),
    "held-out": ("en-us-nyc+linda", "en-gb-x-rp+Andy", "en-us+f2", "en+f5", "en-us+m7",
                 "en-gb+Alicia", "en-us+belinda", "en-gb-x-gbcwmd+m2", "en-us+Michael", "en-gb+Zac"),
}  # fmt: skip
FLITE = {"dev": ("rms", "slt"), "held-out": ("awb", "kal16")}
WPM = (120, 140, 160, 180, 200)
"""Speaking rates of the wake phrases; prose is read at 150–190."""
BASE_WPM = 170
"""flite's and Piper's rate at stretch 1.0, roughly: stretch = BASE_WPM / wpm."""
PROSE_MINUTES = {"dev": 150, "held-out": 330}
"""Minutes of prose per half (the held-out half carries the ≥ 6 hours of the goal)."""
NAMES = {
    "dev": ("Travis", "Mavis", "Marvin", "Harvey", "Davis", "Jervis", "Elvis", "Charlie"),
    "held-out": ("Purvis", "Avis", "Garvey", "Mervyn", "Darvish", "Carlos", "Janice", "Marcus"),
}
NEAR_MISSES = (
    "Barvis",
    "Farvis",
    "Harvis",
    "Karvis",
    "Larvis",
    "Marvis",
    "Narvis",
    "Sarvis",
    "Tarvis",
    "Varvis",
    "Charvis",
    "Sharvis",
    "Jarvie",
    "Jarvik",
    "Jorvis",
    "Jarrod",
    "Jasper",
    "Chavez",
    "Harvest",
    "Service",
    "Nervous",
    "Curtis",
    "Francis",
    "Marvel",
)
"""The development half's hard negatives, made as openWakeWord makes its adversarial
phrases: "Jarvis" with its first consonant or its vowel changed, and words that rhyme.
None shares a first consonant and rhyme with a held-out name."""
NAME_TEMPLATES = {
    "dev": (
        "Hey {n}, are you coming to dinner tonight?", "I saw {n} at the market yesterday.",
        "Did {n} call you back about the car?", "{n} said the train would be late again.",
        "Ask {n} where he put the keys.", "Hey {n}, can you pass me the salt?",
        "We should invite {n} and his sister to the party.", "Tell {n} the meeting moved to Tuesday.",
        "Hey {n}, look at this.", "Oh hey {n}, good morning!",
    ),
    "held-out": (
        "Hey {n}, do you want some more coffee?", "Yesterday {n} fixed the fence in the garden.",
        "Is {n} still working at the hospital?", "I think {n} forgot his umbrella again.",
        "Hey {n}, the taxi is waiting outside.", "Have you met {n} from the third floor?",
        "My cousin {n} is getting married in June.", "Could {n} pick the children up from school?",
    ),
}  # fmt: skip
COMMANDS = {
    "dev": ("what time is it?", "set a timer for five minutes.", "what is twelve times nine?",
            "remind me to call mum in an hour.", "how long is left on the pasta timer?"),
    "held-out": ("what's the date today?", "set a tea timer for three minutes.",
                 "what is fifteen percent of eighty?", "cancel the pizza timer.",
                 "what time is it in Tokyo?"),
}  # fmt: skip
NOISES = ("white", "pink", "brown")
SNRS_DB = (10, 5, 0)


@dataclass(frozen=True)
class Clip:
    """One recording of the long corpus."""

    half: str
    """``dev`` or ``held-out``."""
    kind: str
    """``prose``, ``names``, ``noise`` (speech in noise) or ``wake``."""
    voice: str
    """``espeak <voice> <wpm>``, ``flite <voice> <wpm>`` or ``piper joe <wpm>``."""
    text: str
    file: str
    seconds: float
    wake_end_s: float = 0.0
    """For ``wake``: where the spoken "Hey Jarvis" ends (0 for the others)."""


def fortunes() -> list[str]:
    """The prose entries: one line each, 6–70 words of plain text, no wake word."""
    out = []
    for name in FORTUNE_FILES:
        path = FORTUNES / name
        if not path.is_file():
            raise SystemExit(
                f"{path} is missing: the long wake-word corpus needs Debian's fortunes (make audio-deps)"
            )
        for entry in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            text = " ".join(entry.split())
            if re.search(r"[^A-Za-z0-9 .,;:!?'\"()-]", text) or "jarvis" in text.lower():
                continue
            if 6 <= len(text.split()) <= 70:
                out.append(text)
    return out


def half_of(text: str) -> str:
    """A text's half, by its hash (stable whatever else changes): about 3 in 10 ``dev``."""
    return "dev" if hashlib.sha256(text.encode()).digest()[0] < 80 else "held-out"


def voices(half: str) -> list[str]:
    """The voices of a half: ``espeak <v>``, ``flite <v>`` and ``piper joe``."""
    return [f"espeak {v}" for v in ESPEAK[half]] + [f"flite {v}" for v in FLITE[half]] + ["piper joe"]


class Speaker:
    """Says a text in one of the corpus's voices at a rate, as 16 kHz int16."""

    def __init__(self, tmp: Path) -> None:
        self._tmp = tmp
        self._piper: dict[float, object] = {}

    def say(self, voice: str, wpm: int, text: str) -> np.ndarray:
        """The text spoken by ``voice`` at about ``wpm`` words per minute."""
        engine, name = voice.split(" ", 1)
        out = self._tmp / "say.wav"
        if engine == "espeak":
            subprocess.run(
                ["espeak-ng", "-v", name, "-s", str(wpm), "-w", str(out), text], check=True, timeout=120
            )
            return _load16k(out)
        stretch = round(BASE_WPM / wpm, 3)
        if engine == "flite":
            cmd = [
                "flite",
                "-voice",
                name,
                "--setf",
                f"duration_stretch={stretch}",
                "-t",
                text,
                "-o",
                str(out),
            ]
            subprocess.run(cmd, check=True, timeout=120)
            return _load16k(out)
        return self._say_piper(stretch, text)

    def _say_piper(self, stretch: float, text: str) -> np.ndarray:
        from iris_voice.audio.resample import resample
        from iris_voice.config import TtsConfig
        from iris_voice.speech.tts import PiperSynthesizer

        synth = self._piper.get(stretch)
        if synth is None:
            synth = self._piper[stretch] = PiperSynthesizer(TtsConfig(length_scale=stretch))

        async def run() -> np.ndarray:
            return np.concatenate([c async for c in synth.stream(text)])

        return resample(asyncio.run(run()), synth.sample_rate, SAMPLE_RATE)


def corpus_dir() -> Path:
    """Where the corpus of the current recipe lives."""
    packages = _tool_version(["dpkg-query", "-W", "-f=${Version}", "flite", "fortunes"])
    recipe = {
        "version": GENERATOR_VERSION, "seed": SEED, "files": FORTUNE_FILES, "espeak": ESPEAK, "flite": FLITE,
        "wpm": WPM, "prose": PROSE_MINUTES, "names": NAMES, "near": NEAR_MISSES, "templates": NAME_TEMPLATES,
        "commands": COMMANDS, "tools": [_tool_version(["espeak-ng", "--version"]), packages],
    }  # fmt: skip
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / "wake-long" / digest


def ensure_corpus(log=print) -> tuple[Path, list[Clip]]:
    """Make the corpus unless the current recipe's is cached (~20 min); its directory and clips."""
    target = corpus_dir()
    rows = cached_manifest(target, "the long wake-word corpus", lambda: _generate(target, log), log)
    return target, [Clip(**row) for row in rows]


def speech_end(audio: np.ndarray) -> int:
    """The sample after the last 10 ms whose level is within 26 dB of the loudest."""
    frames = len(audio) // 160
    if not frames:
        return len(audio)
    rms = np.sqrt(np.mean(audio[: frames * 160].astype(np.float64).reshape(frames, 160) ** 2, axis=1))
    loud = np.nonzero(rms > rms.max() * 0.05)[0]
    return int(loud[-1] + 1) * 160 if loud.size else len(audio)


def _generate(target: Path, log) -> list[Clip]:
    texts = fortunes()
    clips: list[Clip] = []
    with tempfile.TemporaryDirectory(prefix="iris-wake-long-") as tmp:
        speaker = Speaker(Path(tmp))
        for half in HALVES:
            rng = random.Random(f"{SEED} {half}")  # one half's recipe never moves the other's
            prose = [t for t in texts if half_of(t) == half]
            rng.shuffle(prose)
            log(f"  {half}: {len(prose)} prose entries, voices {', '.join(voices(half))}")
            clips += _prose(target, half, prose, speaker, rng, log)
            clips += _names(target, half, speaker, rng)
            clips += _wake(target, half, speaker, rng)
        clips += _in_noise(target, clips)
    return clips


def _runs(
    target: Path, half: str, kind: str, voice: str, texts, speaker: Speaker, rng, minutes: float
) -> list[Clip]:
    """Texts read one after another by ``voice`` into files of about a minute, until
    ``minutes`` are spoken or the texts run out (gaps of 0.3–0.9 s between them)."""
    clips, parts, said, total = [], [], [], 0.0
    texts = iter(texts)

    def flush() -> None:
        rel = f"{half}/{kind}/{voice.replace(' ', '_').replace('+', '_')}/{len(clips):03d}.wav"
        seconds = _write(target / rel, np.concatenate(parts))
        clips.append(Clip(half, kind, f"{voice} 150-190", " / ".join(said), rel, seconds))
        parts.clear(), said.clear()

    for text in texts:
        wpm = rng.choice((150, 160, 175, 190))
        audio = speaker.say(voice, wpm, text)
        parts += [audio, np.zeros(int(rng.uniform(0.3, 0.9) * SAMPLE_RATE), np.int16)]
        said.append(text)
        total += sum(len(p) for p in parts[-2:]) / SAMPLE_RATE
        if sum(len(p) for p in parts) >= 60 * SAMPLE_RATE:
            flush()
        if total >= minutes * 60:
            break
    if parts:
        flush()
    return clips


def _prose(target: Path, half: str, prose: list[str], speaker: Speaker, rng, log) -> list[Clip]:
    names = voices(half)
    per_voice = PROSE_MINUTES[half] / len(names)
    share = len(prose) // len(names)
    clips = []
    for k, voice in enumerate(names):
        clips += _runs(
            target, half, "prose", voice, prose[k * share : (k + 1) * share], speaker, rng, per_voice
        )
        log(f"    {voice}: {sum(c.seconds for c in clips) / 60:.0f} min of prose so far")
    return clips


def _names(target: Path, half: str, speaker: Speaker, rng) -> list[Clip]:
    names = NAMES[half] + (NEAR_MISSES if half == "dev" else ())
    sentences = [t.format(n=n) for t in NAME_TEMPLATES[half] for n in names]
    clips = []
    for k, voice in enumerate(voices(half)):
        chosen = sentences[k % 2 :: 2]  # each voice says half of them
        clips += _runs(target, half, "names", voice, chosen, speaker, rng, 1e9)
    return clips


def _wake(target: Path, half: str, speaker: Speaker, rng) -> list[Clip]:
    """ "Hey Jarvis" before each command, every voice at every rate. The development half
    says the phrase and the command apart (0.15–0.5 s between), so where the phrase ends
    is known; the held-out half says the whole request in one breath, as people do."""
    clips = []
    for voice in voices(half):
        for wpm in WPM:
            for n, command in enumerate(COMMANDS[half]):
                rel = f"{half}/wake/{voice.replace(' ', '_').replace('+', '_')}/{wpm}-{n}.wav"
                if half == "dev":
                    phrase = speaker.say(voice, wpm, "Hey Jarvis.")
                    end = speech_end(phrase)
                    rest = speaker.say(voice, wpm, command[0].upper() + command[1:])
                    gap = np.zeros(int(rng.uniform(0.15, 0.5) * SAMPLE_RATE), np.int16)
                    audio = np.concatenate([phrase[:end], gap, rest])
                    text, wake_end = f"Hey Jarvis. {command}", end / SAMPLE_RATE
                else:
                    text, wake_end = f"Hey Jarvis, {command}", 0.0
                    audio = speaker.say(voice, wpm, text)
                clips.append(
                    Clip(half, "wake", f"{voice} {wpm}", text, rel, _write(target / rel, audio), wake_end)
                )
    return clips


def _noise(colour: str, n: int, rng: np.random.Generator) -> np.ndarray:
    white = rng.standard_normal(n)
    if colour == "white":
        return white
    spectrum = np.fft.rfft(white)
    f = np.maximum(np.fft.rfftfreq(n), 1.0 / n)
    spectrum /= np.sqrt(f) if colour == "pink" else f
    return np.fft.irfft(spectrum, n)


def _in_noise(target: Path, clips: list[Clip]) -> list[Clip]:
    """Every fifth prose and names file, and every third wake clip, again in noise."""
    out = []
    for half in HALVES:
        gen = np.random.default_rng([SEED, HALVES.index(half)])
        mine = [c for c in clips if c.half == half]
        chosen = [c for c in mine if c.kind in ("prose", "names")][::5] + [
            c for c in mine if c.kind == "wake"
        ][1::3]
        out += [_mixed(target, clip, k, gen) for k, clip in enumerate(chosen)]
    return out


def _mixed(target: Path, clip: Clip, k: int, gen: np.random.Generator) -> Clip:
    voice = _load16k(target / clip.file).astype(np.float64)
    colour, snr = NOISES[k % 3], SNRS_DB[(k // 3) % 3]
    background = _noise(colour, len(voice), gen)
    loud = voice[np.abs(voice) > 300]
    v_rms = float(np.sqrt(np.mean(loud**2))) if loud.size else 1.0
    mixed = _peak(voice + background * v_rms / float(np.sqrt(np.mean(background**2))) / 10 ** (snr / 20), -3)
    rel = clip.file.replace(f"/{clip.kind}/", f"/{clip.kind}-noise/")
    kind = "wake" if clip.kind == "wake" else "noise"
    return Clip(
        clip.half,
        kind,
        f"{clip.voice} +{colour} {snr} dB",
        clip.text,
        rel,
        _write(target / rel, mixed),
        clip.wake_end_s,
    )


if __name__ == "__main__":
    directory, made = ensure_corpus()
    for half in HALVES:
        for kind in ("prose", "names", "noise", "wake"):
            part = [c for c in made if c.half == half and c.kind == kind]
            print(f"{half:9s} {kind:6s} {len(part):5d} clips {sum(c.seconds for c in part) / 60:7.1f} min")
    print(directory)
