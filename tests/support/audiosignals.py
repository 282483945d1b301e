"""Test signals and measurements for the audio tests (tones, chirps, WAVs, spectra)."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np


def tone(freq: float, seconds: float, rate: int, amplitude: float = 0.3) -> np.ndarray:
    """A sine as int16."""
    t = np.arange(int(seconds * rate)) / rate
    return np.round(amplitude * 32767 * np.sin(2 * np.pi * freq * t)).astype(np.int16)


def chirp(f0: float, f1: float, seconds: float, rate: int, amplitude: float = 0.3) -> np.ndarray:
    """A linear sweep from f0 to f1 Hz as int16 (its autocorrelation has one sharp peak)."""
    t = np.arange(int(seconds * rate)) / rate
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * seconds))
    return np.round(amplitude * 32767 * np.sin(phase)).astype(np.int16)


def silence(seconds: float, rate: int) -> np.ndarray:
    """Zeros as int16."""
    return np.zeros(int(seconds * rate), dtype=np.int16)


def write_wav(path: Path, samples: np.ndarray, rate: int, channels: int = 1) -> Path:
    """Write int16 samples (mono, duplicated to ``channels``) as a WAV."""
    data = np.repeat(samples[:, None], channels, axis=1) if channels > 1 else samples
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.ascontiguousarray(data).astype("<i2").tobytes())
    return path


def dominant_hz(x: np.ndarray, rate: int) -> float:
    """The strongest frequency of a signal (Hann window)."""
    x = x.astype(np.float64) * np.hanning(len(x))
    spectrum = np.abs(np.fft.rfft(x, n=8 * len(x)))
    return float(np.fft.rfftfreq(8 * len(x), 1 / rate)[np.argmax(spectrum)])


def loud_span(x: np.ndarray, rate: int, threshold: float = 0.05, window_s: float = 0.005) -> tuple[int, int]:
    """First and last sample index of the windows whose peak exceeds ``threshold`` of full scale
    (raises when nothing is that loud)."""
    w = max(1, int(window_s * rate))
    n = len(x) // w
    peaks = np.abs(x[: n * w].astype(np.int32)).reshape(n, w).max(axis=1)
    loud = np.flatnonzero(peaks > threshold * 32767)
    if len(loud) == 0:
        raise AssertionError(f"no sound above {threshold:.0%} of full scale (peak {np.abs(x).max()})")
    return int(loud[0] * w), int((loud[-1] + 1) * w)


def loud_seconds(x: np.ndarray, rate: int, threshold: float = 0.05, window_s: float = 0.005) -> float:
    """Total length of the windows whose peak exceeds ``threshold`` of full scale."""
    w = max(1, int(window_s * rate))
    n = len(x) // w
    peaks = np.abs(x[: n * w].astype(np.int32)).reshape(n, w).max(axis=1)
    return float(np.sum(peaks > threshold * 32767) * w / rate)


def best_correlation(signal: np.ndarray, reference: np.ndarray) -> float:
    """Peak normalised cross-correlation of ``reference`` within ``signal`` (1.0 = exact copy)."""
    s = signal.astype(np.float64)
    r = reference.astype(np.float64)
    n = 1 << int(np.ceil(np.log2(len(s) + len(r))))
    corr = np.fft.irfft(np.fft.rfft(s, n) * np.conj(np.fft.rfft(r, n)), n)[: len(s)]
    # energy of each len(r) window of s, for normalisation
    c = np.concatenate([[0.0], np.cumsum(s * s)])
    energy = c[np.minimum(np.arange(len(s)) + len(r), len(s))] - c[: len(s)]
    norm = np.sqrt(np.maximum(energy, 1e-9) * float(np.dot(r, r)))
    return float(np.max(corr / norm))
