"""The room benchmark's conversation (tools/bench/ear.py): 30 spoken turns, two voices.

Most turns are the benchmark's own fixtures (``bench_<name>``: Piper's joe voice, with the
wake word). The rest are made here through tools/testbed/fixtures.py's synthesis path (same
lead and tail silence, same edges, same seed) and cached beside them under
``$IRIS_CACHE/fixtures-ear/<recipe hash>``: the follow-ups only a conversation makes sense
of ("And in Paris?"), and questions in espeak-ng's voice (a second speaker).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from pathlib import Path

from iris_voice.speech.model_files import cache_dir
from tools.testbed import fixtures as fx

SPOKEN = {
    "paris": ("piper", "And in Paris?"),
    "germany": ("piper", "And what about Germany?"),
    "fahrenheit": ("piper", "And in Fahrenheit?"),
    "everest": ("piper", "What is the tallest mountain in the world?"),
    "london": ("espeak", fx.BENCH["time_london"][1]),
    "spider": ("espeak", fx.BENCH["spider"][1]),
    "gold": ("espeak", fx.BENCH["gold"][1]),
    "plus": ("espeak", fx.BENCH["plus"][1]),
    "day": ("espeak", fx.BENCH["day_today"][1]),
    "continents": ("espeak", "How many continents are there?"),
}
"""Fixtures made here (``ear_<name>``, with the wake word): voice and text."""

CONVERSATION: list[tuple[str, str, str]] = [
    ("bench_time_tokyo", "everyday", "time_tokyo"),
    ("ear_paris", "chat", "zone:Europe/Paris"),
    ("bench_octopus", "chat", "octopus"),
    ("bench_pasta_timer", "everyday", "pasta_timer"),
    ("bench_france", "chat", "france"),
    ("ear_germany", "chat", "re:berlin"),
    ("bench_multiply", "everyday", "multiply"),
    ("bench_romeo", "chat", "romeo"),
    ("ear_london", "everyday", "time_london"),
    ("bench_planet", "chat", "planet"),
    ("bench_left_pasta", "everyday", "left_pasta"),
    ("ear_spider", "chat", "spider"),
    ("bench_percent", "everyday", "percent"),
    ("bench_boiling", "chat", "boiling"),
    ("ear_fahrenheit", "chat", r"re:\b212\b|two hundred (and )?twelve"),
    ("bench_cancel_pasta", "everyday", "cancel_pasta"),
    ("ear_gold", "chat", "gold"),
    ("bench_time_berlin", "everyday", "time_berlin"),
    ("bench_mona_lisa", "chat", "mona_lisa"),
    ("ear_plus", "everyday", "plus"),
    ("bench_gracias", "chat", "gracias"),
    ("bench_ten_minute_timer", "everyday", "ten_minute_timer"),
    ("bench_mix_colors", "chat", "mix_colors"),
    ("ear_day", "everyday", "day_today"),
    ("bench_hello", "chat", "hello"),
    ("bench_sqrt", "everyday", "sqrt"),
    ("ear_everest", "chat", "re:everest"),
    ("bench_list_timers", "everyday", r"re:\b(10|ten|9|nine)\b.*minute"),
    ("ear_continents", "chat", r"re:\b(7|seven)\b"),
    ("bench_cancel_all", "everyday", "cancel_all"),
]
"""The conversation: fixture, group (``everyday``: a command; ``chat``: the model's, follow-ups
included), check (tools/bench/ear.py ``judge``). The timers follow one cook: set at turn 4,
asked at 11, cancelled at 16; a ten-minute timer at 22, listed at 28, all cancelled at 30."""


def _dir(espeak: bool) -> Path:
    recipe = {"spoken": SPOKEN, "espeak": espeak, "base": fx._spec_hash(espeak)}
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / "fixtures-ear" / digest


def _generate(target: Path, espeak: bool) -> dict:
    import onnxruntime

    from iris_voice.config import TtsConfig
    from iris_voice.speech.tts import PiperSynthesizer

    onnxruntime.set_seed(fx.SEED)
    synth = PiperSynthesizer(TtsConfig())
    manifest = {}
    for name, (voice, text) in SPOKEN.items():
        spoken = fx._with_wake(text)
        if voice == "espeak" and espeak:
            audio, spans = fx._compose([fx._espeak_audio(spoken)])
            label = "espeak-ng:en-us"
        else:  # without espeak-ng, Piper says it (the report then has one voice)
            audio, spans = fx._compose(fx._piper_audio(synth, [spoken]))
            label = "piper:en_US-joe-medium"
        fx._write(target / f"ear_{name}.wav", audio)
        manifest[f"ear_{name}"] = fx._entry(f"ear_{name}", [spoken], audio, spans, label)
    return manifest


def ensure_ear_fixtures() -> list[tuple[Path, str, str, int]]:
    """Make what is missing; the conversation as (WAV, group, check, end of speech sample)."""
    fx.ensure_fixtures()
    espeak = shutil.which("espeak-ng") is not None
    target = _dir(espeak)
    target.mkdir(parents=True, exist_ok=True)
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "manifest.json").is_file():
            manifest = _generate(target, espeak)
            (target / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    ours = json.loads((target / "manifest.json").read_text())
    bench = fx.load_manifest()
    out = []
    for key, group, check in CONVERSATION:
        if key in ours:
            out.append((target / ours[key]["file"], group, check, ours[key]["speech_end"]))
        else:
            out.append((fx.fixture(key), group, check, bench[key]["speech_end"]))
    return out
