"""Local speech engines vs the same models behind Wyoming servers on loopback: the protocol's cost.

Starts real ``wyoming-faster-whisper`` (IRIS's packaged tiny.en, int8, beam 1, no VAD,
2 threads, English) and ``wyoming-piper`` (the packaged joe voice) as child processes
(``tools/testbed/wyoming_servers.py``), then measures, runs interleaved (local, remote,
then remote, local on the next round) so load from other processes falls on both:

1. STT: the time to transcribe each spoken benchmark question, IRIS's faster-whisper in
   process vs ``WyomingTranscriber`` (whole utterance: ``transcribe`` + audio → transcript);
   and the same model called here exactly as the server calls it, which leaves the
   protocol alone in the difference.
2. TTS: time to the first audio chunk of each reply sentence, Piper in process vs
   ``WyomingSynthesizer`` (the rest of the audio is consumed, not timed).
3. The protocol's floor: connect + ``describe`` → ``info`` + close, on the same servers.
4. Whole turns (``iris ask --wav``'s ``FileTurns``, fast-path questions, no language model):
   first audio from the end of speech, local engines vs remote engines, with one decode
   at the end of speech and with IRIS's default ``stt.incremental`` + ``speculative``
   (pieces decoded at pauses while the user speaks: remotely, one request each).

The overhead is remote minus local for the same utterance in the same round: p50/p95 over
all pairs (goal: at most 30 ms p50 on loopback). What differs besides the protocol: the
Whisper server writes the audio to a WAV file and reads it back (PyAV) and decodes with
Whisper's defaults ``condition_on_previous_text=True`` and timestamps on (IRIS: off, off);
the Piper server splits sentences itself and sends 1024-sample chunks (IRIS: one chunk per
sentence). So STT and TTS are measured once more against IRIS's own ``iris serve``
(``tools/testbed/hubs.py``), whose decode and voice are IRIS's: there the difference is the
protocol alone. ``--rounds N`` (default 3) sets the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

from iris_voice.config import Config, SttConfig, TtsConfig, parse
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.tts import PiperSynthesizer
from iris_voice.speech.wyoming_client import describe
from iris_voice.speech.wyoming_stt import WyomingTranscriber, stt_endpoint
from iris_voice.speech.wyoming_tts import WyomingSynthesizer
from tools.bench.stats import p50, p95
from tools.testbed.fixtures import ensure_fixtures, fixture, read_wav
from tools.testbed.hubs import hub_process, stop_process
from tools.testbed.wyoming_servers import speech_servers

QUESTIONS = ["bench_time_tokyo", "bench_time_berlin", "bench_date_today", "bench_multiply",
             "bench_percent", "bench_divide"]  # fmt: skip
"""Spoken benchmark questions (with the wake word), 2–3 s each."""
REPLIES = [
    "It is ten past nine in Tokyo.",
    "Today is Wednesday, the twenty-fifth of November.",
    "Twenty three times forty seven is one thousand and eighty one.",
    "Fifteen percent of eighty is twelve.",
    "I set a pasta timer for eight minutes.",
]
"""Reply sentences as IRIS speaks them (one sentence per synthesis)."""
TURNS = ["bench_time_tokyo", "bench_multiply", "bench_date_today"]
"""Fast-path questions for whole turns (answered without the language model)."""


def line(label: str, local: list[float], remote: list[float]) -> None:
    """Medians of both, and the paired overhead's p50/p95 (ms)."""
    diff = [r - loc for loc, r in zip(local, remote, strict=True)]
    loc, rem, mid, high = p50(local), p50(remote), p50(diff), p95(diff)
    print(f"  {label:42} local {loc:7.1f}  remote {rem:7.1f}  overhead p50 {mid:+6.1f}  p95 {high:+6.1f}"
          f"  (n={len(diff)})")  # fmt: skip


class ServerStyleDecode:
    """IRIS's loaded tiny.en called the way wyoming-faster-whisper calls it: the audio
    written to a WAV file and decoded from the path, Whisper's defaults otherwise
    (``condition_on_previous_text`` and timestamps on), beam 1, English, no VAD. Remote
    minus this is the protocol alone; remote minus IRIS's own call is what a user sees."""

    def __init__(self, local: FasterWhisperTranscriber, tmp: Path) -> None:
        self.local = local
        self.wav = tmp / "speech.wav"

    def _decode(self, audio: np.ndarray) -> str:
        with wave.open(str(self.wav), "wb") as w:  # as the server writes what it received
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(np.asarray(audio, dtype="<i2").tobytes())
        with self.local._lock:  # one decode at a time on this model, as IRIS's own
            model = self.local._load()
            segments, _info = model.transcribe(
                str(self.wav), beam_size=1, language="en", initial_prompt=None, vad_filter=False,
                vad_parameters=None,
            )  # fmt: skip
            return " ".join(" ".join(segment.text for segment in segments).split())

    async def transcribe(self, audio: np.ndarray, lead: str = "") -> str:
        """Text of int16 ``audio`` in a worker thread (``lead`` is not used)."""
        return await asyncio.to_thread(self._decode, audio)


async def bench_stt(stt_uri: str, rounds: int, tmp: Path, server_style: bool = True) -> None:
    """Transcription time of each question: IRIS's local call, the server's call made
    locally (``server_style``: a server that decodes otherwise than IRIS), and the remote
    server; interleaved, the order rotating every round."""
    local = FasterWhisperTranscriber(SttConfig())
    remote = WyomingTranscriber(SttConfig(engine="wyoming", uri=stt_uri, timeout_s=60))
    engines: dict = {"local": local, "remote": remote}
    if server_style:
        engines["server-style"] = ServerStyleDecode(local, tmp)
    await local.warmup()
    await remote.warmup()
    audio = {name: read_wav(name) for name in QUESTIONS}
    times: dict[str, list[float]] = {name: [] for name in engines}
    sent: list[float] = []
    texts: dict[str, dict[str, str]] = {name: {} for name in engines}
    order = list(engines)
    for _ in range(rounds):
        for name in QUESTIONS:
            order = order[1:] + order[:1]  # each engine first, second and last in turn
            for which in order:
                start = time.perf_counter()
                texts[which][name] = await engines[which].transcribe(audio[name])
                times[which].append((time.perf_counter() - start) * 1000)
                if which == "remote" and remote.sent_ms is not None:
                    sent.append(remote.sent_ms)
    print(f"\nSTT: {len(QUESTIONS)} spoken questions x {rounds} rounds, ms to the transcript "
          f"(tiny.en int8 beam 1, 2 threads both)")  # fmt: skip
    line("IRIS's decode vs remote (what you get)", times["local"], times["remote"])
    if server_style:
        line("server's decode here vs remote (protocol)", times["server-style"], times["remote"])
    print(f"  of the remote time, connecting and sending the audio: p50 {p50(sent):.2f}  "
          f"p95 {p95(sent):.2f}")  # fmt: skip
    for other in [e for e in engines if e != "remote"]:
        same = sum(texts[other][n].lower() == texts["remote"][n].lower() for n in QUESTIONS)
        print(f"  same transcript as the remote server: {other} {same}/{len(QUESTIONS)}")
    for name in QUESTIONS:
        if texts["local"][name].lower() != texts["remote"][name].lower():
            print(f"    {name}: local {texts['local'][name]!r} | remote {texts['remote'][name]!r}")


async def first_chunk(engine, text: str) -> float:
    """ms to the first chunk; the rest is consumed."""
    start = time.perf_counter()
    first = None
    async for _chunk in engine.stream(text):
        if first is None:
            first = (time.perf_counter() - start) * 1000
    return first or float("nan")


async def bench_tts(tts_uri: str, rounds: int) -> None:
    """Time to the first chunk of each reply sentence, local vs remote (both request shapes)."""
    local = PiperSynthesizer(TtsConfig())
    remote = WyomingSynthesizer(TtsConfig(engine="wyoming", uri=tts_uri))
    await local.warmup()
    await remote.warmup()
    print(f"\nTTS: {len(REPLIES)} reply sentences x {rounds} rounds, ms to the first audio chunk "
          f"(joe medium, {remote.sample_rate} Hz)")  # fmt: skip
    streaming = remote.streaming
    for shape in [True, False] if streaming else [False]:
        remote.streaming = shape
        times: dict[str, list[float]] = {"local": [], "remote": []}
        for r in range(rounds):
            for text in REPLIES:
                order = ("local", "remote") if r % 2 == 0 else ("remote", "local")
                for which in order:
                    times[which].append(await first_chunk(local if which == "local" else remote, text))
        label = "first chunk (synthesize-start/chunk/stop)" if shape else "first chunk (synthesize)"
        line(label, times["local"], times["remote"])
    remote.streaming = streaming


async def bench_floor(stt_uri: str, n: int = 50) -> None:
    """connect + describe → info + close."""
    endpoint = stt_endpoint(SttConfig(engine="wyoming", uri=stt_uri))
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await describe(endpoint)
        times.append((time.perf_counter() - start) * 1000)
    print(f"\nProtocol floor: connect + describe -> info + close, ms (n={n}): "
          f"p50 {p50(times):.2f}  p95 {p95(times):.2f}")  # fmt: skip


async def bench_turns(stt_uri: str, tts_uri: str, rounds: int, tmp: Path) -> None:
    """First audio of whole fast-path turns: local vs remote engines (and IRIS's default)."""
    from iris_voice.app.filemode import FileTurns

    def config(engine: str, incremental: bool = False) -> Config:
        stt: dict = {"incremental": incremental}
        tts: dict = {}
        if engine == "wyoming":
            stt.update(engine="wyoming", uri=stt_uri, timeout_s=60.0)
            tts.update(engine="wyoming", uri=tts_uri)
        tools = {"timezone": "UTC", "timers_db": str(tmp / f"{engine}.db")}
        llm = {"host": "http://127.0.0.1:9", "warmup": False}  # nothing there: the fast path answers
        return parse({"stt": stt, "tts": tts, "tools": tools, "llm": llm})

    setups = {
        "local": config("local"),
        "remote": config("wyoming"),
        "local+incremental": config("local", True),
        "remote+incremental": config("wyoming", True),
    }
    runners = {name: FileTurns(cfg) for name, cfg in setups.items()}
    first: dict[str, list[float]] = {name: [] for name in setups}
    stt_ms: dict[str, list[float]] = {name: [] for name in setups}
    tts_ms: dict[str, list[float]] = {name: [] for name in setups}
    try:
        for runner in runners.values():
            await runner.warmup()
        for r in range(rounds):
            for name in TURNS:
                order = list(setups) if r % 2 == 0 else list(reversed(setups))
                for which in order:
                    turns = await runners[which].run(fixture(name))
                    for t in turns:
                        if t.get("first_audio_ms"):
                            first[which].append(t["first_audio_ms"])
                            stt_ms[which].append(t["timings_ms"]["stt"])
                            tts_ms[which].append(t["timings_ms"]["tts_first_audio"])
    finally:
        for runner in runners.values():
            await runner.close()
    print(f"\nWhole turns: {len(TURNS)} fast-path questions x {rounds} rounds, first audio ms "
          "from the end of speech (VAD hangover included)")  # fmt: skip
    line("first audio, local vs remote", first["local"], first["remote"])
    line("  of which STT after the end of speech", stt_ms["local"], stt_ms["remote"])
    line("  of which TTS to the first chunk", tts_ms["local"], tts_ms["remote"])
    print("  with stt.incremental + speculative (IRIS's default: decoding at pauses while the user speaks)")
    line("first audio, local vs remote", first["local+incremental"], first["remote+incremental"])
    line("  of which STT after the end of speech", stt_ms["local+incremental"], stt_ms["remote+incremental"])


async def run(rounds: int) -> None:
    """Every part, on one pair of servers; then STT and TTS once more against another
    IRIS's ``iris serve``, which decodes and speaks as IRIS does here."""
    ensure_fixtures()
    with speech_servers() as (stt, tts), tempfile.TemporaryDirectory(prefix="iris-bench-wy-") as tmp:
        print(f"servers: wyoming-faster-whisper at {stt.uri}, wyoming-piper at {tts.uri}")
        await bench_floor(stt.uri)
        await bench_stt(stt.uri, rounds, Path(tmp))
        await bench_tts(tts.uri, rounds)
        await bench_turns(stt.uri, tts.uri, rounds, Path(tmp))
    with tempfile.TemporaryDirectory(prefix="iris-bench-serve-") as tmp:
        config = Path(tmp) / "serve.toml"
        config.write_text('[tools]\ntimezone = "UTC"\n[llm]\nhost = "http://127.0.0.1:9"\n')
        proc, port = hub_process(config, dict(os.environ), Path(tmp) / "serve.log")
        try:
            uri = f"tcp://127.0.0.1:{port}"
            print(f"\nserver: iris serve at {uri} (IRIS's own decode and voice on the other side)")
            await bench_stt(uri, rounds, Path(tmp), server_style=False)
            await bench_tts(uri, rounds)
        finally:
            stop_process(proc)


def main() -> None:
    """``python -m tools.bench.wyoming_engines [--rounds N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.rounds))


if __name__ == "__main__":
    main()
