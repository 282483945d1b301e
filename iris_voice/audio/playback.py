"""The speaker: a PortAudio output stream fed from a buffer that can be emptied at once.

A writer thread takes ``block_ms`` (20 ms) of samples at a time from a ``PlaybackBuffer``
(a lock held only to copy; ``stop()`` clears it under the same lock) and hands them to
the stream with a blocking ``write``, padding with silence when the buffer is empty.
Output therefore goes silent within one block plus the device's buffer (PortAudio's
"low" latency, ~20 ms): ~40 ms from ``stop()`` to silence on PipeWire here.

Why a writer thread rather than a PortAudio callback: with PortAudio 19.6 (Debian
bookworm) on pipewire-alsa, an output *callback* stream whose PipeWire server goes away
never finishes: its thread spins printing ALSA errors and ``abort()``/``close()`` hang.
A blocking ``write`` fails with a PortAudioError instead, so the sink can report the
problem and reopen later. (Capture keeps its callback: input streams end cleanly.)

The stream stays open between replies (opening costs latency) and is closed after
``idle_close_s`` of silence. A device that is missing or fails is reported (log line +
``AudioDeviceProblem``) and reopened with backoff. A stream that fails while a reply
plays loses none of it: what the device may not have played yet (its latency plus the
failed write) goes back in front of the queue, the queue is held, and a recovery task
reopens the stream with the same backoff; ``play()`` keeps adding to the held reply and
``drain()`` waits for it. If the device is still gone after every retry delay, or the
stream keeps failing, the held audio is dropped and reported. When no reply is held,
audio given while the device is away is discarded rather than blocking the pipeline.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from iris_voice.audio.aec import PlayedReference
from iris_voice.audio.capture import RETRY_DELAYS_S
from iris_voice.audio.devices import PORTAUDIO_LOCK, AudioDevice, resolve, sounddevice
from iris_voice.audio.echo import pipewire_target
from iris_voice.audio.playbuffer import MAX_REPLAY_S, PlaybackBuffer
from iris_voice.audio.resample import resample, to_int16
from iris_voice.config import AudioConfig
from iris_voice.errors import AudioError, Code
from iris_voice.events import AudioDeviceProblem, Event

log = logging.getLogger(__name__)

PIPER_RATE = 22050
"""Piper's output rate: the stream opens at this rate when the device accepts it."""


class SpeakerSink:
    """An ``AudioSink`` on the configured output device (``audio.output_device``)."""

    def __init__(
        self,
        cfg: AudioConfig,
        publish: Callable[[Event], Any] | None = None,
        *,
        sample_rate: int = PIPER_RATE,
        block_ms: float = 20.0,
        latency: float | str = "low",
        idle_close_s: float = 300.0,
        max_buffer_s: float = 120.0,
        retry_delays_s: Sequence[float] = RETRY_DELAYS_S,
    ) -> None:
        self.cfg = cfg
        self.publish = publish
        self.sample_rate = sample_rate
        """The rate asked of the device (the stream falls back to the device's own)."""
        self.block_ms = block_ms
        self.latency = latency
        """PortAudio's suggested output latency: "low", "high" or seconds."""
        self.idle_close_s = idle_close_s
        self.max_buffer_s = max_buffer_s
        """``play()`` waits for the buffer to drain past this much queued audio."""
        self.retry_delays_s = tuple(retry_delays_s)
        self.device: AudioDevice | None = None
        """The device of the open stream."""
        self.stream_rate = 0
        """The rate the stream runs at; everything played is resampled to it."""
        self.stream_latency = 0.0
        """The device buffer PortAudio reports, seconds."""
        self.pipewire_node: str | None = None
        """The PipeWire node to play into instead of the default (the echo canceller's)."""
        self.echo_reference: PlayedReference | None = None
        """Where every block handed to the device goes as it is written: the in-process
        echo canceller's far end (``audio/aec.py``)."""
        self._levels: deque[tuple[float, float]] = deque(maxlen=500)  # (monotonic time, RMS) per block
        self.first_sample_at: float | None = None
        """``time.monotonic()`` when the first sample after silence went to the device."""
        self.underflows = 0
        """Writes PortAudio flagged as output underflow (a gap was heard)."""
        self._buffer = PlaybackBuffer()
        self._discarded_s = 0.0
        self._writer: threading.Thread | None = None
        self._gen = 0  # bumped to tell the current writer thread to close its stream and exit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: asyncio.Event | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._attempt = 0
        self._retry_at = 0.0
        self._problem: str | None = None
        self._opening = asyncio.Lock()  # one open at a time: play() and the recovery task both open
        self._recovery: asyncio.Task[None] | None = None
        """Reopening the stream for a reply held after the stream failed."""
        self._failures = 0  # stream failures since a burst last played to its end

    # ---- writer thread ------------------------------------------------------------------

    def _write_loop(self, stream: Any, gen: int, rate: int, channels: int, blocksize: int) -> None:
        loop = self._loop
        assert loop is not None
        out = np.zeros((blocksize, channels), dtype=np.int16)
        error = None
        try:
            while gen == self._gen:
                _, emptied, first = self._buffer.fill(out, rate)
                if first:
                    self.first_sample_at = time.monotonic()
                if stream.write(out):  # blocks until the device has room
                    self.underflows += 1
                if self.echo_reference is not None:  # before the device plays it: never late
                    self.echo_reference.played(out, rate)
                # What IRIS plays, loudness by time: the echo guard's reference for barge-in.
                self._levels.append(
                    (time.monotonic(), float(np.sqrt(np.mean(np.square(out, dtype=np.float32)))))
                )
                if emptied:
                    loop.call_soon_threadsafe(self._on_empty)
        except RuntimeError:  # the event loop closed under us: shutting down
            pass
        except Exception as exc:  # PortAudioError: the device or the audio server went away
            error = str(exc)
            if gen == self._gen:  # what the device may not have played goes back in the queue
                self._buffer.requeue_unheard(rate)
        finally:
            _close_quietly(stream)
        if error is not None and gen == self._gen:
            try:
                loop.call_soon_threadsafe(self._on_failed, gen, error)
            except RuntimeError:
                pass

    def reference_level(self, since: float) -> float:
        """The loudest block (RMS, int16 scale) handed to the device since ``since``
        (``time.monotonic()``); 0.0 when nothing was played."""
        loudest = 0.0
        for at, level in reversed(list(self._levels)):  # list(): one atomic copy under the GIL
            if at < since:
                break
            loudest = max(loudest, level)
        return loudest

    # ---- event loop ---------------------------------------------------------------------

    def _on_empty(self) -> None:
        if not self._buffer.idle():  # play() added more since the writer looked
            return
        self._failures = 0  # a burst played to its end: the device works
        self._set_idle()

    def _on_failed(self, gen: int, error: str) -> None:
        if gen != self._gen:
            return
        self._report(f"the stream failed ({error})")
        self._drop_stream()
        self._failures += 1
        if not self._buffer.queued:
            self._set_idle()
        elif self._failures > len(self.retry_delays_s):  # it opens, then fails again: give up
            self._give_up(f"the stream failed {self._failures} times")
        elif self._recovery is None and self._loop is not None:
            self._recovery = self._loop.create_task(self._recover(), name="speaker-reopen")

    async def _recover(self) -> None:
        """Reopen the stream for the held reply, with backoff, until it opens, the reply is
        dropped (``stop()``), or every retry delay has passed."""
        try:
            while self._buffer.queued and self._writer is None:
                wait = self._retry_at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                elif await self.open():
                    log.info("speaker reopened: playing the %.2f s of the reply not heard yet",
                             self._buffer.queued / max(self.stream_rate, 1))  # fmt: skip
                elif self._attempt >= len(self.retry_delays_s):
                    self._give_up(f"no device after {self._attempt} attempts")
        finally:
            self._recovery = None

    def _give_up(self, why: str) -> None:
        self._report(f"{why}: {self.stop():.1f} s of audio dropped")

    def _set_idle(self) -> None:
        if self._idle is not None:
            self._idle.set()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self._loop is not None and self._writer is not None:
            self._idle_timer = self._loop.call_later(self.idle_close_s, self._close_when_idle)

    def _close_when_idle(self) -> None:
        if self._buffer.queued == 0 and self._writer is not None:
            log.debug("speaker idle for %.0f s: closing the stream", self.idle_close_s)
            self._drop_stream()

    def _drop_stream(self, wait: bool = False) -> None:
        """Tell the writer to close its stream and exit (``wait``: until it has)."""
        writer, self._writer = self._writer, None
        self._gen += 1
        if wait and writer is not None and writer is not threading.current_thread():
            writer.join(2.0)

    async def open(self) -> bool:
        """Open the stream now (else the first ``play()`` does); False when the device fails."""
        self._loop = asyncio.get_running_loop()
        if self._idle is None:
            self._idle = asyncio.Event()
            self._idle.set()
        if self._writer is not None and self._writer.is_alive():
            return True
        async with self._opening:
            return await self._open_now()

    async def _open_now(self) -> bool:
        if self._writer is not None and self._writer.is_alive():  # opened while we waited
            return True
        self._drop_stream()
        if time.monotonic() < self._retry_at:
            return False
        try:
            await asyncio.to_thread(self._open)
        except AudioError as exc:
            delay = self.retry_delays_s[min(self._attempt, len(self.retry_delays_s) - 1)]
            self._attempt += 1
            self._retry_at = time.monotonic() + delay
            self._report(f"{exc.message} (next try in {delay:g} s)")
            return False
        self._attempt = 0
        if self._problem is not None:
            log.warning("speaker %s works again", self.cfg.output_device or "default")
            self._problem = None
        return True

    def _open(self) -> None:
        sd = sounddevice()
        device = resolve(self.cfg.output_device, "output")
        rate, channels = self._settings(sd, device)
        blocksize = round(rate * self.block_ms / 1000)
        with PORTAUDIO_LOCK:
            stream = None
            try:
                with pipewire_target(self.pipewire_node):
                    stream = sd.OutputStream(
                        device=device.index,
                        samplerate=rate,
                        channels=channels,
                        dtype="int16",
                        blocksize=blocksize,
                        latency=self.latency,
                    )
                stream.start()
            except sd.PortAudioError as exc:
                if stream is not None:
                    stream.close(ignore_errors=True)
                raise AudioError(Code.AUDIO_DEVICE_FAILED, f"cannot open {device.name!r}: {exc}") from None
        self._gen += 1
        if self.echo_reference is not None:  # a new stream's timing: the old samples mean nothing
            self.echo_reference.restart()
        held_rate, self.stream_rate = self.stream_rate, rate
        self.device, self.stream_latency = device, float(stream.latency)
        if held_rate and held_rate != rate and self._buffer.queued:  # a held reply, another device
            self._buffer.put_front(resample(self._buffer.take(), held_rate, rate))
        block_s = blocksize / rate
        self._buffer.remember(1 + math.ceil(min(self.stream_latency, MAX_REPLAY_S) / block_s - 1e-9))
        self._writer = threading.Thread(
            target=self._write_loop, args=(stream, self._gen, rate, channels, blocksize), name="iris-speaker"
        )
        self._writer.daemon = True  # never keep the process alive for a stuck device
        self._writer.start()
        log.info("speaker: %s (index %d) at %d Hz, %d channel(s), latency %.0f ms",
                 device.name, device.index, rate, channels, self.stream_latency * 1000)  # fmt: skip

    def _settings(self, sd: Any, device: AudioDevice) -> tuple[int, int]:
        """Piper's rate in mono if the device takes it, else its own rate (mono or stereo)."""
        native = int(device.default_samplerate)
        for rate, channels in ((self.sample_rate, 1), (native, 1), (native, min(2, device.output_channels))):
            try:
                sd.check_output_settings(
                    device=device.index, channels=channels, dtype="int16", samplerate=rate
                )
                return rate, channels
            except sd.PortAudioError:
                continue
        return native, device.output_channels

    # ---- the AudioSink Protocol -------------------------------------------------------

    async def play(self, chunk: np.ndarray, sample_rate: int) -> None:
        """Queue int16 (or float) mono samples at ``sample_rate``; returns once accepted."""
        samples = to_int16(chunk)
        if len(samples) == 0:
            return
        if not await self.open() and self._recovery is None:
            self._discarded_s += len(samples) / sample_rate
            return
        # Opened, or a failed stream's reply is held for the reopened one: add to it.
        if sample_rate != self.stream_rate:
            samples = await asyncio.to_thread(resample, samples, sample_rate, self.stream_rate)
        if self._buffer.queued / self.stream_rate > self.max_buffer_s:
            await self.drain()
        assert self._idle is not None
        self._buffer.put(samples)
        self._idle.clear()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    async def drain(self) -> None:
        """Wait until everything queued has left the speaker (or the device failed)."""
        if self._idle is None:
            return
        while not self._idle.is_set():
            if self._recovery is not None:  # a failed stream is being reopened for this reply
                await asyncio.wait({self._recovery})  # (being cancelled leaves the task running)
                continue
            if self._writer is None:
                break
            played = self._buffer.played_s
            try:
                async with asyncio.timeout(self._buffer.queued / max(self.stream_rate, 1) + 2.0):
                    await self._idle.wait()
            except TimeoutError:
                if self._recovery is None and self._buffer.played_s == played:  # a hung device
                    self._report("playback stalled")
                    self._drop_stream()
                    self.stop()
                    return
        if self._writer is not None:  # what the device already holds: its output latency
            await asyncio.sleep(self.stream_latency)

    def stop(self) -> float:
        """Drop everything queued: silence within one block plus the device buffer.
        Returns the seconds of audio discarded."""
        dropped = self._buffer.clear()
        self._failures = 0
        seconds = dropped / self.stream_rate if self.stream_rate else 0.0
        self._discarded_s += seconds
        if self._loop is not None:
            if _on_loop(self._loop):
                self._set_idle()
            elif not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._set_idle)
        return seconds

    def played_seconds(self) -> float:
        """Seconds of audio handed to the device since the sink was created."""
        return self._buffer.played_s

    def discarded_seconds(self) -> float:
        """Seconds of audio dropped by ``stop()`` or because the device was unavailable."""
        return self._discarded_s

    def close(self) -> None:
        """Stop and close the stream (a later ``play()`` opens it again)."""
        self.stop()
        if self._recovery is not None:
            self._recovery.cancel()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self._drop_stream(wait=True)

    def _report(self, detail: str) -> None:
        name = self.cfg.output_device or "default"
        log.warning("speaker %s: %s", name, detail)
        if self._problem is None and self.publish is not None:
            self.publish(AudioDeviceProblem(device=name, detail=detail))
        self._problem = detail


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _close_quietly(stream: Any) -> None:
    try:
        with PORTAUDIO_LOCK:
            stream.close(ignore_errors=True)
    except Exception:  # a dead device may fail to close; it is gone either way
        log.debug("closing the speaker stream failed", exc_info=True)
