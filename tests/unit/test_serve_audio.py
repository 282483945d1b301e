"""Audio and text a Wyoming client sends to ``iris serve``, through the parts themselves
(``AsrPart``, ``TtsPart``) with a recording connection: the format checks (strict types),
one buffer for an utterance however finely it is chunked, the byte budget checked before
anything is copied, stereo and odd rates converted once off the event loop, and the bounds
on synthesis text. A part that raised would fail these tests (nothing catches it here)."""

from __future__ import annotations

import asyncio
import threading
import time
import tracemalloc

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from iris_voice.wyoming import audio as serve_audio
from iris_voice.wyoming.audio import AudioFormatError, AudioIntake, audio_format
from iris_voice.wyoming.part import Connection
from iris_voice.wyoming.parts import AsrPart
from iris_voice.wyoming.tts import TtsPart
from tests.support.fakes_audio import FakeStt, FakeTts
from tests.unit.test_serve import read_until, serving


def connection() -> tuple[Connection, list[Event]]:
    """A connection whose written events are kept in the returned list."""
    sent: list[Event] = []

    async def write(event: Event) -> None:
        sent.append(event)

    return Connection(peer="test:1", write_event=write), sent


def fmt(rate=16000, width=2, channels=1) -> dict:
    return {"rate": rate, "width": width, "channels": channels}


# -- audio_format ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [(fmt(), (16000, 2, 1)), (fmt(8000), (8000, 2, 1)), (fmt(96000, 2, 2), (96000, 2, 2)),
     ({**fmt(44100), "timestamp": 12}, (44100, 2, 1))],
)  # fmt: skip
def test_audio_format_takes_plain_integers_in_range(data, expected):
    assert audio_format(data) == expected


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (fmt(rate="16000"), "rate"), (fmt(rate=16000.0), "rate"), (fmt(rate=True), "rate"),
        (fmt(rate=None), "rate"), (fmt(rate=[16000]), "rate"), (fmt(rate=1), "rate"),
        (fmt(rate=0), "rate"), (fmt(rate=-1), "rate"), (fmt(rate=7999), "rate"),
        (fmt(rate=96001), "rate"), (fmt(rate=10**30), "rate"),
        (fmt(width=0), "width"), (fmt(width=1), "width"), (fmt(width=4), "width"),
        (fmt(width=10**9), "width"), (fmt(width=True), "width"), (fmt(width="2"), "width"),
        (fmt(width=2.0), "width"),
        (fmt(channels=0), "channels"), (fmt(channels=3), "channels"), (fmt(channels=True), "channels"),
        (fmt(channels="1"), "channels"), (fmt(channels=1.0), "channels"), (fmt(channels=-2), "channels"),
        ({"width": 2, "channels": 1}, "rate"), ({"rate": 16000, "width": 2}, "channels"),
    ],
)  # fmt: skip
def test_audio_format_refuses_other_types_and_values_naming_the_field(data, field):
    with pytest.raises(AudioFormatError) as err:
        audio_format(data)
    assert isinstance(err.value, ValueError)
    assert str(err.value).startswith(f"audio {field} ")
    assert len(str(err.value)) < 120  # a huge value is not echoed whole


@pytest.mark.parametrize("data", [None, [16000, 2, 1], "rate=16000", 16000])
def test_audio_format_refuses_data_that_is_not_an_object(data):
    with pytest.raises(AudioFormatError, match="must be an object"):
        audio_format(data)


# -- AudioIntake ----------------------------------------------------------------------------


async def test_partial_frames_are_rejoined_across_chunks_and_a_trailing_one_dropped():
    mono = AudioIntake(16000, 1, 1.0)
    for payload in (b"\x01", b"\x00\x02", b"\x00\x03"):  # samples 1, 2 and half of 3
        assert mono.add(payload)
    assert (mono.nbytes, mono.frames) == (5, 2)
    out = await mono.to_16k_mono()
    assert out.dtype == np.int16 and out.tolist() == [1, 2]
    assert mono.nbytes == 0  # taken

    stereo = AudioIntake(16000, 2, 1.0)
    frames = np.array([[100, 300], [-100, -300], [7, 9]], "<i2").tobytes()
    for i in range(0, len(frames) - 1, 3):  # 3-byte pieces; the last frame comes incomplete
        stereo.add(frames[i : min(i + 3, len(frames) - 1)])
    assert stereo.frames == 2
    assert (await stereo.to_16k_mono()).tolist() == [200, -200]  # the channels averaged


async def test_overflow_is_refused_before_anything_is_copied():
    intake = AudioIntake(16000, 1, 2.0)
    assert intake.max_bytes == 2 * 16000 * 2
    assert intake.add(bytes(intake.max_bytes - 2))
    huge = bytes(20_000_000)
    tracemalloc.start()
    try:
        refused = intake.add(huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused is False and intake.overflow
    assert peak < 100_000  # neither the 20 MB payload nor a conversion of it was copied
    assert intake.nbytes == 0  # what was held is freed too
    assert intake.add(b"\0\0") is False  # and it stays refused
    assert len(await intake.to_16k_mono("float32")) == 0


def test_the_budget_is_exact_in_whole_frames():
    intake = AudioIntake(8000, 2, 1.5)
    assert intake.max_bytes == 12000 * 4
    assert intake.add(bytes(intake.max_bytes))
    assert not intake.overflow and intake.seconds == 1.5
    assert intake.add(b"\0") is False and intake.overflow


@pytest.mark.parametrize(("rate", "channels", "seconds"), [(1, 1, 1.0), (16000, 3, 1.0), (16000, 1, 0)])
def test_an_intake_is_never_made_for_an_unsupported_format(rate, channels, seconds):
    with pytest.raises(AudioFormatError):
        AudioIntake(rate, channels, seconds)


async def test_the_conversion_runs_in_a_worker_thread(monkeypatch):
    threads = []
    convert = serve_audio._convert

    def recording(*args):
        threads.append(threading.current_thread())
        return convert(*args)

    monkeypatch.setattr(serve_audio, "_convert", recording)
    intake = AudioIntake(48000, 2, 1.0)
    intake.add(bytes(4 * 4800))
    out = await intake.to_16k_mono("float32")
    assert out.dtype == np.float32 and len(out) == 1600
    assert threads and threads[0] is not threading.main_thread()


# -- AsrPart --------------------------------------------------------------------------------


def asr(stt: FakeStt | None = None, max_utterance_s: float = 30.0) -> AsrPart:
    return AsrPart(stt or FakeStt("heard"), language="en", max_utterance_s=max_utterance_s)


async def test_240k_two_byte_chunks_go_into_one_buffer_without_per_chunk_objects():
    stt = FakeStt("fine-grained")
    part, (conn, sent) = asr(stt), connection()
    await part.handle(Transcribe().event(), conn)
    await part.handle(AudioStart(16000, 2, 1).event(), conn)
    n = 240_000  # 15 s at 16 kHz, one sample per chunk
    data = fmt()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        for i in range(n):
            await part.handle(Event("audio-chunk", data, (i % 30000).to_bytes(2, "little")), conn)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - started
    intake = conn.state["asr"].intake
    assert type(intake._pcm) is bytearray and len(intake._pcm) == 2 * n and intake.frames == n
    # 480 kB of audio in one bytearray (with its growth slack). One array, or even one bytes
    # object, per chunk costs 35-110 bytes each: 8-26 MB for these chunks.
    assert peak < 1_500_000, peak
    assert elapsed < 60  # a loose bound for a busy machine: about 10 µs a chunk here
    await part.handle(AudioStop().event(), conn)
    assert [e.type for e in sent] == ["transcript"]
    (audio,) = stt.audio
    assert audio.dtype == np.float32 and len(audio) == n
    assert np.array_equal(np.round(audio[:5] * 32768), [0, 1, 2, 3, 4])


async def test_stereo_48_khz_is_transcribed_as_16_khz_mono_of_the_same_length():
    stt = FakeStt("stereo")
    part, (conn, sent) = asr(stt), connection()
    t = np.arange(48000 * 3 // 2)  # 1.5 s
    left = (np.sin(t * 2 * np.pi * 300 / 48000) * 8000).astype(np.int16)
    pcm = np.stack([left, np.zeros_like(left)], axis=1).astype("<i2").tobytes()
    await part.handle(Transcribe(language="de").event(), conn)
    await part.handle(AudioStart(48000, 2, 2).event(), conn)
    for i in range(0, len(pcm), 1001):  # odd pieces: frames split across chunks
        await part.handle(AudioChunk(48000, 2, 2, pcm[i : i + 1001]).event(), conn)
    await part.handle(AudioStop().event(), conn)
    transcript = Transcript.from_event(sent[-1])
    assert (transcript.text, transcript.language) == ("stereo", "de")
    (audio,) = stt.audio
    assert audio.dtype == np.float32 and audio.ndim == 1 and abs(len(audio) - 24000) <= 16
    peak_hz = np.argmax(np.abs(np.fft.rfft(audio))) * 16000 / len(audio)
    assert abs(peak_hz - 300) < 5  # the same tone: not sped up or slowed down
    assert 0.1 < np.max(np.abs(audio)) < 0.14  # 4000/32768: the silent channel averaged in


@pytest.mark.parametrize(
    "data",
    [fmt(rate=1), fmt(rate="16000"), fmt(rate=10**30), fmt(width=1), fmt(channels=6), fmt(rate=True), {}],
)
async def test_an_audio_start_in_another_format_gets_bad_audio_and_ends_the_request(data):
    stt = FakeStt("never")
    part, (conn, sent) = asr(stt), connection()
    await part.handle(Transcribe().event(), conn)
    assert await part.handle(Event("audio-start", data), conn)
    assert [(e.type, e.data["code"]) for e in sent] == [("error", "bad-audio")]
    assert "16-bit mono or stereo PCM" in sent[0].data["text"] and "audio " in sent[0].data["text"]
    assert "asr" not in conn.state
    # the audio after it is not this part's any more
    assert not await part.handle(AudioChunk(1, 2, 1, b"\0" * 64).event(), conn)
    assert not await part.handle(AudioStop().event(), conn)
    assert stt.audio == []


async def test_chunks_with_invalid_or_other_formats_are_skipped_and_never_raise():
    stt = FakeStt("only the good one")
    part, (conn, sent) = asr(stt), connection()
    await part.handle(Transcribe().event(), conn)
    await part.handle(AudioStart(16000, 2, 1).event(), conn)
    bad = [fmt(rate="16000"), fmt(rate=0), fmt(rate=-1), fmt(rate=10**30), fmt(rate=16000.0),
           fmt(width=0), fmt(width=10**9), fmt(width=True), fmt(channels=2), fmt(rate=22050),
           fmt(channels=None), {"rate": 16000}, {}]  # fmt: skip
    for data in bad:
        assert await part.handle(Event("audio-chunk", data, b"\1\0" * 800), conn)
    assert await part.handle(Event("audio-chunk", fmt(), None), conn)  # no payload: nothing
    assert await part.handle(AudioChunk(16000, 2, 1, b"\2\0" * 1600).event(), conn)
    assert conn.state["asr"].skipped == len(bad)
    await part.handle(AudioStop().event(), conn)
    assert [e.type for e in sent] == ["transcript"]
    assert len(stt.audio[0]) == 1600 and np.all(stt.audio[0] == np.float32(2 / 32768))


async def test_too_much_audio_is_refused_once_and_nothing_is_transcribed():
    stt = FakeStt("never")
    part, (conn, sent) = asr(stt, max_utterance_s=2), connection()
    await part.handle(Transcribe().event(), conn)
    await part.handle(AudioStart(8000, 2, 1).event(), conn)
    for _ in range(5):  # 1.25 s each
        await part.handle(AudioChunk(8000, 2, 1, bytes(20000)).event(), conn)
    assert [(e.type, e.data["code"]) for e in sent] == [("error", "too-long")]
    assert "serve.max_utterance_s = 2 s" in sent[0].data["text"]
    assert conn.state["asr"].intake.nbytes == 0
    assert await part.handle(AudioStop().event(), conn)
    assert len(sent) == 1 and stt.audio == [] and "asr" not in conn.state


async def test_an_empty_utterance_is_an_empty_transcript_without_asking_whisper():
    stt = FakeStt("never")
    part, (conn, sent) = asr(stt), connection()
    for event in (Transcribe().event(), AudioStart(16000, 2, 1).event(), AudioStop().event()):
        await part.handle(event, conn)
    assert Transcript.from_event(sent[-1]).text == "" and stt.audio == []


# -- TtsPart --------------------------------------------------------------------------------


def tts(max_chars: int = 40) -> tuple[TtsPart, FakeTts]:
    engine = FakeTts(seconds_per_sentence=0.05)
    return TtsPart(engine, language="en", max_synthesize_chars=max_chars), engine


@pytest.mark.parametrize(
    ("text", "code", "words"),
    [(123, "bad-text", "must be a string, not a number"), (["a"], "bad-text", "not a list"),
     (None, "bad-text", "not missing"), ("x" * 41, "too-long", "serve.max_synthesize_chars = 40")],
)  # fmt: skip
async def test_a_synthesize_that_is_not_a_short_string_gets_an_error_and_the_next_one_is_spoken(
    text, code, words
):
    part, engine = tts()
    conn, sent = connection()
    data = {} if text is None else {"text": text}
    assert await part.handle(Event("synthesize", data), conn)
    assert [(e.type, e.data["code"]) for e in sent] == [("error", code)]
    assert words in sent[0].data["text"] and sent[0].data["text"].startswith("synthesize text")
    sent.clear()
    await part.handle(Synthesize(text="x" * 39 + ".").event(), conn)  # exactly the limit
    assert [e.type for e in sent][:: len(sent) - 1] == ["audio-start", "audio-stop"]
    assert engine.spoken == ["x" * 39 + "."]


async def test_a_streamed_text_is_capped_in_all_and_the_stream_still_ends():
    part, engine = tts(max_chars=40)
    conn, sent = connection()
    await part.handle(SynthesizeStart().event(), conn)
    await part.handle(SynthesizeChunk(text="First sentence here. And ").event(), conn)  # 25
    assert [e.type for e in sent][0] == "audio-start" and engine.spoken == ["First sentence here."]
    sent.clear()
    await part.handle(SynthesizeChunk(text="a second that goes on").event(), conn)  # 46 in all
    assert [(e.type, e.data["code"]) for e in sent] == [("error", "too-long")]
    assert sent[0].data["text"].startswith("the text streamed since synthesize-start is longer")
    for event in (SynthesizeChunk(text=" and on.").event(), Synthesize(text="x").event()):
        assert await part.handle(event, conn)  # the rest of the stream: ignored
    await part.handle(SynthesizeStop().event(), conn)
    assert [e.type for e in sent] == ["error", "synthesize-stopped"]
    assert engine.spoken == ["First sentence here."]  # "And a second" never spoken
    sent.clear()
    await part.handle(SynthesizeStart().event(), conn)  # a new stream starts afresh
    await part.handle(Event("synthesize-chunk", {"text": 5}), conn)
    await part.handle(SynthesizeChunk(text="Ignored.").event(), conn)
    await part.handle(SynthesizeStop().event(), conn)
    assert [(e.type, e.data.get("code")) for e in sent] == [
        ("error", "bad-text"),
        ("synthesize-stopped", None),
    ]
    sent.clear()
    await part.handle(Synthesize(text="Still here.").event(), conn)
    assert engine.spoken[-1] == "Still here." and sent[-1].type == "audio-stop"


async def test_service_parts_passes_the_configured_limit(tmp_path):
    from iris_voice.app.assembly import Engines, build_app
    from iris_voice.config import Config, ServeConfig, ToolsConfig
    from iris_voice.wyoming.parts import service_parts
    from tests.support.fakes import ScriptedBackend
    from tests.support.fakes_audio import FakeVad

    tools = ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db"))
    cfg = Config(tools=tools, serve=ServeConfig(max_synthesize_chars=123))
    engines = Engines(FakeStt(), FakeTts(), FakeVad(), None)
    app = build_app(cfg, speech=True, engines=engines, backend=ScriptedBackend())
    try:
        (part,) = [p for p in service_parts(app) if isinstance(p, TtsPart)]
    finally:
        await app.close()
    assert part.max_chars == 123
    assert TtsPart(FakeTts(), language="en").max_chars == 2000  # the default


class SlowStt(FakeStt):
    """A decode that takes a while (the first one runs while the others wait their turn)."""

    async def transcribe(self, audio, lead: str = "") -> str:
        await asyncio.sleep(0.5)
        return await super().transcribe(audio, lead)


async def test_a_client_that_left_before_its_decode_began_is_not_decoded_for(tmp_path):
    # N4: 30 clients that closed right after audio-stop cost 15 s of decodes nobody read.
    stt = SlowStt(*["words"] * 10)
    async with serving(tmp_path, stt=stt) as (_svc, port, _app):
        pcm = (np.sin(np.arange(16000) / 8) * 8000).astype(np.int16).tobytes()
        for _ in range(5):
            async with AsyncTcpClient("127.0.0.1", port) as client:
                await client.write_event(Transcribe(language="en").event())
                await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
                await client.write_event(AudioChunk(rate=16000, width=2, channels=1, audio=pcm).event())
                await client.write_event(AudioStop().event())
            # gone at once, not waiting for its transcript
        async with AsyncTcpClient("127.0.0.1", port) as client:  # one that waits is answered
            await client.write_event(Transcribe(language="en").event())
            await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            await client.write_event(AudioChunk(rate=16000, width=2, channels=1, audio=pcm).event())
            await client.write_event(AudioStop().event())
            answer = await read_until(client, "transcript")
    assert answer[-1].data["text"] == "words"
    # the first decode began before its client was seen to leave; the others waited and were skipped
    assert len(stt.audio) < 6, len(stt.audio)
