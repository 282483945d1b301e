"""A room for the virtual devices: what reaches ``iris_speaker`` leaks back into the
microphone, late, quieter and with a reverberant tail, like laptop speakers into a laptop
microphone.

:class:`EchoPath` runs PipeWire's own filter-chain module in a child ``pipewire -c`` process
of the bed (the way PipeWire runs filter chains as clients): a stream captures
``iris_speaker``'s output (``stream.capture.sink``), convolves it with a room impulse
response, and plays the result into ``iris_micfeed``, where it mixes with whatever
:meth:`VirtualAudio.play_into_mic` plays — the person in the room. The impulse response is
written as a WAV: ``delay_ms`` of silence, the direct sound at ``gain_db``, then an
exponentially decaying noise tail (``rt60_ms``, ``reverb_db`` below the direct sound), so
the delay, the level and the reverb are exactly what the test asked for, and the
convolution runs in PipeWire's real-time thread, not in Python.

:func:`measure` plays a chirp into the speaker and finds it in the microphone, so a test or
benchmark prints the echo it really got (the graph adds a quantum or so of its own)."""

from __future__ import annotations

import subprocess
import time
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iris_voice.audio.echo import client_conf
from tools.testbed.audiobed import MIC, MIC_FEED, SPEAKER, AudioBedError, VirtualAudio
from tools.testbed.recording import SpeakerRecording

RATE = 48000
"""The null sinks' rate: the impulse response is written at it, so nothing is resampled."""


@dataclass(frozen=True)
class Room:
    """How the speaker leaks into the microphone."""

    delay_ms: float = 40.0
    """Time from the speaker to the microphone's direct sound (20–60 ms in a laptop room)."""
    gain_db: float = -10.0
    """Level of the direct sound against the speaker signal (−6 to −20 dB)."""
    rt60_ms: float = 250.0
    """Reverb decay time to −60 dB (a small furnished room: 200–400 ms)."""
    reverb_db: float = -12.0
    """Energy of the reverberant tail against the direct sound."""
    seed: int = 7
    """Seed of the tail's noise, so a room is the same room on every run."""

    def impulse_response(self) -> np.ndarray:
        """The room's impulse response at :data:`RATE`, float32."""
        delay = round(self.delay_ms * RATE / 1000)
        tail_len = round(self.rt60_ms * RATE / 1000)
        ir = np.zeros(delay + 1 + tail_len, dtype=np.float64)
        direct = 10 ** (self.gain_db / 20)
        ir[delay] = direct
        if tail_len:
            t = np.arange(tail_len) / RATE
            decay = 10 ** (-3 * t / (self.rt60_ms / 1000))  # −60 dB at rt60
            noise = np.random.default_rng(self.seed).standard_normal(tail_len) * decay
            # Scale the tail so its energy is reverb_db below the direct sound's.
            noise *= direct * 10 ** (self.reverb_db / 20) / max(np.sqrt(np.sum(noise**2)), 1e-12)
            ir[delay + 1 :] = noise
        return ir.astype(np.float32)


def _write_ir(path: Path, ir: np.ndarray) -> None:
    pcm = np.clip(np.round(ir * 32767), -32768, 32767).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


_ROOM = """\
    {{ name = libpipewire-module-filter-chain
        args = {{
            node.description = "IRIS test room (speaker to microphone)"
            media.name       = "iris room echo"
            audio.rate       = {rate}
            audio.channels   = 1
            audio.position   = [ MONO ]
            filter.graph = {{
                nodes = [
                    {{ type = builtin label = convolver name = room
                       config = {{ filename = "{ir}" gain = 1.0 }} }}
                ]
            }}
            capture.props = {{
                node.name           = "iris_room_in"
                target.object       = "{speaker}"
                stream.capture.sink = true
                node.passive        = true
                node.dont-reconnect = true
            }}
            playback.props = {{
                node.name           = "iris_room_out"
                target.object       = "{micfeed}"
                node.dont-reconnect = true
            }}
        }}
    }}"""


class EchoPath:
    """The room between ``iris_speaker`` and ``iris_mic`` (:meth:`start` / :meth:`stop`)."""

    def __init__(self, bed: VirtualAudio, room: Room) -> None:
        self.bed = bed
        self.room = room
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> EchoPath:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 10.0) -> EchoPath:
        """Start the filter chain and wait until both its streams are linked."""
        assert self.bed.dir is not None, "the bed is not started"
        ir = self.bed.dir / "room-ir.wav"
        _write_ir(ir, self.room.impulse_response())
        conf = self.bed.dir / "room.conf"
        conf.write_text(client_conf(_ROOM.format(rate=RATE, ir=ir, speaker=SPEAKER, micfeed=MIC_FEED)))
        self._proc = self.bed._spawn("room", ["pipewire", "-c", str(conf)])
        deadline = time.monotonic() + timeout
        while not self._linked():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AudioBedError(f"the room's filter chain did not link\n{self.bed.logs()}")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        """Take the room away: the microphone hears only what is played into it again."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        self._proc = None

    def _linked(self) -> bool:
        try:
            out = subprocess.run(
                ["pw-link", "--links"], env=self.bed.child_env(), capture_output=True, text=True, timeout=5
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return False
        return "iris_room_in" in out and "iris_room_out" in out


@dataclass(frozen=True)
class Measured:
    """The echo a room really produced, found with a chirp."""

    delay_ms: float
    """Speaker to microphone, including the graph's own buffering."""
    gain_db: float
    """Peak of the echo's impulse response against the speaker signal."""


def measure(bed: VirtualAudio, seconds: float = 1.0) -> Measured:
    """Play a chirp into ``iris_speaker`` while recording ``iris_mic`` and find the echo by
    cross-correlation (the microphone must be otherwise quiet)."""
    assert bed.dir is not None
    rate = 16000
    t = np.arange(int(seconds * rate)) / rate
    chirp = 0.5 * np.sin(2 * np.pi * (200 * t + (3800 - 200) / (2 * seconds) * t**2))
    pad = np.zeros(rate // 2)
    signal = np.concatenate([pad, chirp, pad, pad])
    wav = bed.dir / "chirp.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((signal * 32767).astype(np.int16).tobytes())
    mic = SpeakerRecording(
        subprocess.Popen(
            [
                "parec",
                "-d",
                MIC,
                "--raw",
                f"--rate={rate}",
                "--channels=1",
                "--format=s16le",
                "--latency-msec=10",
            ],
            env=bed.child_env(),
            stdout=subprocess.PIPE,
            bufsize=0,
        ),  # fmt: skip
        rate,
        None,
    )
    spk = bed.record_speaker()
    try:
        if not mic.ready.wait(10):
            raise AudioBedError("parec of the microphone delivered no audio within 10 s")
        time.sleep(0.3)
        subprocess.run(["paplay", "-d", SPEAKER, str(wav)], env=bed.child_env(), check=True, timeout=30)
        time.sleep(0.3)
    finally:
        heard = mic.stop().astype(np.float64)
        out = spk.stop().astype(np.float64)
    at_speaker = _locate(out, chirp * 32767)
    at_mic = _locate(heard, chirp * 32767)
    if at_speaker is None or at_mic is None:
        raise AudioBedError("the chirp was not found (is the room started and the microphone quiet?)")
    # The two recordings started at different moments: compare on the wall clock (both
    # times are upper bounds found the same way, so their difference is fair).
    delay = mic.wall_time(at_mic[0]) - spk.wall_time(at_speaker[0])
    gain = 20 * np.log10(max(at_mic[1], 1e-9) / max(at_speaker[1], 1e-9))
    return Measured(delay_ms=delay * 1000, gain_db=float(gain))


def _locate(recording: np.ndarray, reference: np.ndarray) -> tuple[int, float] | None:
    """Where ``reference`` starts in ``recording`` and the matched amplitude ratio."""
    if len(recording) < len(reference):
        return None
    n = 1 << int(np.ceil(np.log2(len(recording) + len(reference))))
    corr = np.fft.irfft(np.fft.rfft(recording, n) * np.conj(np.fft.rfft(reference, n)), n)[: len(recording)]
    at = int(np.argmax(np.abs(corr)))
    scale = float(np.abs(corr[at]) / np.dot(reference, reference))
    return (at, scale) if scale > 0.01 else None
