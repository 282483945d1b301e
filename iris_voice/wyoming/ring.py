"""A timer ringing on a satellite, repeated until someone answers it.

The hub rings a satellite's timer once: ``timer-finished``, then the chime and the sentence
as one audio stream. On the desktop an alarm repeats every ``audio.alarm_repeat_s`` until
it is dismissed or ``audio.alarm_timeout_s`` passes (``voice.alarms``); a satellite in the
kitchen must not ring once into an empty room. So the satellite keeps the announcement's
audio as it plays and plays it again on the same schedule, from its own configuration, even
while the hub is away. While it rings, "stop" needs no wake word (the listener's alarm
mode); the satellite asks the hub for the words only (``end_stage`` asr) and acts on them
itself, so talk in the room is not answered as a question.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import numpy as np

from iris_voice.audio.protocols import AudioSink
from iris_voice.config import AudioConfig

log = logging.getLogger(__name__)

MAX_RING_S = 60.0
"""The longest announcement kept for repeating (a chime and one sentence are ~5 s)."""


class SatelliteAlarm:
    """The ringing timer of one satellite: records the hub's announcement, repeats it."""

    def __init__(
        self,
        cfg: AudioConfig,
        sink: AudioSink,
        on_ringing: Callable[[bool], None],
        playing: Callable[[bool], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        self.sink = sink
        self._on_ringing = on_ringing
        """The listener's alarm mode: "stop" without the wake word while True."""
        self._playing = playing
        """Told when a repeat starts (True) and ends (False): the listener's barge-in mode
        and the echo guard follow what the speaker plays."""
        self._clock = clock
        self.timer_id = ""
        """The timer ringing now ("" when none)."""
        self.repeats = 0
        """Times the announcement was played again (``iris`` logs, tests)."""
        self._expect = False  # the next audio stream is the announcement
        self._recording = False
        self._audio: list[np.ndarray] = []
        self._rate = 22050
        self._kept = 0
        self._deadline = 0.0
        self._task: asyncio.Task[None] | None = None
        self.sounding = False
        """True while a repeat plays."""

    @property
    def ringing(self) -> bool:
        """True from ``timer-finished`` until dismissed or timed out."""
        return bool(self.timer_id)

    @property
    def announcing(self) -> bool:
        """True from ``timer-finished`` to the end of the announcement's audio stream."""
        return self._expect or self._recording

    def finished(self, timer_id: str) -> None:
        """The hub sent ``timer-finished``: its announcement is the next audio stream."""
        self._cancel()
        self.timer_id = timer_id or "?"
        self._expect, self._audio, self._kept = True, [], 0
        self._deadline = self._clock() + self.cfg.alarm_timeout_s
        self._on_ringing(True)

    def stream_started(self, rate: int) -> bool:
        """An audio stream from the hub begins; True if it is the announcement (recorded)."""
        self._recording, self._expect = self._expect, False
        if self._recording:
            self._rate = rate
        return self._recording

    def chunk(self, pcm: np.ndarray) -> None:
        """A chunk of the stream now playing (kept while it is the announcement)."""
        if self._recording and self._kept < MAX_RING_S * self._rate:
            self._audio.append(pcm.copy())
            self._kept += len(pcm)

    def stream_ended(self) -> None:
        """The stream ended: after the announcement, the repeats begin."""
        if not self._recording:
            return
        self._recording = False
        if self.ringing and self._audio and self._task is None:
            clip = np.concatenate(self._audio)
            self._task = asyncio.get_running_loop().create_task(self._repeat(clip), name="ring")

    def dismiss(self, why: str) -> bool:
        """Stop ringing (the speaker too, if a repeat plays); True if it rang."""
        if not self.ringing:
            return False
        log.info("timer %s dismissed (%s) after %d repeat(s)", self.timer_id, why, self.repeats)
        sounding, self.sounding = self.sounding, False
        self._cancel()
        if sounding:
            self.sink.stop()
        self._end()
        return True

    async def aclose(self) -> None:
        """Stop the repeats (the satellite is stopping)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _repeat(self, clip: np.ndarray) -> None:
        try:
            while True:
                remaining = self._deadline - self._clock()
                if remaining <= 0:
                    log.info("timer %s not dismissed within %.0f s", self.timer_id, self.cfg.alarm_timeout_s)
                    break
                await asyncio.sleep(min(self.cfg.alarm_repeat_s, remaining))
                if self._deadline - self._clock() <= 0:
                    continue  # (logged above, once)
                self.repeats += 1
                log.info("timer %s rings again (%d)", self.timer_id, self.repeats)
                self.sounding = True
                self._playing(True)
                try:
                    await self.sink.play(clip, self._rate)
                    await self.sink.drain()
                finally:
                    self.sounding = False
                    self._playing(False)
        finally:
            if self._task is asyncio.current_task():
                self._task = None
                self._end()

    def _cancel(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._expect = self._recording = False

    def _end(self) -> None:
        if self.timer_id:
            self.timer_id = ""
            self._on_ringing(False)
