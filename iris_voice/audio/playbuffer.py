"""The speaker's queue: samples waiting for the output stream, and what may not have been
heard yet when the stream fails.

The event loop puts blocks in; the speaker's writer thread takes them out a device block
at a time. Both go through one lock held only to copy. The last few blocks handed to the
device are remembered (only as many as the device buffers, plus the one being written):
when the stream fails, those may never have reached the speaker, so they go back to the
front of the queue and the reopened stream plays them again. That repeats at most the
device's latency plus one block (~60 ms with PortAudio's "low" latency) of what was
heard, and loses nothing.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

MAX_REPLAY_S = 0.25
"""Never replay more than this after a failure, whatever latency the device reports."""


class PlaybackBuffer:
    """Mono int16 samples queued for the speaker (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blocks: deque[np.ndarray] = deque()
        self._offset = 0  # samples of _blocks[0] already handed out
        self._queued = 0
        self._recent: deque[np.ndarray] = deque(maxlen=1)  # the latest writes' samples, oldest first
        self._fresh = True  # the next sample handed out starts a burst
        self.played_s = 0.0
        """Seconds handed to the device (less what was put back after a failure)."""

    @property
    def queued(self) -> int:
        """Samples queued and not yet handed to the device."""
        return self._queued

    def remember(self, writes: int) -> None:
        """Keep the samples of the last ``writes`` device writes for a replay."""
        with self._lock:
            self._recent = deque(self._recent, maxlen=max(1, writes))

    def put(self, samples: np.ndarray) -> None:
        """Queue samples after everything queued."""
        with self._lock:
            self._blocks.append(samples)
            self._queued += len(samples)

    def fill(self, out: np.ndarray, rate: int) -> tuple[int, bool, bool]:
        """Copy queued samples into every channel of ``out`` (silence after them), for a
        device at ``rate``.

        Returns (samples copied, the queue is now empty after having had samples, these
        are the first samples after silence)."""
        frames = len(out)
        filled = 0
        with self._lock:
            while filled < frames and self._blocks:
                block = self._blocks[0]
                n = min(frames - filled, len(block) - self._offset)
                out[filled : filled + n] = block[self._offset : self._offset + n, None]
                filled += n
                self._offset += n
                if self._offset == len(block):
                    self._blocks.popleft()
                    self._offset = 0
            self._queued -= filled
            self.played_s += filled / rate
            self._recent.append(out[:filled, 0].copy())
            first = filled > 0 and self._fresh
            if first:
                self._fresh = False
            emptied = filled > 0 and not self._blocks
        out[filled:] = 0
        return filled, emptied, first

    def idle(self) -> bool:
        """True when nothing is queued; the next sample then starts a new burst."""
        with self._lock:
            if self._blocks:
                return False
            self._fresh = True
            return True

    def clear(self) -> int:
        """Drop everything queued (and forget what was written); the samples dropped."""
        with self._lock:
            dropped = self._queued
            self._blocks.clear()
            self._recent.clear()
            self._offset = 0
            self._queued = 0
            self._fresh = True
        return dropped

    def requeue_unheard(self, rate: int) -> int:
        """After a failed write: put the remembered samples back in front of the queue, if
        a reply was still playing (the failed write carried audio, or more is queued).

        Returns the samples put back. A stream failing in silence after a reply puts
        nothing back: that reply's end was written a whole device buffer ago or more."""
        with self._lock:
            playing = bool(self._blocks) or (bool(self._recent) and len(self._recent[-1]) > 0)
            recent = [r for r in self._recent if len(r)] if playing else []
            self._recent.clear()
            if not recent:
                return 0
            if self._offset:
                self._blocks[0] = self._blocks[0][self._offset :]
                self._offset = 0
            replay = np.concatenate(recent)
            self._blocks.appendleft(replay)
            self._queued += len(replay)
            self.played_s -= len(replay) / rate
            return len(replay)

    def take(self) -> np.ndarray:
        """Remove and return everything queued as one array (to resample it)."""
        with self._lock:
            parts = list(self._blocks)
            if parts and self._offset:
                parts[0] = parts[0][self._offset :]
            self._blocks.clear()
            self._offset = 0
            self._queued = 0
        return np.concatenate(parts) if parts else np.zeros(0, np.int16)

    def put_front(self, samples: np.ndarray) -> None:
        """Queue samples before everything queued."""
        if len(samples):
            with self._lock:
                if self._offset:
                    self._blocks[0] = self._blocks[0][self._offset :]
                    self._offset = 0
                self._blocks.appendleft(samples)
                self._queued += len(samples)
