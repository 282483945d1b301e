"""Sample-rate conversion and channel mixing for int16 audio (soxr).

These are CPU work: call them through ``asyncio.to_thread`` from a coroutine, never from
a PortAudio callback.
"""

from __future__ import annotations

import numpy as np
import soxr


def to_int16(samples: np.ndarray) -> np.ndarray:
    """int16 mono samples from int16 or float (-1..1) input, 1-D or frames×channels."""
    x = np.asarray(samples)
    if x.ndim == 2:
        if x.shape[1] == 1:
            x = x[:, 0]
        elif np.issubdtype(x.dtype, np.floating):
            x = x.mean(axis=1)
        else:  # integer channels: average in int32 so the result stays integer PCM
            x = x.astype(np.int32).sum(axis=1) // x.shape[1]
    if x.dtype == np.int16:
        return x
    if np.issubdtype(x.dtype, np.floating):
        return (np.clip(x, -1.0, 1.0) * 32767.0).astype(np.int16)
    return np.clip(x, -32768, 32767).astype(np.int16)


def resample(samples: np.ndarray, src_rate: int, dst_rate: int) -> np.ndarray:
    """Convert one whole int16 mono signal from ``src_rate`` to ``dst_rate`` Hz."""
    x = to_int16(samples)
    if src_rate == dst_rate or len(x) == 0:
        return x
    return soxr.resample(x, src_rate, dst_rate, quality="HQ")


class StreamResampler:
    """Converts a stream block by block without seams between blocks."""

    def __init__(self, src_rate: int, dst_rate: int) -> None:
        self.src_rate = src_rate
        self.dst_rate = dst_rate
        self._stream = (
            None if src_rate == dst_rate else soxr.ResampleStream(src_rate, dst_rate, 1, dtype="int16")
        )

    def process(self, block: np.ndarray, last: bool = False) -> np.ndarray:
        """The converted samples available after ``block`` (soxr holds back a few)."""
        x = to_int16(block)
        if self._stream is None:
            return x
        return self._stream.resample_chunk(x, last=last)
