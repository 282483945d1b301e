"""Remote speech engines when the server is gone, hung or failing: a quick ``SpeechError``
naming the key, one clear sentence (or a chime) from the pipeline, and the next turn
working again. No models: the servers here are a closed port, a socket that never
answers, and a few lines of the Wyoming wire format."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
import pytest

from iris_voice.audio.chime import chime
from iris_voice.config import LlmConfig, SttConfig, TtsConfig, parse
from iris_voice.errors import Code, ConfigError, SpeechError
from iris_voice.events import EventBus
from iris_voice.speech.wyoming_stt import WyomingTranscriber
from iris_voice.speech.wyoming_tts import WyomingSynthesizer
from iris_voice.tools.registry import ToolRegistry
from iris_voice.voice.listener import Listener
from iris_voice.voice.pipeline import VoicePipeline
from iris_voice.voice.servergone import STT_UNREACHABLE
from iris_voice.voice.speaker import ReplySpeaker
from tests.support.fakes import ScriptedBackend, chat_assistant
from tests.support.fakes_audio import (
    SILENCE,
    SPEECH,
    WAKE,
    FakeSink,
    FakeStt,
    FakeTts,
    FakeVad,
    FakeWake,
    ScriptSource,
    frames,
)
from tools.testbed.servers import free_port

SECOND = np.zeros(16000, dtype=np.float32)


def stt_at(uri: str, timeout: float = 0.5) -> WyomingTranscriber:
    return WyomingTranscriber(SttConfig(engine="wyoming", uri=uri, timeout_s=timeout))


def tts_at(uri: str, timeout: float = 0.5) -> WyomingSynthesizer:
    return WyomingSynthesizer(TtsConfig(engine="wyoming", uri=uri, timeout_s=timeout))


async def speak_all(tts: WyomingSynthesizer, text: str) -> list[np.ndarray]:
    return [chunk async for chunk in tts.stream(text)]


# -- configuration ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("section", "value", "key"),
    [
        ({"stt": {"engine": "wyoming"}}, "is needed", "stt.uri"),
        ({"tts": {"engine": "wyoming", "uri": "http://box:10200"}}, "tcp://HOST:PORT", "tts.uri"),
        ({"tts": {"uri": "tcp://box:70000"}}, "port out of range", "tts.uri"),
        ({"stt": {"engine": "remote"}}, "local", "stt.engine"),
        ({"stt": {"timeout_s": 0}}, "greater than 0", "stt.timeout_s"),
    ],
)
def test_config_errors_name_the_key(section, value, key):
    with pytest.raises(ConfigError) as err:
        parse(section)
    assert any(p.startswith(key) and value in p for p in err.value.problems), err.value.problems


def test_config_accepts_tcp_and_unix_servers():
    cfg = parse({"stt": {"engine": "wyoming", "uri": "tcp://[::1]:10300"}, "tts": {"engine": "wyoming",
                 "uri": "unix:///run/user/1000/piper.sock"}})  # fmt: skip
    assert (cfg.stt.uri, cfg.tts.uri) == ("tcp://[::1]:10300", "unix:///run/user/1000/piper.sock")
    assert parse({}).stt.engine == "local" and parse({}).tts.engine == "local"


def test_a_remote_engine_needs_no_local_model_files(monkeypatch):
    from iris_voice.app import checks

    def missing(*_a, **_k):
        raise AssertionError("a local model was looked up for a remote engine")

    monkeypatch.setattr(checks, "whisper_model_dir", missing)
    monkeypatch.setattr(checks, "piper_voice_files", missing)
    audio = {"activation": "push_to_talk", "barge_in": "off", "end_of_turn": "silence"}
    cfg = parse({"stt": {"engine": "wyoming", "uri": "tcp://box:10300"},
                 "tts": {"engine": "wyoming", "uri": "tcp://box:10200"}, "audio": audio})  # fmt: skip
    assert checks.speech_problems(cfg) == []


def test_the_assembly_builds_the_remote_adapters():
    from iris_voice.app.assembly import build_synthesizer, build_transcriber

    cfg = parse({"stt": {"engine": "wyoming", "uri": "tcp://box:10300"},
                 "tts": {"engine": "wyoming", "uri": "tcp://box:10200"}})  # fmt: skip
    from iris_voice.speech.stt_stream import StreamingTranscriber

    assert isinstance(build_synthesizer(cfg), WyomingSynthesizer)
    wrapped = build_transcriber(cfg)  # stt.incremental: pieces decoded remotely while the user speaks
    assert isinstance(wrapped, StreamingTranscriber) and isinstance(wrapped.inner, WyomingTranscriber)
    whole = build_transcriber(
        cfg.model_copy(update={"stt": cfg.stt.model_copy(update={"incremental": False})})
    )
    assert isinstance(whole, WyomingTranscriber) and not whole.supports_streaming


def test_a_length_scale_the_server_cannot_take_is_said_once(caplog):
    cfg = parse({"tts": {"engine": "wyoming", "uri": "tcp://box:10200", "length_scale": 1.3}})
    WyomingSynthesizer(cfg.tts)
    said = [r.getMessage() for r in caplog.records if "length_scale" in r.getMessage()]
    assert len(said) == 1 and "--length-scale 1.3" in said[0]
    caplog.clear()
    WyomingSynthesizer(parse({"tts": {"engine": "wyoming", "uri": "tcp://box:10200"}}).tts)
    assert not [r for r in caplog.records if "length_scale" in r.getMessage()]


# -- servers that are gone or hung ----------------------------------------------------------
async def test_nothing_listening_fails_at_once_naming_the_key():
    uri = f"tcp://127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(SpeechError) as stt_err:
        await stt_at(uri, timeout=5).transcribe(SECOND)
    with pytest.raises(SpeechError) as tts_err:
        await speak_all(tts_at(uri, timeout=5), "Hello there.")
    assert time.monotonic() - start < 2  # refused, not timed out
    assert stt_err.value.code == Code.STT_UNREACHABLE and stt_err.value.message.startswith("stt.uri: ")
    assert tts_err.value.code == Code.TTS_UNREACHABLE and tts_err.value.message.startswith("tts.uri: ")
    assert uri in stt_err.value.message


async def test_a_server_that_never_answers_times_out_naming_the_timeout_key():
    async def accept_and_ignore(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # reads whatever comes, answers nothing

    server = await asyncio.start_server(accept_and_ignore, "127.0.0.1", 0)
    uri = f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        for call, key in [
            (lambda: stt_at(uri, 0.4).transcribe(SECOND), "stt.timeout_s = 0.4"),
            (lambda: speak_all(tts_at(uri, 0.4), "Hello."), "tts.timeout_s = 0.4"),
        ]:
            start = time.monotonic()
            with pytest.raises(SpeechError) as err:
                await call()
            assert 0.3 < time.monotonic() - start < 2.0
            assert key in err.value.message, err.value.message
    finally:
        server.close()
        await server.wait_closed()


async def test_pieces_of_one_utterance_do_not_each_wait_for_a_hung_server():
    async def accept_and_ignore(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    server = await asyncio.start_server(accept_and_ignore, "127.0.0.1", 0)
    stt = stt_at(f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}", 0.4)
    try:
        with pytest.raises(SpeechError):
            await stt.transcribe(SECOND)  # waits the timeout
        start = time.monotonic()
        with pytest.raises(SpeechError) as err:
            await stt.transcribe(SECOND)  # the same utterance's tail: at once
        assert time.monotonic() - start < 0.1 and "stt.timeout_s" in err.value.message
        stt._failed_at -= 10  # the next question, seconds later, tries the server again
        start = time.monotonic()
        with pytest.raises(SpeechError):
            await stt.transcribe(SECOND)
        assert time.monotonic() - start > 0.3
    finally:
        server.close()
        await server.wait_closed()


async def test_warmup_of_a_dead_server_does_not_stop_iris(caplog):
    uri = f"tcp://127.0.0.1:{free_port()}"
    stt, tts = stt_at(uri), tts_at(uri)
    await stt.warmup()
    await tts.warmup()  # no exception: the daemon starts and retries each turn
    assert tts.sample_rate == 22050
    assert stt.reach.down and tts.reach.down
    assert "stt.uri" in caplog.text and "tts.uri" in caplog.text


def _line(event_type: str, data: dict | None = None, payload: bytes = b"") -> bytes:
    header: dict = {"type": event_type, "version": "1.10.2"}
    if data:
        header["data"] = data
    if payload:
        header["payload_length"] = len(payload)
    return json.dumps(header).encode() + b"\n" + payload


async def test_an_error_event_and_a_rate_change_from_the_server():
    """A TTS server that fails the first request (``error`` event) and then answers at
    16 kHz, while IRIS plays at the 22050 Hz it learned: the audio is resampled."""
    requests = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        requests.append(json.loads(line)["type"])
        if len(requests) == 1:
            writer.write(_line("error", {"text": "voice not found", "code": "voice-missing"}))
        else:
            fmt = {"rate": 16000, "width": 2, "channels": 1}
            tone = (np.sin(np.arange(8000) / 5) * 8000).astype("<i2").tobytes()
            writer.write(_line("audio-start", fmt) + _line("audio-chunk", fmt, tone) + _line("audio-stop"))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    tts = tts_at(f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}", 2.0)
    try:
        with pytest.raises(SpeechError) as err:
            await speak_all(tts, "Hello.")
        assert "voice not found" in err.value.message and err.value.message.startswith("tts.uri")
        assert tts.reach.down is not None
        audio = np.concatenate(await speak_all(tts, "Hello again."))
        assert abs(len(audio) - 8000 * 22050 / 16000) < 200  # half a second, at 22050 Hz
        assert tts.reach.down is None  # answered again
    finally:
        server.close()
        await server.wait_closed()
    assert requests == ["synthesize", "synthesize"]


# -- the pipeline: one clear sentence, then the next turn works -----------------------------
QUESTION = frames(WAKE, 0.2) + frames(SILENCE, 0.1) + frames(SPEECH, 1.0)


class FlakyStt(FakeStt):
    """A transcriber whose server is gone for the first utterance."""

    async def transcribe(self, audio: np.ndarray, lead: str = "") -> str:
        if not self.audio:
            self.audio.append(audio)
            raise SpeechError(Code.STT_UNREACHABLE, "stt.uri: cannot connect to tcp://gpu:10300: refused")
        return await super().transcribe(audio, lead)


class FlakyTts(FakeTts):
    """A synthesizer whose server is gone for ``down`` sentences."""

    def __init__(self, down: int) -> None:
        super().__init__()
        self.down = down

    async def stream(self, text: str):
        if self.down:
            self.down -= 1
            raise SpeechError(Code.TTS_UNREACHABLE, "tts.uri: cannot connect to tcp://gpu:10200: refused")
        async for chunk in super().stream(text):
            yield chunk


def pipeline(stt, tts, *replies: str) -> tuple[VoicePipeline, FakeSink]:
    from iris_voice.config import AudioConfig

    cfg = AudioConfig(vad_hangover_ms=300, no_speech_timeout_s=2.0)
    bus = EventBus()
    chat = chat_assistant(ScriptedBackend(*replies), ToolRegistry(), LlmConfig(), publish=bus.publish)
    listener = Listener(cfg, FakeVad(), FakeWake(), bus.publish)
    sink = FakeSink()
    return VoicePipeline(listener, stt, chat, ReplySpeaker(tts, sink), bus), sink


async def test_stt_server_gone_is_said_once_and_the_next_question_is_answered():
    tts = FakeTts()
    p, _sink = pipeline(FlakyStt("what time is it"), tts, "It is noon.")
    await asyncio.wait_for(p.run(ScriptSource(QUESTION + frames(SILENCE, 2.0) + QUESTION)), 20)
    assert tts.spoken == [STT_UNREACHABLE, "It is noon."]
    first, second = p.turns
    assert first["error"]["code"] == "stt-unreachable" and "stt.uri" in first["error"]["message"]
    assert first["spoken"] == STT_UNREACHABLE
    assert second["transcript"] == "what time is it" and "error" not in second


async def test_tts_server_gone_chimes_and_the_next_reply_is_spoken():
    tts = FlakyTts(down=1)
    p, sink = pipeline(FakeStt("first", "second"), tts, "One.", "Two.")
    await asyncio.wait_for(p.run(ScriptSource(QUESTION + frames(SILENCE, 2.0) + QUESTION)), 20)
    assert len(chime(tts.sample_rate)) in sink.clips  # the chime instead of silence
    assert tts.spoken == ["Two."]
    assert p.turns[0]["error"]["code"] == "tts-unreachable"
    assert p.turns[0]["reply"] == "One."  # the answer is still in the trace
    assert "error" not in p.turns[1]


async def test_both_servers_gone_give_a_chime_not_silence():
    tts = FlakyTts(down=5)
    p, sink = pipeline(FlakyStt("x"), tts, "unused")
    await asyncio.wait_for(p.run(ScriptSource(QUESTION)), 20)
    assert sink.clips == [len(chime(tts.sample_rate))]
    assert p.turns[0]["error"]["code"] == "stt-unreachable"
