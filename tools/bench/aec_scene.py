"""The scene the in-process echo canceller is measured on, offline: IRIS's replies spoken
by Piper, the test bed's room, and real people talking with IRIS silent and over it.

IRIS's voice: real Piper speech in the configured voice (made once into
``$IRIS_CACHE/aec-offline/<recipe hash>``). The room: ``echopath.Room``'s impulse response
at 48 kHz, the one PipeWire convolves with in the live bench. The person: the human
recordings (kinds command, question, other), each said once with IRIS silent and once over a
reply, starting part-way into it. Microphone = speaker * room + person + noise, at IRIS's
16 kHz. Used by ``aec_offline`` (how much echo each canceller removes) and ``aec_bargein``
(what a speech detector on the cancelled microphone takes for the person).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import wave
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import soxr

from tools.testbed.echopath import RATE as ROOM_RATE
from tools.testbed.echopath import Room

RATE = 16000
"""IRIS's capture rate: the canceller runs at it, on the microphone as IRIS gets it."""


FRAME = RATE // 100
"""10 ms: the only frame length WebRTC's audio processing accepts."""


HUMAN = Path(__file__).resolve().parents[3] / "shared" / "testdata" / "human-speech"


KINDS = ("command", "question", "other")


ROOMS = {"default": Room(), "harsh": Room(gain_db=-3.0)}


PERSON_DB = -10.0
"""The person's speech level against IRIS's played voice: as loud as the default room's
direct echo (0 dB signal-to-echo there, -7 dB in the harsh room)."""


NOISE_DB = -50.0
"""The microphone's noise floor against IRIS's played voice."""


REPLIES = tuple(
    line.strip()
    for line in """
    It is twelve degrees and cloudy in Berlin. This afternoon it clears and warms up to sixteen degrees.
    I set a timer for ten minutes. You can ask me how much time is left at any moment.
    The Eiffel Tower is about three hundred and thirty meters tall. It was built in eighteen eighty nine.
    Mix a cup of flour, one egg, a cup of milk and a pinch of salt, then let the batter rest a while.
    Your next meeting is at three o'clock with the design team. After that your calendar is free.
    Plants take in carbon dioxide and water, and with sunlight they make sugar and release oxygen.
    The Moon is about three hundred and eighty four thousand kilometers away. Light takes a second.
    Start the morning with a glass of water, some stretching, and the three most important tasks.
    The capital of Australia is Canberra, not Sydney, chosen as a compromise with Melbourne.
    Fifteen percent of eighty four is twelve point six, so the bill comes to ninety six dollars.
    The train to Hamburg leaves at seven forty five from platform nine and takes about two hours.
    A cup of coffee has about ninety five milligrams of caffeine. Four hundred a day is safe for most.
    """.strip().splitlines()
)
"""IRIS's replies, spoken by Piper; joined when a clip needs a longer one."""


ECHO_ONLY = 4
"""Replies played before the person first speaks: echo only, to see the canceller settle."""


@dataclass(frozen=True)
class Talk:
    """One human clip in the scene, in seconds on the scene's clock."""

    text: str
    """What the person said (the manifest's text)."""
    alone: tuple[float, float]
    """Where the clip plays with IRIS silent."""
    over: tuple[float, float]
    """Where the clip plays again over one of IRIS's replies."""


@dataclass(frozen=True)
class Scene:
    """What IRIS plays and what the person says, before the room."""

    played: np.ndarray
    """IRIS's output at ``play_rate`` (float, int16 scale): the chirp, then the replies."""
    play_rate: int
    """Piper's rate: IRIS plays at it, PipeWire resamples for the device."""
    person: np.ndarray
    """The person's voice at 16 kHz (float, int16 scale), level set by :data:`PERSON_DB`."""
    replies: tuple[tuple[float, float], ...]
    """Each reply's start and end, seconds."""
    talks: tuple[Talk, ...]
    """The person's clips."""
    calibration_s: float
    """The chirp and its echo lie before this time."""


def chirp(rate: int, seconds: float = 1.0, lo: float = 200.0, hi: float = 7000.0) -> np.ndarray:
    """A linear sweep from ``lo`` to ``hi`` Hz, amplitude 0.5, with 10 ms fades."""
    t = np.arange(int(seconds * rate)) / rate
    x = 0.5 * np.sin(2 * np.pi * (lo * t + (hi - lo) / (2 * seconds) * t**2))
    fade = np.minimum(1.0, np.minimum(t, seconds - t) / 0.01)
    return x * fade


def xcorr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross-correlation of ``a`` against ``b`` by FFT: index k is lag k, index -k lag -k."""
    n = 1 << int(np.ceil(np.log2(len(a) + len(b))))
    return np.fft.irfft(np.fft.rfft(a, n) * np.conj(np.fft.rfft(b, n)), n)


def locate_delay(mic: np.ndarray, ref: np.ndarray, rate: int, max_ms: float = 500.0) -> tuple[float, float]:
    """(delay in ms, gain in dB) of ``ref``'s echo in ``mic``: the lag in 0..``max_ms``
    with the strongest cross-correlation, and the echo's amplitude there."""
    lags = xcorr(mic, ref)[: int(max_ms * rate / 1000) + 1]
    at = int(np.argmax(np.abs(lags)))
    gain = abs(lags[at]) / max(float(np.dot(ref, ref)), 1e-12)
    return at * 1000 / rate, 20 * np.log10(max(gain, 1e-12))


def room_echo(speaker: np.ndarray, ir: np.ndarray) -> np.ndarray:
    """The speaker's signal through the room: ``speaker`` convolved with ``ir`` (same
    rate), as long as ``speaker``."""
    n = 1 << int(np.ceil(np.log2(len(speaker) + len(ir))))
    return np.fft.irfft(np.fft.rfft(speaker, n) * np.fft.rfft(ir, n), n)[: len(speaker)]


def shifted(x: np.ndarray, samples: int) -> np.ndarray:
    """``x`` delayed by ``samples`` (advanced when negative), same length, zero-filled."""
    y = np.zeros_like(x)
    if samples >= 0:
        y[samples:] = x[: len(x) - samples]
    else:
        y[:samples] = x[-samples:]
    return y


def rms_active(x: np.ndarray, frame: int) -> float:
    frames = len(x) // frame
    energy = np.mean(x[: frames * frame].reshape(frames, frame) ** 2, axis=1)
    return float(np.sqrt(np.mean(energy[energy > energy.max() * 1e-4])))


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"{path}: not 16-bit PCM")
        x = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float64)
        x = x.reshape(-1, w.getnchannels()).mean(axis=1)
        rate = w.getframerate()
    return x if rate == RATE else soxr.resample(x, rate, RATE)


def piper_replies() -> tuple[list[np.ndarray], int]:
    """:data:`REPLIES` in the configured Piper voice (int16, the voice's rate), made once
    into the cache: synthesis is slow and the figures should not move with it."""
    from iris_voice.config import load
    from iris_voice.speech.tts import PiperSynthesizer
    from tools.testbed.fetch_models import cache_dir

    synth = PiperSynthesizer(load(None)[0].tts)
    recipe = json.dumps(
        [REPLIES, synth.name, metadata.version("piper-tts"), synth.cfg.model_dump()], default=str
    )
    path = cache_dir() / "aec-offline" / hashlib.sha256(recipe.encode()).hexdigest()[:16] / "replies.npz"
    if path.is_file():
        with np.load(path) as z:
            return [z[f"r{i}"] for i in range(len(REPLIES))], int(z["rate"])

    async def speak_all() -> list[np.ndarray]:
        return [np.concatenate([c async for c in synth.stream(t)]) for t in REPLIES]

    audio = asyncio.run(speak_all())
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, rate=synth.sample_rate, **{f"r{i}": a for i, a in enumerate(audio)})
    return audio, synth.sample_rate


def build_scene(replies: list[np.ndarray], rate: int, clips: list[tuple[str, np.ndarray]]) -> Scene:
    """The chirp, :data:`ECHO_ONLY` replies, then per clip: the person alone, and the
    person over a reply (starting 1.5-2.9 s in; replies are joined until it outlasts them)."""
    loud = rms_active(np.concatenate(replies).astype(np.float64), rate // 100)
    pieces: list[tuple[float, np.ndarray]] = []  # (start s, samples at rate) played
    voice: list[tuple[float, np.ndarray]] = []  # (start s, samples at 16 kHz) said
    spans, talks, t = [], [], 0.5
    pieces.append((t, chirp(rate) * 32767))
    t = calibration = t + 2.0

    def play(audio: np.ndarray) -> float:
        nonlocal t
        pieces.append((t, audio.astype(np.float64)))
        spans.append((t, t + len(audio) / rate))
        t += len(audio) / rate + 1.0
        return spans[-1][0]

    for i in range(ECHO_ONLY):
        play(replies[i])
    for k, (text, clip) in enumerate(clips):
        clip = clip - clip.mean()
        clip = clip * loud * 10 ** (PERSON_DB / 20) / rms_active(clip, FRAME)
        alone = (t + 0.5, t + 0.5 + len(clip) / RATE)
        voice.append((alone[0], clip))
        t = alone[1] + 1.0
        onset, need = 1.5 + 0.7 * (k % 3), 1.5 + 0.7 * (k % 3) + len(clip) / RATE + 1.0
        joined, j = [replies[(ECHO_ONLY + k) % len(replies)]], ECHO_ONLY + k + 1
        while sum(len(r) for r in joined) / rate < need:
            joined.append(replies[j % len(replies)])
            j += 1
        start = play(np.concatenate(joined))
        voice.append((start + onset, clip))
        talks.append(Talk(text, alone, (start + onset, start + onset + len(clip) / RATE)))
    played = np.zeros(int(t * rate) + rate)
    for s, a in pieces:
        played[int(s * rate) : int(s * rate) + len(a)] = a
    person = np.zeros(int(t * RATE) + RATE)
    for s, a in voice:
        person[int(s * RATE) : int(s * RATE) + len(a)] = a
    return Scene(played, rate, person, tuple(spans), tuple(talks), calibration)


@dataclass(frozen=True)
class Signals:
    """One room's microphone, its parts and the reference, at 16 kHz (float, int16 scale)."""

    mic: np.ndarray
    """What IRIS captures: the echo, the person and the noise."""
    ref: np.ndarray
    """Exactly what IRIS played, as IRIS would resample it for the canceller."""
    person: np.ndarray
    """The person's part of ``mic``."""
    noise: np.ndarray
    """The noise's part of ``mic`` (an output of only this shows the "noise" ERLE)."""


def room_signals(scene: Scene, room: Room, seed: int = 11) -> Signals:
    """``scene`` in ``room``: the played samples go to the device at 48 kHz (as PipeWire
    resamples them), through the room's impulse response, back at 16 kHz; the person and
    the noise (:data:`NOISE_DB`) are added at the microphone."""
    speaker = soxr.resample(scene.played, scene.play_rate, ROOM_RATE)
    echo = soxr.resample(room_echo(speaker, room.impulse_response().astype(np.float64)), ROOM_RATE, RATE)
    ref = soxr.resample(scene.played, scene.play_rate, RATE)
    n = min(len(echo), len(ref), len(scene.person))
    loud = rms_active(scene.played, scene.play_rate // 100)
    noise = np.random.default_rng(seed).standard_normal(n) * loud * 10 ** (NOISE_DB / 20)
    return Signals(echo[:n] + scene.person[:n] + noise, ref[:n], scene.person[:n].copy(), noise)


def human_clips(human: Path = HUMAN, limit: int = 0) -> list[tuple[str, np.ndarray]]:
    """(text, samples at 16 kHz) of the human recordings of :data:`KINDS`, in manifest order."""
    manifest = [c for c in json.loads((human / "manifest.json").read_text()) if c.get("kind") in KINDS]
    return [(c["text"], read_wav(human / c["file"])) for c in manifest[: limit or None]]
