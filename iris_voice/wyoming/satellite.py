"""``iris satellite --hub tcp://HOST:PORT``: IRIS's ears and voice in another room.

The satellite runs what needs the room — the microphone, the wake word, VAD endpointing
and the speaker — and leaves speech-to-text, the language model and text-to-speech to the
hub (``wyoming.hub``, the protocol is described there). After the wake word and the end of the
question it streams the utterance to the hub and plays the answer as it arrives; the wake
word interrupts the answer (``pause-satellite`` tells the hub). Timers set here ring here:
the hub sends ``timer-finished`` and the announcement's audio, which the satellite repeats
until "stop", the wake word or ``audio.alarm_timeout_s`` (``wyoming.ring``).

While connected the satellite sends ``ping`` every ``PING_EVERY_S`` and answers the hub's
(the hub closes links that stay silent, and probes a name's holder with one); a hub
silent for ``HUB_SILENT_S`` counts as lost. A lost hub never ends the satellite: it
reconnects with a growing pause (1 s doubling to
``satellite.reconnect_max_s``), logs one line when the hub goes and one when it is back,
and a question asked meanwhile gets two falling chimes instead of an answer (there is no
voice here to say so).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from urllib.parse import urlparse

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.ping import Ping, Pong
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.satellite import PauseSatellite, RunSatellite

from iris_voice.audio.chime import chime
from iris_voice.audio.protocols import AudioSink, AudioSource
from iris_voice.config import Config
from iris_voice.events import Trigger
from iris_voice.voice.heard import BargeIn, Heard, UtteranceReady
from iris_voice.voice.listener import Listener
from iris_voice.voice.phrases import is_stop_command
from iris_voice.wyoming.adoption import HubLink, HubListener
from iris_voice.wyoming.ring import SatelliteAlarm
from iris_voice.wyoming.trust import AUTH_OK_TYPE, AUTH_TYPE

log = logging.getLogger(__name__)

SEND_SAMPLES = 1600
"""Samples per ``audio-chunk`` sent to the hub (100 ms at 16 kHz)."""
CHIME_RATE = 22050
PING_EVERY_S = 10.0
"""How often the satellite pings the hub: well inside the hub's ``serve.idle_timeout_s``."""
HUB_SILENT_S = 35.0
"""A hub that answered no ping for this long is gone (a link left half-open)."""


def satellite_name(cfg: Config, name: str | None = None) -> str:
    """``--name``, else ``satellite.name``, else this machine's host name."""
    return name or cfg.satellite.name or socket.gethostname().split(".")[0] or "satellite"


def error_chimes() -> np.ndarray:
    """The chime backwards, twice: falling notes that mean "the hub did not answer"."""
    back = chime(CHIME_RATE, volume=0.4)[::-1]
    return np.concatenate([back, np.zeros(CHIME_RATE // 10, np.int16), back]).astype(np.int16)


class SatelliteClient:
    """The satellite: a listener on the microphone, a link to the hub, the speaker."""

    def __init__(self, cfg: Config, hub: str, name: str, listener: Listener, sink: AudioSink) -> None:
        """``hub``: connect to it; "" waits for a hub on ``satellite.listen`` (``adoption``)."""
        uri = urlparse(hub or cfg.satellite.listen)
        if uri.scheme != "tcp" or not uri.hostname or not uri.port:
            raise ValueError(f"satellite.hub must look like tcp://HOST:PORT, not {hub!r}")
        self.cfg = cfg
        self.host, self.port, self.name = uri.hostname, uri.port, name
        self.waits = not hub
        """The satellite listens for its hub (``satellite.listen``) instead of connecting."""
        self.listener = listener
        self.sink = sink
        self.client: AsyncTcpClient | HubLink | None = None
        """The hub's connection, while there is one."""
        self.connected = asyncio.Event()
        self.turns = 0
        """Questions sent to the hub."""
        self.answers = 0
        """Turns the hub ended (``handled`` or ``not-handled``)."""
        self._heard: asyncio.Queue[Heard] = asyncio.Queue(16)
        self._send_lock = asyncio.Lock()
        self._in_turn = False  # a question was sent and its end not yet received
        self._skip = False  # ignore the hub until the new turn's transcript (after a barge-in)
        self._playing = False
        self._rate = 22050
        self._last_event = 0.0
        self._last_heard = 0.0
        """When the hub last sent anything (pongs too): its link is alive."""
        self._lost_since: float | None = None
        self._words_only = False  # the turn under way asks the hub for the words only
        self.alarm = SatelliteAlarm(cfg.audio, sink, listener.alarm_ringing, self._ring_playing)
        """The timer ringing here, repeated until dismissed."""

    @property
    def in_turn(self) -> bool:
        """A question was sent and its answer has not ended yet."""
        return self._in_turn

    async def run(self, source: AudioSource) -> None:
        """Listen, talk to the hub and play its answers until cancelled."""
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.listener.run(source, self._heard), name="listener")
            tg.create_task(self._follow(), name="heard")
            if self.waits:
                hubs = HubListener(self.cfg, self.name, lambda link: self._use(link, link.peer))
                tg.create_task(hubs.run(), name="hub-listener")
            else:
                tg.create_task(self._link(), name="hub-link")
            tg.create_task(self._watch(), name="reply-watch")

    # -- the hub link -------------------------------------------------------------------
    async def _send(self, *events: Event) -> bool:
        """Send ``events`` in order; False when there is no hub to send them to."""
        client = self.client
        if client is None:
            return False
        try:
            async with self._send_lock, asyncio.timeout(self.cfg.satellite.connect_timeout_s):
                for event in events:
                    await client.write_event(event)
            return True
        except (ConnectionError, OSError) as exc:  # TimeoutError too: a hub that stopped reading
            log.debug("sending to the hub failed: %s", exc)
            return False

    async def _connect(self) -> AsyncTcpClient:
        timeout = self.cfg.satellite.connect_timeout_s
        client = AsyncTcpClient(self.host, self.port)
        await asyncio.wait_for(client.connect(), timeout)
        if self.cfg.satellite.token:  # the hub's serve.token (iris serve's trust model)
            await client.write_event(Event(AUTH_TYPE, {"token": self.cfg.satellite.token}))
            answer = await asyncio.wait_for(client.read_event(), timeout)
            if answer is None or answer.type != AUTH_OK_TYPE:
                await client.disconnect()
                raise ConnectionError("the hub refused satellite.token")
        await client.write_event(Event(RunSatellite().event().type, {"name": self.name}))
        answer = await asyncio.wait_for(client.read_event(), timeout)
        if answer is None or answer.type != "satellite-connected":
            await client.disconnect()
            why = (answer.data or {}).get("text", answer.type) if answer is not None else "closed"
            raise ConnectionError(f"the hub refused this satellite: {why}")
        return client

    async def _link(self) -> None:
        """Stay connected to the hub: connect, read until it goes, wait, again."""
        delay = 1.0
        while True:
            try:
                client = await self._connect()
            except (OSError, ConnectionError, TimeoutError) as exc:
                self._lost(str(exc) or type(exc).__name__)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.cfg.satellite.reconnect_max_s)
                continue
            delay = 1.0
            await self._use(client, f"{self.host}:{self.port}")

    async def _use(self, client: AsyncTcpClient | HubLink, where: str) -> None:
        """Be the satellite of the hub on ``client`` until the link ends."""
        self.client, self._skip = client, False
        self.connected.set()
        if self._lost_since is not None:
            log.warning("the hub at %s is back (away %.0f s)", where, time.monotonic() - self._lost_since)
        else:
            log.info("connected to the hub at %s as %r", where, self.name)
        self._lost_since = None
        self._last_heard = time.monotonic()
        keepalive = asyncio.get_running_loop().create_task(self._keepalive(client), name="hub-ping")
        try:
            await self._read(client)
            reason = "the hub closed the connection"
        except (OSError, ConnectionError) as exc:
            reason = str(exc) or type(exc).__name__
        finally:
            keepalive.cancel()
        if self.client is client:
            self.client = None
            self.connected.clear()
        with contextlib.suppress(Exception):
            await client.disconnect()
        self._lost(reason)

    def _lost(self, reason: str) -> None:
        """Said once per outage; a turn under way ends with the error chimes."""
        if self._lost_since is None:
            self._lost_since = time.monotonic()
            if self.waits:
                log.warning("the hub went away (%s); waiting for it on %s", reason, self.cfg.satellite.listen)
            else:
                log.warning("the hub at %s:%s is not reachable (%s); retrying every %.0f s at most",
                            self.host, self.port, reason, self.cfg.satellite.reconnect_max_s)  # fmt: skip
        if self._in_turn:
            self._end_turn()
            asyncio.get_running_loop().create_task(self._chimes(), name="error-chimes")

    async def _keepalive(self, client: AsyncTcpClient | HubLink) -> None:
        """Ping the hub; a hub that stays silent is disconnected (``_link`` reconnects)."""
        while True:
            await asyncio.sleep(PING_EVERY_S)
            if time.monotonic() - self._last_heard > HUB_SILENT_S:
                log.warning("the hub answered nothing for %.0f s; reconnecting", HUB_SILENT_S)
                with contextlib.suppress(Exception):
                    await client.disconnect()
                return
            await self._send(Ping().event())

    async def _read(self, client: AsyncTcpClient | HubLink) -> None:
        while (event := await client.read_event()) is not None:
            self._last_heard = time.monotonic()
            if not (Ping.is_type(event.type) or Pong.is_type(event.type)):
                self._last_event = self._last_heard  # a reply's progress: pings are not
            await self._on_event(event)

    async def _on_event(self, event: Event) -> None:
        kind = event.type
        if Ping.is_type(kind):
            await self._send(Pong(text=Ping.from_event(event).text).event())
            return
        if Pong.is_type(kind):
            return
        if kind == "transcript":
            self._skip = False
            text = (event.data or {}).get("text", "")
            log.info("the hub heard: %r", text)
            if self._words_only:  # said over the ringing timer: only "stop" counts
                self._words_only = False
                if is_stop_command(text):
                    self.alarm.dismiss("stop")
                self._end_turn()
            return
        if kind == "timer-finished":
            log.info("timer %s finished", (event.data or {}).get("id"))
            self.alarm.finished(str((event.data or {}).get("id", "")))
            return
        if self._skip and not self.alarm.announcing:
            return  # sent before the new question's transcript: the rest of an earlier answer
        if kind == "audio-start":
            self._rate = AudioStart.from_event(event).rate
            self.alarm.stream_started(self._rate)
            self._playing = True
            self._speaker_busy()
        elif kind == "audio-chunk" and self._playing:
            chunk = AudioChunk.from_event(event)
            pcm = np.frombuffer(chunk.audio, np.int16)
            self.alarm.chunk(pcm)
            await self.sink.play(pcm, chunk.rate)
        elif kind == "audio-stop":
            self._playing = False
            await self.sink.drain()
            self.alarm.stream_ended()
            if not self._in_turn:  # an announcement ended
                self.listener.idle()
        elif kind in ("handled", "not-handled"):
            self.answers += 1
            log.info("the hub answered%s: %r", "" if kind == "handled" else " nothing",
                     (event.data or {}).get("text", ""))  # fmt: skip
            if kind == "not-handled" and (event.data or {}).get("text") == "stop":
                self.sink.stop()  # "stop" silences an announcement still playing
                self.alarm.dismiss("stop")
            self._end_turn()
            if kind == "handled":
                self.listener.follow_up()
        elif kind == "error":
            log.warning("the hub: %s", (event.data or {}).get("text", "error"))
            if self._in_turn:
                self._end_turn()
                await self._chimes()

    def _end_turn(self) -> None:
        self._in_turn = self._skip = self._words_only = False
        if not self._playing and not self.alarm.sounding:
            self.listener.idle()

    def _speaker_busy(self) -> None:
        """The speaker starts playing: the wake word (and "stop" over a ring) now interrupts,
        and the echo guard knows (the words stay on the hub; the timing is what counts)."""
        self.listener.answering()
        if self.listener.guard is not None:
            self.listener.guard.saying("")

    def _ring_playing(self, playing: bool) -> None:
        """A repeat of the ringing timer starts or ends."""
        if playing:
            self._speaker_busy()
        elif not self._playing and not self._in_turn:
            self.listener.idle()

    async def _watch(self) -> None:
        """A turn whose answer stops coming ends after ``satellite.reply_timeout_s``."""
        limit = self.cfg.satellite.reply_timeout_s
        while True:
            await asyncio.sleep(min(1.0, limit / 4))
            if self._in_turn and time.monotonic() - self._last_event > limit:
                log.warning("the hub sent nothing for %.0f s; giving up on this question", limit)
                self._end_turn()
                await self._send(PauseSatellite().event())
                await self._chimes()

    async def _chimes(self) -> None:
        await self.sink.play(error_chimes(), CHIME_RATE)
        await self.sink.drain()

    # -- what the listener heard --------------------------------------------------------
    async def _follow(self) -> None:
        while True:
            heard = await self._heard.get()
            if isinstance(heard, BargeIn):
                self.alarm.dismiss(f"barge-in ({heard.how})")
                dropped = self.sink.stop()
                log.info("barge-in (%s): %.2f s of the answer dropped", heard.how, dropped)
                self._playing = False  # the rest of that audio stream is not played
                if self._in_turn:
                    await self._send(PauseSatellite().event())
                self._in_turn = False
            elif isinstance(heard, UtteranceReady):
                trigger = heard.utterance.trigger
                words_only = trigger == Trigger.ALARM  # speech over the ring, no wake word
                if not words_only:
                    self.alarm.dismiss("a question")
                await self._ask(heard.utterance.audio, trigger, words_only)

    async def _ask(self, audio: np.ndarray, trigger: object, words_only: bool = False) -> None:
        """Stream one question to the hub (or chime: no hub); with ``words_only`` the hub
        sends back only the transcript."""
        wake = self.cfg.wake.model if str(trigger) == "wake_word" else None
        end = PipelineStage.ASR if words_only else PipelineStage.TTS
        run = RunPipeline(start_stage=PipelineStage.ASR, end_stage=end, wake_word_name=wake)
        fmt = {"rate": 16000, "width": 2, "channels": 1}
        pcm = audio.astype(np.int16)
        events = [run.event(), AudioStart(**fmt).event()]
        events += [AudioChunk(audio=pcm[i : i + SEND_SAMPLES].tobytes(), **fmt).event()
                   for i in range(0, len(pcm), SEND_SAMPLES)]  # fmt: skip
        events.append(AudioStop().event())
        self.listener.answering()
        self._in_turn, self._skip, self._last_event = True, True, time.monotonic()
        self._words_only = words_only
        if not await self._send(*events):
            log.warning("a question (%.1f s) but no hub at %s:%s", len(pcm) / 16000, self.host, self.port)
            self.alarm.dismiss("no hub to hear what was said")  # better quiet than unstoppable
            self._end_turn()
            await self._chimes()
            return
        self.turns += 1
