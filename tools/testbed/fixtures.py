"""Spoken test questions as 16 kHz mono WAVs, synthesized with Piper, cached outside the repo.

Each fixture is Piper's packaged en_US joe voice (through IRIS's own
``PiperSynthesizer``), resampled 22050 → 16000 Hz with soxr (VHQ), with
``LEAD_S`` of digital silence before the speech and ``TAIL_S`` after it, so VAD
endpointing is exercised. ``manifest.json`` records, per fixture, the text and the
sample indices where speech starts and ends (Piper's own near-silent edges trimmed),
so latency code knows the true end of speech. When espeak-ng is installed, a few
fixtures are also made in its voice (a second speaker for wake-word robustness).

API for tests and benchmarks::

    from tools.testbed.fixtures import ensure_fixtures, fixture, load_manifest, read_wav
    ensure_fixtures()                    # cached: seconds only the first time
    path = fixture("jarvis_time_tokyo")  # Path of the WAV
    entry = load_manifest()["jarvis_time_tokyo"]  # {"text", "speech_end", ...}
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path
from typing import Any

import numpy as np

from iris_voice.speech.model_files import cache_dir

RATE = 16000
"""Sample rate of every fixture."""
LEAD_S = 0.5
"""Silence before the speech."""
TAIL_S = 1.0
"""Silence after the speech."""
PAUSE_S = 0.5
"""The silence inside the ``pause`` fixture."""
GENERATOR_VERSION = 2  # bump when the way fixtures are made changes
SEED = 20261122
"""Seed of ONNX Runtime's random ops: Piper's voice noise makes every synthesis differ,
so the fixtures are seeded to come out the same on every machine of this kind."""

WAKE = "Hey Jarvis, "
QUESTIONS = {
    "time_tokyo": "What time is it in Tokyo?",
    "multiply": "What is twenty three times forty seven?",
    "timer": "Set a timer for three seconds.",
    "story": "Tell me a long story about the sea.",
}
"""Each question is made with (``jarvis_<name>``) and without (``<name>``) the wake word."""
EXTRA = {"jarvis": "Hey Jarvis.", "stop": "Stop."}
BENCH = {
    # everyday commands: the fast path's job (groups time, date, timer, calc, reminder)
    "time_tokyo": ("time", "What time is it in Tokyo?"),
    "time_new_york": ("time", "What's the time in New York?"),
    "time_berlin": ("time", "Tell me the time in Berlin."),
    "time_london": ("time", "What time is it in London?"),
    "time_here": ("time", "What time is it?"),
    "date_today": ("date", "What's the date today?"),
    "day_today": ("date", "What day is it?"),
    # timers in the order a cook would say them: each needs the state the one before left
    # (tools/bench/timer_state.py recreates that state when a question runs on its own)
    "pasta_timer": ("timer", "Set a pasta timer for eight minutes."),
    "ten_minute_timer": ("timer", "Set a timer for ten minutes."),
    "add_pasta": ("timer", "Add two minutes to the pasta timer."),
    "pause_pasta": ("timer", "Pause the pasta timer."),
    "resume_pasta": ("timer", "Resume the pasta timer."),
    "left_pasta": ("timer", "How much time is left on the pasta timer?"),
    "list_timers": ("timer", "Which timers are running?"),
    "less_pasta": ("timer", "Take one minute off the pasta timer."),
    "cancel_pasta": ("timer", "Cancel the pasta timer."),
    "cancel_all": ("timer", "Cancel all timers."),
    "multiply": ("calc", "What is twenty three times forty seven?"),
    "percent": ("calc", "What is fifteen percent of eighty?"),
    "sqrt": ("calc", "What is the square root of one hundred forty four?"),
    "divide": ("calc", "What's one hundred divided by eight?"),
    "plus": ("calc", "What is seventeen plus twenty five?"),
    "remind_mom": ("reminder", "Remind me to call mom in ten minutes."),
    # questions only the language model can answer
    "octopus": ("chat", "Give me one fun fact about octopuses."),
    "france": ("chat", "What is the capital of France?"),
    "hello": ("chat", "Say hello to my friend Sam."),
    "romeo": ("chat", "Who wrote Romeo and Juliet?"),
    "planet": ("chat", "What is the largest planet in our solar system?"),
    "spider": ("chat", "How many legs does a spider have?"),
    "boiling": ("chat", "At what temperature in Celsius does water boil?"),
    "gracias": ("chat", "How do you say thank you in Spanish?"),
    "mix_colors": ("chat", "What color do you get when you mix blue and yellow?"),
    "gold": ("chat", "What is the chemical symbol for gold?"),
    "mona_lisa": ("chat", "Who painted the Mona Lisa?"),
}
"""The latency benchmark's questions (``bench_<name>``, with the wake word): group and text.
The group ``chat`` needs the language model; every other group is an everyday command."""
PAUSE_PARTS = ("Set a timer", "for three seconds.")
"""The ``pause`` fixture: these two syntheses with ``PAUSE_S`` of silence between."""
ENDPOINT = {
    f"endpoint_{kind}_{round(pause * 1000)}": (parts, pause)
    for kind, parts in {
        "timer": PAUSE_PARTS,
        "multiply": ("What is twenty three", "times forty seven?"),
        "remind": ("Remind me to call mom", "in ten minutes."),
    }.items()
    for pause in (0.3, 0.5, 0.7)
}
"""Mid-sentence pauses for the endpointing benchmark (tools/bench/endpoint.py): name →
(the two pieces, the silence between them in seconds)."""
HESITATIONS = {
    f"hesitate_{kind}_{round(pause * 1000)}": (text, pause)
    for kind, text in {
        "timer": "Set a timer for, ten minutes.",
        "multiply": "What is twenty three times, forty seven?",
        "remind": "Remind me to call, my mother in an hour.",
        "left": "How much time is left on, the pasta timer?",
    }.items()
    for pause in (0.5, 0.7)
}
"""A speaker who hesitates inside a sentence, with the voice of one who goes on: each text
is synthesized whole (Piper's comma keeps the intonation open), then the comma's silence
is stretched to the pause. Unlike ``ENDPOINT`` (two sentences joined, each ending as if
done), the words before the pause sound and read unfinished: what an end-of-turn model
must not cut."""
ESPEAK = {
    "espeak_jarvis_time_tokyo": WAKE + "what time is it in Tokyo?",
    "espeak_time_tokyo": QUESTIONS["time_tokyo"],
}
"""Made only when the ``espeak-ng`` program is installed."""

# Piper's output starts and ends with a few near-silent milliseconds; below this level
# (about -50 dBFS) a sample is not speech, so the recorded end of speech is the real one.
_EDGE_LEVEL = 0.003


def fixtures_dir() -> Path:
    """Where this recipe's fixtures live: ``$IRIS_CACHE/fixtures/<recipe hash>``.

    One directory per recipe, so checkouts with different question lists (branches,
    worktrees sharing one cache) never overwrite each other's WAVs mid-run."""
    return cache_dir() / "fixtures" / _spec_hash(shutil.which("espeak-ng") is not None)


def _with_wake(text: str) -> str:
    return WAKE + text[0].lower() + text[1:]


def specs() -> dict[str, list[str]]:
    """Fixture name → the text pieces spoken (one piece, or two around a pause)."""
    out: dict[str, list[str]] = {}
    for name, text in QUESTIONS.items():
        out[f"jarvis_{name}"] = [_with_wake(text)]
        out[name] = [text]
    for name, text in EXTRA.items():
        out[name] = [text]
    out["pause"] = list(PAUSE_PARTS)
    for name, (_group, text) in BENCH.items():
        out[f"bench_{name}"] = [_with_wake(text)]
    for name, (parts, _pause) in ENDPOINT.items():
        out[name] = list(parts)
    return out


def pause_of(name: str) -> float:
    """The silence between the pieces of fixture ``name``."""
    return ENDPOINT[name][1] if name in ENDPOINT else PAUSE_S


def _spec_hash(espeak: bool) -> str:
    from importlib.metadata import version

    recipe = {
        "v": GENERATOR_VERSION,
        "seed": SEED,
        "specs": specs(),
        "espeak": ESPEAK if espeak else {},
        "lead": LEAD_S,
        "tail": TAIL_S,
        "pause": PAUSE_S,
        "pauses": {name: pause for name, (_parts, pause) in ENDPOINT.items()},
        "hesitations": HESITATIONS,
        "piper": version("piper-tts"),
        "soxr": version("soxr"),
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def _trim(audio: np.ndarray) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > _EDGE_LEVEL)
    return audio[loud[0] : loud[-1] + 1] if loud.size else audio[:0]


def _resample(audio: np.ndarray, rate: int) -> np.ndarray:
    import soxr

    return soxr.resample(audio.astype(np.float32), rate, RATE, quality="VHQ").astype(np.float32)


def _piper_audio(synth: Any, texts: list[str]) -> list[np.ndarray]:
    async def speak(text: str) -> np.ndarray:
        chunks = [c async for c in synth.stream(text)]
        return np.concatenate(chunks).astype(np.float32) / 32768.0

    async def all_texts() -> list[np.ndarray]:
        return [_resample(_trim(await speak(t)), synth.sample_rate) for t in texts]

    return asyncio.run(all_texts())


def _stretch_pause(audio: np.ndarray, pause_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The speech before and after its longest inner silence (10 ms frames below the edge
    level), for a pause of ``pause_s`` to be put between them."""
    frame = RATE // 100
    quiet = [float(np.sqrt(np.mean(audio[i : i + frame] ** 2))) < _EDGE_LEVEL for i in
             range(0, len(audio) - frame, frame)]  # fmt: skip
    best, start = (0, 0), None
    for i, q in enumerate([*quiet, False]):
        if q and start is None:
            start = i
        elif not q and start is not None:
            if start > 5 and i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    if best == (0, 0):
        raise ValueError("no pause found to stretch")
    return audio[: best[0] * frame], audio[best[1] * frame :]


def _espeak_audio(text: str) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "e.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(out), text], check=True, timeout=60)
        audio, rate = _read(out)
    return _resample(_trim(audio), rate)


def _read(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError(f"{path}: expected 16-bit mono")
        data = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
        return data.astype(np.float32) / 32768.0, w.getframerate()


def _write(path: Path, audio: np.ndarray) -> None:
    pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def _compose(pieces: list[np.ndarray], pause_s: float = PAUSE_S) -> tuple[np.ndarray, list[list[int]]]:
    """Silence, the pieces with ``pause_s`` between them, silence; and each piece's [start, end)."""
    lead, gap, tail = (np.zeros(round(s * RATE), np.float32) for s in (LEAD_S, pause_s, TAIL_S))
    parts, spans, pos = [lead], [], len(lead)
    for i, piece in enumerate(pieces):
        if i:
            parts.append(gap)
            pos += len(gap)
        parts.append(piece)
        spans.append([pos, pos + len(piece)])
        pos += len(piece)
    parts.append(tail)
    return np.concatenate(parts), spans


def _entry(name: str, text_parts: list[str], audio: np.ndarray, spans: list[list[int]], voice: str) -> dict:
    text = " ".join(text_parts)
    return {
        "file": f"{name}.wav",
        "text": text,
        "voice": voice,
        "sample_rate": RATE,
        "samples": int(len(audio)),
        "speech_start": spans[0][0],
        "speech_end": spans[-1][1],
        "speech_spans": spans,
        "wake_word": text.lower().startswith("hey jarvis"),
    }


def _generate(target: Path, espeak: bool) -> dict[str, Any]:
    import onnxruntime

    from iris_voice.config import TtsConfig
    from iris_voice.speech.tts import PiperSynthesizer

    onnxruntime.set_seed(SEED)  # before the voice's session is created
    synth = PiperSynthesizer(TtsConfig())  # the packaged joe voice
    manifest: dict[str, Any] = {}
    for name, parts in specs().items():
        audio, spans = _compose(_piper_audio(synth, parts), pause_of(name))
        _write(target / f"{name}.wav", audio)
        manifest[name] = _entry(name, parts, audio, spans, "piper:en_US-joe-medium")
    for name, (text, pause) in HESITATIONS.items():
        (whole,) = _piper_audio(synth, [text])
        audio, spans = _compose(list(_stretch_pause(whole, pause)), pause)
        _write(target / f"{name}.wav", audio)
        manifest[name] = _entry(name, [text], audio, spans, "piper:en_US-joe-medium")
    if espeak:
        for name, text in ESPEAK.items():
            audio, spans = _compose([_espeak_audio(text)])
            _write(target / f"{name}.wav", audio)
            manifest[name] = _entry(name, [text], audio, spans, "espeak-ng:en-us")
    return manifest


def ensure_fixtures(force: bool = False) -> Path:
    """Make the fixtures unless the cached ones match the current recipe; their directory."""
    espeak = shutil.which("espeak-ng") is not None
    want = _spec_hash(espeak)
    target = fixtures_dir()
    target.mkdir(parents=True, exist_ok=True)
    stamp = target / ".stamp"
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a make target and a test session may race
        if force or not stamp.is_file() or stamp.read_text().strip() != want:
            manifest = _generate(target, espeak)
            (target / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
            stamp.write_text(want + "\n")
    (target.parent / ".stamp").write_text(want + "\n")  # up to date: tell make so (Makefile)
    return target


def load_manifest() -> dict[str, dict[str, Any]]:
    """Fixture name → its manifest entry (run ``ensure_fixtures`` first)."""
    return json.loads((fixtures_dir() / "manifest.json").read_text())


def fixture(name: str) -> Path:
    """Path of fixture ``name``'s WAV (16 kHz mono int16); KeyError for an unknown name."""
    entry = load_manifest()[name]
    return fixtures_dir() / entry["file"]


def read_wav(name: str) -> np.ndarray:
    """Fixture ``name`` as int16 samples at 16 kHz."""
    with wave.open(str(fixture(name)), "rb") as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).copy()
