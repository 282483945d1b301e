"""Recording what reaches a PipeWire sink, with the wall-clock time of each sample.

``SpeakerRecording`` wraps a running ``parec``; ``VirtualAudio.record_speaker`` starts one
on the virtual speaker's monitor, ``echopath`` one on the microphone.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import wave
from pathlib import Path

import numpy as np


class SpeakerRecording:
    """A running ``parec`` of ``iris_speaker.monitor``, read by a thread that notes when
    each chunk arrived, so a sample index maps to wall-clock time (:meth:`wall_time`)."""

    def __init__(self, proc: subprocess.Popen, rate: int, path: Path | None) -> None:
        self.rate = rate
        self.path = path
        self.ready = threading.Event()
        self._proc = proc
        self._chunks: list[bytes] = []
        self._arrivals: list[tuple[float, int]] = []  # (monotonic time, samples so far)
        self._thread = threading.Thread(target=self._read, name="parec-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        total = 0
        pending = b""
        while True:
            data = self._proc.stdout.read(self.rate // 50 * 2)  # ~20 ms
            if not data:
                break
            now = time.monotonic()
            data = pending + data
            usable = len(data) - len(data) % 2
            pending = data[usable:]
            self._chunks.append(data[:usable])
            total += usable // 2
            self._arrivals.append((now, total))
            self.ready.set()

    def samples(self) -> np.ndarray:
        """Everything recorded so far, int16."""
        return np.frombuffer(b"".join(self._chunks), dtype=np.int16)

    def wall_time(self, index: int) -> float:
        """``time.monotonic()`` at which sample ``index`` reached the speaker, at the latest.

        Each chunk left the sink before it arrived here, so the smallest (arrival - duration
        of the samples so far) bounds the recording's start from above: times come out late,
        never early, and a latency measured with them is an upper bound."""
        start = min(t - n / self.rate for t, n in self._arrivals)
        return start + index / self.rate

    def stop(self) -> np.ndarray:
        """End the recording, write the WAV (when a path was given), return the samples."""
        terminate(self._proc)
        self._thread.join(5)
        samples = self.samples()
        if self.path is not None:
            with wave.open(str(self.path), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(self.rate)
                w.writeframes(samples.tobytes())
        return samples


def terminate(proc: subprocess.Popen, timeout: float = 3.0) -> None:
    """SIGTERM ``proc``, then SIGKILL if it has not ended within ``timeout`` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
