"""The microphone: a PortAudio input stream delivering 16 kHz int16 frames.

The PortAudio callback only copies the block and hands it to the event loop
(``call_soon_threadsafe``) into a bounded queue that drops the oldest block when the
consumer falls behind. Mixing to mono, resampling and re-framing happen in ``frames()``
(resampling in a worker thread), never in the callback.

A device that is missing, fails or goes quiet (no block for ``stall_timeout_s``) is
reported once (log line + ``AudioDeviceProblem``), closed and reopened with backoff;
``frames()`` itself only ends when the capture is closed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.audio.aec import InProcessCanceller
from iris_voice.audio.devices import PORTAUDIO_LOCK, AudioDevice, resolve, sounddevice
from iris_voice.audio.echo import pipewire_target
from iris_voice.audio.resample import StreamResampler, to_int16
from iris_voice.config import AudioConfig
from iris_voice.errors import AudioError, Code
from iris_voice.events import AudioDeviceProblem, Event

log = logging.getLogger(__name__)

_STREAM_ENDED = object()  # enqueued by PortAudio's finished callback: the stream died or was closed
RETRY_DELAYS_S = (0.5, 1.0, 2.0, 5.0, 10.0)
"""Waits between attempts to reopen a failed device (the last one repeats)."""


class MicCapture:
    """An ``AudioSource`` reading the configured input device (``audio.input_device``)."""

    def __init__(
        self,
        cfg: AudioConfig,
        publish: Callable[[Event], Any] | None = None,
        *,
        queue_blocks: int = 64,
        stall_timeout_s: float = 2.0,
        retry_delays_s: Sequence[float] = RETRY_DELAYS_S,
    ) -> None:
        self.cfg = cfg
        self.publish = publish
        self.queue_blocks = queue_blocks
        """Blocks buffered for a slow consumer (~2 s at 32 ms each) before the oldest is dropped."""
        self.stall_timeout_s = stall_timeout_s
        self.retry_delays_s = tuple(retry_delays_s)
        self.dropped = 0
        """Blocks dropped because the consumer fell behind."""
        self.overflows = 0
        """Blocks PortAudio flagged as input overflow (audio lost before it reached IRIS)."""
        self.device: AudioDevice | None = None
        """The device of the open stream."""
        self.stream_rate = 0
        """The rate the device stream runs at (16000 unless the device refused it)."""
        self.pipewire_node: str | None = None
        """The PipeWire node to record from instead of the default (the echo canceller's)."""
        self.canceller: InProcessCanceller | None = None
        """IRIS's own echo canceller: every frame goes through it before anyone hears it."""
        self.stream_channels = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[Any] | None = None
        self._stream: Any = None
        self._closed = False
        self._closing: asyncio.Event | None = None
        self._gen = 0
        self._problem: str | None = None

    # ---- callback side (PortAudio thread): copy and hand over, nothing else ------------

    def _callbacks(self, gen: int) -> tuple[Callable[..., None], Callable[[], None]]:
        """The PortAudio callbacks of stream number ``gen`` (late calls of an old stream are ignored)."""
        loop = self._loop
        assert loop is not None

        def callback(indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
            if status.input_overflow:
                self.overflows += 1
            try:
                loop.call_soon_threadsafe(self._put, gen, indata.copy())
            except RuntimeError:  # the loop is closed: the capture is being torn down
                pass

        def finished() -> None:
            try:
                loop.call_soon_threadsafe(self._put, gen, _STREAM_ENDED)
            except RuntimeError:
                pass

        return callback, finished

    def _put(self, gen: int, item: Any) -> None:
        """On the loop: enqueue, dropping the oldest block when the consumer is behind."""
        q = self._queue
        if q is None or gen != self._gen:
            return
        if q.full():
            q.get_nowait()
            self.dropped += 1
            log.debug("microphone queue full: dropped the oldest block (%d so far)", self.dropped)
        q.put_nowait(item)

    # ---- consumer side (event loop) ---------------------------------------------------

    async def frames(self) -> AsyncIterator[np.ndarray]:
        """int16 frames of FRAME_SAMPLES at 16 kHz until :meth:`close` (errors are retried)."""
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue(self.queue_blocks)
        self._closing = asyncio.Event()
        if self._closed:
            self._closing.set()
        attempt = 0
        try:
            while not self._closed:
                try:
                    await asyncio.to_thread(self._open)
                except AudioError as exc:
                    self._report(exc.message)
                    await self._backoff(attempt)
                    attempt += 1
                    continue
                delivered = False
                async for frame in self._read():
                    if not delivered:
                        delivered = True
                        attempt = 0
                        self._recovered()
                    yield frame
                if self._closed:
                    break
                await asyncio.to_thread(self._close_stream)
                await self._backoff(attempt)
                attempt += 1
        finally:
            await asyncio.to_thread(self._close_stream)
            self._queue = None

    async def _read(self) -> AsyncIterator[np.ndarray]:
        """Frames from the open stream until it fails, stalls or the capture closes."""
        assert self._queue is not None
        resampler = (
            StreamResampler(self.stream_rate, SAMPLE_RATE) if self.stream_rate != SAMPLE_RATE else None
        )
        pending = np.zeros(0, dtype=np.int16)
        overflows = self.overflows
        while not self._closed:
            try:
                async with asyncio.timeout(self.stall_timeout_s):
                    block = await self._queue.get()
            except TimeoutError:
                self._report(f"no audio for {self.stall_timeout_s:g} s")
                return
            if block is _STREAM_ENDED:
                if not self._closed:
                    self._report("the stream stopped (device gone or audio server restarted)")
                return
            if self.overflows != overflows:
                log.debug("microphone input overflow (%d so far)", self.overflows)
                overflows = self.overflows
            if resampler is None and block.shape == (FRAME_SAMPLES, 1) and len(pending) == 0:
                yield await self._cancel(block[:, 0])  # the usual case: already a 16 kHz mono frame
                continue
            mono = to_int16(block)
            if resampler is not None:
                mono = await asyncio.to_thread(resampler.process, mono)
            pending = np.concatenate([pending, mono])
            while len(pending) >= FRAME_SAMPLES:
                yield await self._cancel(pending[:FRAME_SAMPLES].copy())
                pending = pending[FRAME_SAMPLES:]

    async def _cancel(self, frame: np.ndarray) -> np.ndarray:
        if self.canceller is None:
            return frame
        await self.canceller.ready(len(frame))  # its reference may still be on the way
        # Inline, not in a thread: AEC3 takes ~0.4 ms of a 32 ms frame (GIL released), less
        # than a hop to a worker thread and back; idle, it is skipped.
        return self.canceller.process(frame)

    def _open(self) -> None:
        """In a worker thread: resolve the device and start a stream (AudioError on failure)."""
        sd = sounddevice()
        device = resolve(self.cfg.input_device, "input")
        rate, channels = self._settings(sd, device)
        self._gen += 1
        callback, finished = self._callbacks(self._gen)
        with PORTAUDIO_LOCK:
            stream = None
            try:
                with pipewire_target(self.pipewire_node):
                    stream = sd.InputStream(
                        device=device.index,
                        samplerate=rate,
                        channels=channels,
                        dtype="int16",
                        blocksize=round(FRAME_SAMPLES * rate / SAMPLE_RATE),
                        latency="low",
                        callback=callback,
                        finished_callback=finished,
                    )
                stream.start()
            except sd.PortAudioError as exc:
                if stream is not None:
                    stream.close(ignore_errors=True)
                raise AudioError(Code.AUDIO_DEVICE_FAILED, f"cannot open {device.name!r}: {exc}") from None
        self._stream, self.device, self.stream_rate, self.stream_channels = stream, device, rate, channels
        log.info(
            "microphone: %s (index %d) at %d Hz, %d channel(s)", device.name, device.index, rate, channels
        )

    @staticmethod
    def _settings(sd: Any, device: AudioDevice) -> tuple[int, int]:
        """16 kHz mono if the device takes it, else its own rate (mono, or all its channels)."""
        native = int(device.default_samplerate)
        for rate, channels in ((SAMPLE_RATE, 1), (native, 1), (native, device.input_channels)):
            try:
                sd.check_input_settings(
                    device=device.index, channels=channels, dtype="int16", samplerate=rate
                )
                return rate, channels
            except sd.PortAudioError:
                continue
        return native, device.input_channels

    def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                with PORTAUDIO_LOCK:
                    stream.close(ignore_errors=True)
            except Exception:  # a dead device may fail to close; it is gone either way
                log.debug("closing the microphone stream failed", exc_info=True)

    async def _backoff(self, attempt: int) -> None:
        delay = self.retry_delays_s[min(attempt, len(self.retry_delays_s) - 1)]
        assert self._closing is not None
        try:  # sleep, but wake at once on close()
            await asyncio.wait_for(self._closing.wait(), delay)
        except TimeoutError:
            pass

    def _report(self, detail: str) -> None:
        """Log every failure; publish an event when the device goes from working to not."""
        name = self.cfg.input_device or "default"
        log.warning("microphone %s: %s; retrying", name, detail)
        if self._problem is None and self.publish is not None:
            self.publish(AudioDeviceProblem(device=name, detail=detail))
        self._problem = detail

    def _recovered(self) -> None:
        if self._problem is not None:
            log.warning("microphone %s works again", self.cfg.input_device or "default")
            self._problem = None

    def close(self) -> None:
        """Stop capturing: ``frames()`` ends (its stream is closed on the way out)."""
        self._closed = True
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._wake)
            except RuntimeError:
                pass

    def _wake(self) -> None:
        if self._closing is not None:
            self._closing.set()
        self._put(self._gen, _STREAM_ENDED)
