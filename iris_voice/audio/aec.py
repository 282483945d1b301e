"""WebRTC's echo canceller (AEC3) inside IRIS, fed the exact samples IRIS plays
(``audio.echo_cancel = "webrtc"``).

A canceller between two devices (PipeWire's module) has to guess what was played and when.
In-process IRIS knows: the speaker's writer thread hands every block it gives the device —
the reply, the chimes, the silence between them — to :class:`PlayedReference` the moment the
write returns, before the device has played it. The microphone side takes the same number of
reference samples per frame as it captures, the oldest not yet taken, and runs AEC3
(``pywebrtc-audio``, a 440 kB wheel on numpy alone) on the pair.

Why no delay hint and no start-up chirp: a sample reaches the queue when it enters the
device buffer, so the reference leads its echo by the device buffer, the room and the
capture latency, less what waits in the queue (kept as short as the jitter allows,
``SLACK``); AEC3's own delay estimator finds that lead and follows it. ``make bench-aec``
measured it offline on the test bed's room: the exact samples cancel 40.0 dB with the
chirp's delay as a hint, 40.0 dB without one and 40.0 dB with the reference 150 ms earlier
still; the same samples 150 ms *late* (a monitor read after playback) cancel 0.4 dB. What
matters is that the reference is never late.

Sample k of the reference stays paired with the same microphone sample for as long as the
speaker's stream runs (a frame waits a moment for a reference still on its way; what the
writer owed is skipped, never handed to a later frame), so the delay AEC3 settled on holds.
After a minute of silence the canceller steps aside (the microphone passes unchanged, no
CPU spent) and starts afresh when IRIS next speaks.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import threading
import time
from collections import deque
from typing import Any

import numpy as np
import soxr

from iris_voice.audio import SAMPLE_RATE
from iris_voice.audio.resample import to_int16

log = logging.getLogger(__name__)

MODULE = "pywebrtc_audio"
SLACK = 160
"""Samples (10 ms) left queued when a timeline starts. The queue is kept short: every sample
left in it makes the reference that much *later* relative to the echo, and a late reference
cancels nothing. The jitter between the writer's 20 ms blocks and the microphone's 32 ms
frames, each side at the audio server's pace, is absorbed by the frame waiting for its
reference instead (``MAX_WAIT_S``)."""
TRIM_EVERY = 64
"""Takes (~2 s) over which the queue's low-water mark is watched: when it stayed above
``2 * SLACK`` the excess is skipped, so the reference stays as fresh as the timing allows."""
WRITER_GAP_S = 0.06
"""No block from the writer for this long: its stream has stopped or stalled (it writes one
every 20 ms, silence included), so the microphone does not wait for it."""
MAX_WAIT_S = 0.05
"""The longest a microphone frame waits for its reference (about two of PipeWire's quanta)."""
MAX_QUEUE_S = 1.0
"""More queued than this and nobody is taking it (the microphone is closed): the oldest goes."""
IDLE_S = 60.0
"""After this much silence in the reference the canceller steps aside (no CPU) and starts
AEC3 afresh when IRIS next speaks. Not after a couple of seconds: AEC3 resumed after 2 s
of skipped frames let IRIS's next reply through (~10 dB) for its first second, live, and
questions come 10-15 s apart; a fresh start is trusted only once it has converged again."""
SILENT = 8
"""Peak (int16) at or below which a reference block is silence."""
CONVERGED_FRAMES = 100
"""Frames (~3 s) of IRIS talking the canceller must have heard before its output is trusted
to hold none of IRIS's voice. AEC3 starts with no model of the room: it first suppresses
nearly everything, then lets bursts of IRIS's voice through while its filter settles. On the
offline scene (``tools/bench/aec_bargein``) Silero took one such burst, 2.6 s into the first
reply, for a person (30 frames: 1 false interruption of 21 replies in both rooms); after 100
frames none (0/21)."""
CONVERGED_DB = 15.0
"""…and the echo it removes *now*: the median over its last ``RECENT_FRAMES`` frames of IRIS
talking, dB. Not only at the start: live, after a person had talked over IRIS, AEC3 sometimes
let 4–10 dB of IRIS's voice through for several seconds while it re-learned (the test bed's
room, ``make bench-rooms``); speech must not interrupt IRIS then (the wake word still does)."""
RECENT_FRAMES = 150
"""Frames of IRIS talking (~5 s of speech) over which the echo removed now is judged: long
enough that a person talking over IRIS (their frames show little echo removed: they are
the person, not the echo) does not close the gate before IRIS stops (on the offline scene
a 2 s window cost 2 of 13 detections at 64 ms of speech), short enough that seconds of AEC3
re-learning do."""


def unavailable() -> str | None:
    """Why the in-process canceller cannot run (None: it can)."""
    if importlib.util.find_spec(MODULE) is None:
        return "the pywebrtc-audio package (WebRTC's AEC3) is not installed"
    return None


class PlayedReference:
    """What the speaker handed its device, at 16 kHz, in order, for the canceller to take.

    Thread-safe: :meth:`played` runs on the speaker's writer thread, :meth:`take` on the
    microphone's side; a lock is held only to copy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blocks: deque[np.ndarray] = deque()
        self._queued = 0
        self._resampler: Any = None
        self._rate = 0
        self._primed = False
        self._low = 1 << 30  # the queue's low-water mark after takes, this window
        self._takes = 0
        self._owed = 0  # samples handed out as silence because the queue ran dry
        self._pushed_at = float("-inf")  # time.monotonic() of the last block handed over
        self.timelines = 0
        """Times the reference was started afresh (a new stream, or one silent for long):
        the canceller starts AEC3 afresh with it."""
        self.loud_blocks = 0
        """Blocks with sound in them handed over so far (the canceller's idle check)."""
        self.ran_dry = 0
        """Times the microphone found the reference short (the speaker closed or stalled)."""
        self.trimmed = 0
        """Times a queue that never got short was skipped forward (each, like running dry, is
        a jump AEC3 finds again)."""

    def restart(self) -> None:
        """A new output stream (opened, reopened, another device): forget the old one's
        samples and its resampler."""
        with self._lock:
            self._blocks.clear()
            self._queued = 0
            self._resampler = None
            self._primed = False
            self._low, self._takes = 1 << 30, 0
            self._owed = 0

    def played(self, block: np.ndarray, rate: int) -> None:
        """The writer thread handed ``block`` (int16, frames × channels or mono) to the
        device at ``rate`` Hz."""
        mono = to_int16(block).copy()  # the writer refills its block in place
        if rate != SAMPLE_RATE:
            if self._resampler is None or self._rate != rate:
                # soxr's quick quality: cubic, no look-ahead, so every block comes out at
                # once (its high quality holds ~35 ms back and releases it in bursts, which
                # the queue would have to absorb, making the reference later).
                self._resampler, self._rate = (
                    soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="int16", quality="QQ"),
                    rate,
                )
            mono = self._resampler.resample_chunk(mono)
        if len(mono) == 0:
            return
        loud = int(np.abs(mono).max(initial=0)) > SILENT
        with self._lock:
            self._pushed_at = time.monotonic()
            self._blocks.append(mono)
            self._queued += len(mono)
            if loud:
                self.loud_blocks += 1
            if self._queued > MAX_QUEUE_S * SAMPLE_RATE:  # nobody takes it (microphone closed)
                self._drop(self._queued - SLACK)
                self._primed = False

    def due(self, n: int) -> bool:
        """Should the microphone wait for the writer before taking ``n`` samples? True while
        the stream runs (a block came within ``WRITER_GAP_S``) and fewer than ``n`` are
        queued: the writer's blocks and the microphone's frames come at the audio server's
        pace, not in step, and a frame taken before its reference arrived would get silence."""
        with self._lock:
            if not self._primed or self._queued - self._owed >= n:
                return False
            return time.monotonic() - self._pushed_at < WRITER_GAP_S

    def take(self, n: int) -> np.ndarray:
        """``n`` reference samples for ``n`` captured ones: the oldest not yet taken, or
        silence while the speaker is closed, or where the writer fell behind.

        Sample k of the reference stays paired with the same microphone sample for as long
        as the speaker's stream runs: what the writer owed when the queue ran dry is skipped
        when it comes, rather than handed to later frames. Handing it on would make the
        reference *later* than its echo by as much, and AEC3, settled on the old delay,
        then let 5–10 dB of IRIS through for up to 20 s (live, on the test bed's room). A
        sample skipped instead only makes the reference earlier, which AEC3 tolerates."""
        out = np.zeros(n, dtype=np.int16)
        with self._lock:
            if self._owed:  # what the writer owed when the queue ran dry: its time has passed
                paid = min(self._owed, self._queued)
                self._drop(paid)
                self._owed -= paid
            if not self._primed:  # a new timeline: start just behind the newest sample
                if self._queued < n + SLACK:
                    return out
                self._drop(self._queued - n - SLACK)
                self._primed, self._low, self._takes = True, 1 << 30, 0
                self.timelines += 1
            got = 0
            while got < n and self._blocks:
                head = self._blocks[0]
                k = min(n - got, len(head))
                out[got : got + k] = head[:k]
                got += k
                if k == len(head):
                    self._blocks.popleft()
                else:
                    self._blocks[0] = head[k:]
            self._queued -= got
            if got < n:  # ran dry: the writer is late (or the stream ended)
                self.ran_dry += got > 0 or self._owed == 0
                self._owed += n - got
                if self._owed > MAX_QUEUE_S * SAMPLE_RATE:  # no stream any more: start afresh
                    self._primed, self._owed = False, 0
                return out
            self._low, self._takes = min(self._low, self._queued), self._takes + 1
            if self._takes >= TRIM_EVERY:
                if self._low > 2 * SLACK:  # the queue never got short: it only made us late
                    self._drop(self._low - SLACK)
                    self.trimmed += 1
                self._low, self._takes = 1 << 30, 0
        return out

    def _drop(self, k: int) -> None:
        while k > 0 and self._blocks:
            head = self._blocks[0]
            if len(head) <= k:
                self._blocks.popleft()
                k -= len(head)
                self._queued -= len(head)
            else:
                self._blocks[0] = head[k:]
                self._queued -= k
                k = 0


class InProcessCanceller:
    """AEC3 on the microphone with :class:`PlayedReference` as the far end.

    :meth:`process` takes each 16 kHz capture frame and returns it with IRIS's voice removed;
    ``erle_db`` says how much it removed lately (``iris status``)."""

    def __init__(self, reference: PlayedReference | None = None, engine: Any = None) -> None:
        self.reference = reference or PlayedReference()
        """Where the speaker puts what it plays."""
        if engine is None:
            from pywebrtc_audio import EchoCanceller

            engine = EchoCanceller(SAMPLE_RATE, 1)
        self._engine = engine
        self._loud_seen = 0
        self._idle_frames = 0
        self._erle: deque[float] = deque(maxlen=300)  # 10log(mic/out) of loud reference frames
        self._recent: deque[float] = deque(maxlen=RECENT_FRAMES)
        self._heard = 0  # frames of IRIS talking measured so far
        self._timeline = 0
        self._skipped = False
        self.frames = 0
        """Frames run through AEC3 (not counting those passed while idle)."""

    @property
    def active(self) -> bool:
        """Is AEC3 running (something played within ``IDLE_S``)?"""
        return self._idle_frames * 0.032 < IDLE_S

    async def ready(self, n: int) -> None:
        """Wait (at most ``MAX_WAIT_S``) until the reference for the next ``n`` captured
        samples has been written, while the speaker's stream runs."""
        deadline = time.monotonic() + MAX_WAIT_S
        while self.reference.due(n) and time.monotonic() < deadline:
            await asyncio.sleep(0.004)

    def process(self, frame: np.ndarray) -> np.ndarray:
        """``frame`` (int16, 16 kHz) with the echo of what IRIS played removed."""
        ref = self.reference.take(len(frame))
        if self.reference.timelines != self._timeline:  # a new stream: its delay is new too
            self._timeline = self.reference.timelines
            if self._timeline > 1:
                self._restart_engine()
        loud = self.reference.loud_blocks
        if loud != self._loud_seen or int(np.abs(ref).max(initial=0)) > SILENT:
            self._loud_seen, self._idle_frames = loud, 0
        else:
            self._idle_frames += 1
        if not self.active:
            self._skipped = True
            return frame
        if self._skipped:  # back from idle: a fresh start, trusted once it has converged
            self._skipped = False
            self._restart_engine()
        out = self._engine.process(frame, ref)
        self.frames += 1
        ref_level = float(np.mean(np.square(ref, dtype=np.float32)))
        if ref_level > 1e4:  # IRIS is talking (RMS > 100): how much of the microphone went
            mic = float(np.mean(np.square(frame, dtype=np.float32)))
            left = float(np.mean(np.square(out, dtype=np.float32)))
            if mic > 1e2:
                removed = 10 * np.log10(mic / max(left, 1.0))
                self._erle.append(removed)
                self._recent.append(removed)
                self._heard += 1
        return out

    def _restart_engine(self) -> None:
        if hasattr(self._engine, "reset"):
            self._engine.reset()
        self._recent.clear()
        self._heard = 0

    @property
    def converged(self) -> bool:
        """Does AEC3 remove IRIS's voice now: has it heard enough of IRIS in this room, and
        removed at least ``CONVERGED_DB`` lately?"""
        if self._heard < CONVERGED_FRAMES:
            return False
        return float(np.median(self._recent)) >= CONVERGED_DB

    @property
    def erle_db(self) -> float | None:
        """Median echo removed over the last ~10 s of IRIS talking, dB (None before any)."""
        return float(np.median(self._erle)) if self._erle else None
