"""A short two-note chime for finished timers, generated in code (no sound files)."""

from __future__ import annotations

import numpy as np

NOTES_HZ = (880.0, 1318.5)
"""A5 then E6: a rising fifth, bright without being shrill."""


def _note(freq: float, seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    # A bell-like tone: the fundamental plus a soft octave, a 5 ms attack so it does not
    # click, and an exponential decay.
    tone = np.sin(2 * np.pi * freq * t) + 0.25 * np.sin(2 * np.pi * 2 * freq * t)
    envelope = np.minimum(t / 0.005, 1.0) * np.exp(-t / (seconds / 4))
    return tone * envelope


def chime(sample_rate: int = 22050, volume: float = 0.5) -> np.ndarray:
    """The chime as int16 mono samples at ``sample_rate`` (~0.6 s); ``volume`` is its peak, 0..1."""
    note_s, gap_s = 0.45, 0.15
    first = _note(NOTES_HZ[0], note_s, sample_rate)
    second = _note(NOTES_HZ[1], note_s, sample_rate)
    offset = int(gap_s * sample_rate)
    out = np.zeros(offset + len(second))
    out[: len(first)] += first
    out[offset:] += second
    out *= min(max(volume, 0.0), 1.0) / np.max(np.abs(out))
    # fade the last 10 ms to zero so the end does not click either
    fade = int(0.01 * sample_rate)
    out[-fade:] *= np.linspace(1.0, 0.0, fade)
    return np.round(out * 32767).astype(np.int16)
