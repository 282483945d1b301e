"""``iris serve`` over real TCP on loopback, spoken to by the ``wyoming`` package's own client:
``describe``/``info``, ``handle`` (the fast path, an unreachable model, streaming), ASR and
TTS over fake engines, the trust gates, and the bounds (audio, read timeout, event size)."""

from __future__ import annotations

import asyncio
import re
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.handle import Handled, NotHandled
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from iris_voice.app.assembly import Engines, build_app
from iris_voice.config import Config, LlmConfig, ServeConfig, ToolsConfig
from iris_voice.wyoming.parts import service_parts
from iris_voice.wyoming.server import WyomingService
from iris_voice.wyoming.trust import AUTH_OK_TYPE, AUTH_TYPE
from tests.support.fakes import ScriptedBackend
from tests.support.fakes_audio import FakeStt, FakeTts, FakeVad
from tools.testbed.servers import free_port

TIMEOUT = 10.0


@asynccontextmanager
async def serving(tmp_path, *, token: str = "", stt: FakeStt | None = None, llm_down: bool = False, **serve):
    """A started service over fake speech engines and a scripted (or unreachable) model."""
    port = free_port()
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    llm = LlmConfig(host=dead, connect_timeout_s=0.5) if llm_down else LlmConfig()
    cfg = Config(
        llm=llm,
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        serve=ServeConfig(uri=f"tcp://127.0.0.1:{port}", **serve),
    )
    engines = Engines(stt or FakeStt("set a timer for ten minutes"), FakeTts(), FakeVad(), None)
    app = build_app(cfg, speech=True, engines=engines, backend=None if llm_down else ScriptedBackend())
    service = WyomingService(cfg.serve, service_parts(app), token)
    await service.start()
    try:
        yield service, port, app
    finally:
        await service.stop()
        await app.close()


async def read_until(client: AsyncTcpClient, *types: str) -> list[Event]:
    """Events up to and including the first of ``types`` (fails on a closed connection)."""
    seen = []
    async with asyncio.timeout(TIMEOUT):
        while True:
            event = await client.read_event()
            assert event is not None, f"connection closed after {[e.type for e in seen]}"
            seen.append(event)
            if event.type in types:
                return seen


async def closed(client: AsyncTcpClient) -> bool:
    """True when the server closed the connection (after any events it still sent)."""
    async with asyncio.timeout(TIMEOUT):
        while (await client.read_event()) is not None:
            pass
    return True


async def test_describe_lists_asr_tts_and_handle_with_attribution(tmp_path):
    async with serving(tmp_path) as (_svc, port, _app), AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Describe().event())
        info = Info.from_event((await read_until(client, "info"))[-1])
    assert [p.name for p in info.asr] == ["iris-whisper"]
    assert [p.name for p in info.tts] == ["iris-piper"]
    assert [p.name for p in info.handle] == ["iris"]
    for program in (*info.asr, *info.tts, *info.handle):
        assert program.installed and program.version and program.attribution.name
    assert info.asr[0].models[0].name == "fake-stt" and info.asr[0].models[0].languages == ["en"]
    assert info.tts[0].voices[0].installed and info.tts[0].supports_synthesize_streaming
    assert info.handle[0].supports_handled_streaming and info.handle[0].models[0].languages == ["en"]


def _hours(text: str) -> set[int]:
    return {int(h) for h in re.findall(r"\b(\d{1,2})(?::\d{2}|\s*[ap]\.?m)", text, re.I)}


async def test_handle_answers_the_time_without_the_model(tmp_path):
    async with serving(tmp_path) as (_svc, port, app), AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcript(text="what time is it").event())
        events = await read_until(client, "handled", "not-handled")
        backend = app.responder.chat.backend
    assert events[-1].type == "handled", events
    reply = Handled.from_event(events[-1]).text or ""
    now = datetime.now(UTC)
    hours = {(now + timedelta(minutes=d)).hour for d in (-2, 0, 2)}  # the hour may turn over
    expected = hours | {h % 12 or 12 for h in hours}
    assert _hours(reply) & expected, reply
    assert backend.requests == []  # the fast path answered: the model was never asked


async def test_handle_says_not_handled_when_the_model_is_unreachable(tmp_path):
    async with serving(tmp_path, llm_down=True) as (_svc, port, _app), AsyncTcpClient("127.0.0.1", port) as c:
        await c.write_event(Transcript(text="Who wrote Romeo and Juliet?").event())
        events = await read_until(c, "handled", "not-handled")
        # the connection stays usable: the time still comes from the fast path
        await c.write_event(Transcript(text="what time is it").event())
        after = await read_until(c, "handled", "not-handled")
    assert events[-1].type == "not-handled"
    assert "not reachable" in (NotHandled.from_event(events[-1]).text or "")
    assert after[-1].type == "handled"


async def test_handle_streams_sentence_by_sentence_when_asked(tmp_path):
    async with serving(tmp_path) as (_svc, port, app), AsyncTcpClient("127.0.0.1", port) as client:
        app.responder.chat.backend.replies.append("Paris is the capital. It is in France.")
        question = Transcript(text="What is the capital of France?", context={"handled_streaming": True})
        await client.write_event(question.event())
        events = await read_until(client, "handled-stop")
    types = [e.type for e in events]
    assert types[0] == "handled-start" and types[-2:] == ["handled", "handled-stop"], types
    chunks = [e.data["text"] for e in events if e.type == "handled-chunk"]
    assert chunks == ["Paris is the capital.", "It is in France."]
    assert events[-2].data["text"] == " ".join(chunks)


def _audio_events(samples: np.ndarray, rate: int, channels: int = 1) -> list[Event]:
    pcm = samples.astype("<i2").tobytes()
    step = 2048
    chunks = [AudioChunk(rate, 2, channels, pcm[i : i + step]).event() for i in range(0, len(pcm), step)]
    return [AudioStart(rate, 2, channels).event(), *chunks, AudioStop().event()]


async def test_asr_resamples_the_clients_audio_to_16_khz_mono(tmp_path):
    stt = FakeStt("set a timer for ten minutes")
    tone = (np.sin(np.arange(44100) * 2 * np.pi * 440 / 44100) * 8000).astype(np.int16)
    stereo = np.stack([tone, tone], axis=1).reshape(-1)
    async with serving(tmp_path, stt=stt) as (_svc, port, _app), AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe(language="en").event())
        for event in _audio_events(stereo, 44100, channels=2):
            await client.write_event(event)
        events = await read_until(client, "transcript")
    assert Transcript.from_event(events[-1]).text == "set a timer for ten minutes"
    (audio,) = stt.audio
    assert audio.dtype == np.float32 and abs(len(audio) - 16000) <= 16  # one second at 16 kHz
    peak_bin = np.argmax(np.abs(np.fft.rfft(audio))) * 16000 / len(audio)
    assert abs(peak_bin - 440) < 5  # the same tone, not sped up or slowed down
    assert 0.2 < np.max(np.abs(audio)) < 0.3  # 8000/32768: mono mix, not summed


async def test_audio_without_transcribe_is_not_asr(tmp_path):
    stt = FakeStt("nothing")
    async with serving(tmp_path, stt=stt) as (_svc, port, _app), AsyncTcpClient("127.0.0.1", port) as client:
        for event in _audio_events(np.zeros(1600, np.int16), 16000):
            await client.write_event(event)
        await client.write_event(Describe().event())
        events = await read_until(client, "info")
    assert [e.type for e in events] == ["info"] and stt.audio == []


async def test_too_much_audio_is_refused_and_dropped(tmp_path):
    stt = FakeStt("never")
    async with serving(tmp_path, stt=stt, max_utterance_s=2) as (_svc, port, _app):
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Transcribe().event())
            for event in _audio_events(np.zeros(16000 * 3, np.int16), 16000):
                await client.write_event(event)
            events = await read_until(client, "error", "transcript")
            await client.write_event(Describe().event())
            after = await read_until(client, "info", "transcript")
    assert events[-1].type == "error" and events[-1].data["code"] == "too-long"
    assert "serve.max_utterance_s" in events[-1].data["text"]
    assert [e.type for e in after] == ["info"] and stt.audio == []  # no transcript ever came


async def test_a_stalled_stream_times_out_and_an_idle_client_does_not(tmp_path):
    async with serving(tmp_path, read_timeout_s=0.3) as (_svc, port, _app):
        async with AsyncTcpClient("127.0.0.1", port) as idle, AsyncTcpClient("127.0.0.1", port) as stalled:
            await stalled.write_event(Transcribe().event())
            await stalled.write_event(AudioStart(16000, 2, 1).event())
            events = await read_until(stalled, "error")
            assert await closed(stalled)
            await asyncio.sleep(0.4)  # idle between requests: that is allowed
            await idle.write_event(Describe().event())
            assert (await read_until(idle, "info"))[-1].type == "info"
    assert events[-1].data["code"] == "timeout"


async def test_an_oversized_event_closes_the_connection(tmp_path):
    async with serving(tmp_path) as (svc, port, _app):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b'{"type": "audio-chunk", "payload_length": 1000000000}\n')
        await writer.drain()
        async with asyncio.timeout(TIMEOUT):
            rest = await reader.read()
        writer.close()
        assert b'"error"' in rest and b"over the limit" in rest
        assert svc.clients == {}


async def test_tts_speaks_a_text_and_a_text_stream_sentence_by_sentence(tmp_path):
    async with serving(tmp_path) as (_svc, port, app), AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize(text="Hello there. How are you?").event())
        whole = await read_until(client, "audio-stop")
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(text="The first sentence is ").event())
        await client.write_event(SynthesizeChunk(text="here. And the").event())
        first = await read_until(client, "audio-stop")  # spoken before the stream ends
        await client.write_event(SynthesizeChunk(text=" second one").event())
        await client.write_event(Synthesize(text="The first sentence is here. And the second one").event())
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")
        spoken = list(app.engines.tts.spoken)
    assert [e.type for e in whole][0] == "audio-start" and whole[0].data["rate"] == 16000
    assert sum(len(e.payload or b"") for e in whole if e.type == "audio-chunk") == 2 * 16000  # 2 x 0.5 s
    assert [e.type for e in first][0] == "audio-start"
    framing = [e.type for e in rest if e.type != "audio-chunk"]
    assert framing == ["audio-start", "audio-stop", "synthesize-stopped"]
    # the compatibility "synthesize" inside the stream is not spoken a second time
    assert spoken == ["Hello there.", "How are you?", "The first sentence is here.", "And the second one"]


async def test_token_gate_end_to_end(tmp_path):
    async with serving(tmp_path, token="s3cret-kitchen-token") as (svc, port, _app):
        async with AsyncTcpClient("127.0.0.1", port) as client:  # describe needs no token
            await client.write_event(Describe().event())
            assert (await read_until(client, "info"))[-1].type == "info"
            await client.write_event(Transcript(text="what time is it").event())
            refused = await read_until(client, "error")
            assert await closed(client)
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Event(AUTH_TYPE, {"token": "wrong"}))
            wrong = await read_until(client, "error")
            assert await closed(client)
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Event(AUTH_TYPE, {"token": "s3cret-kitchen-token"}))
            ok = await read_until(client, AUTH_OK_TYPE, "error")
            await client.write_event(Transcript(text="what time is it").event())
            answer = await read_until(client, "handled", "not-handled", "error")
            assert svc.snapshot()["clients"][0]["authenticated"] is True
    assert refused[-1].data["code"] == "unauthorized" and AUTH_TYPE in refused[-1].data["text"]
    assert wrong[-1].data["code"] == "unauthorized" and "wrong token" in wrong[-1].data["text"]
    assert ok[-1].type == AUTH_OK_TYPE and answer[-1].type == "handled"
    assert svc.refused == 2


async def test_status_lists_connected_clients(tmp_path):
    async with serving(tmp_path) as (svc, port, _app):
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            await read_until(client, "info")
            snap = svc.snapshot()
        for _ in range(50):
            if not svc.clients:
                break
            await asyncio.sleep(0.02)
    assert snap["uri"] == f"tcp://127.0.0.1:{port}" and snap["programs"] == "asr, tts, handle"
    assert [c["peer"].split(":")[0] for c in snap["clients"]] == ["127.0.0.1"]
    assert svc.clients == {}


async def test_too_many_clients_are_turned_away(tmp_path):
    async with serving(tmp_path, max_clients=1) as (_svc, port, _app):
        async with AsyncTcpClient("127.0.0.1", port) as first:
            await first.write_event(Transcribe().event())  # a real request: admitted
            await first.write_event(Describe().event())
            await read_until(first, "info")
            async with AsyncTcpClient("127.0.0.1", port) as second:
                await second.write_event(Transcribe().event())
                busy = await read_until(second, "error")
                assert await closed(second)
    assert busy[-1].data["code"] == "busy"


@pytest.mark.parametrize("uri", ["tcp://0.0.0.0:10700", "tcp://192.168.1.20:10700", "tcp://[::]:10700"])
def test_a_wide_bind_needs_an_allow_list_or_a_token(uri):
    from iris_voice.config import parse
    from iris_voice.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        parse({"serve": {"uri": uri}})
    assert err.value.problems[0].startswith("serve.uri:") and "serve.allow" in err.value.problems[0]
    with pytest.raises(ConfigError):  # the service refuses it too (a --uri override skips the file)
        WyomingService(ServeConfig.model_construct(uri=uri, allow=[], token="", token_file=""), [])
    assert parse({"serve": {"uri": uri, "allow": ["192.168.1.0/24"]}}).serve.uri == uri
    assert parse({"serve": {"uri": uri, "token": "x" * 16}}).serve.token == "x" * 16


async def test_doctor_reports_the_service_and_its_clients(tmp_path):
    from iris_voice.wyoming.doctor import serve_checks

    async with serving(tmp_path) as (svc, port, app), AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Describe().event())
        await read_until(client, "info")
        checks = await serve_checks(app.cfg, {"serve": svc.snapshot()})
    gone = await serve_checks(app.cfg)  # stopped: nothing answers any more
    enabled = app.cfg.model_copy(update={"serve": app.cfg.serve.model_copy(update={"enabled": True})})
    missing = await serve_checks(enabled)
    assert checks[0] == (True, f"wyoming service: tcp://127.0.0.1:{port} answers describe (asr, tts, handle)")
    assert any(ok is None and "loopback" in line for ok, line in checks)
    clients = [line for _ok, line in checks if line.startswith("wyoming clients:")]
    assert clients and clients[0].startswith("wyoming clients: 1 connected (127.0.0.1:")
    assert gone == [
        (None, f"wyoming service: not running (iris serve, or serve.enabled = true; {app.cfg.serve.uri})")
    ]
    assert missing[0][0] is False and "nothing answers" in missing[0][1]


async def test_a_unix_socket_serves_too(tmp_path):
    from wyoming.client import AsyncUnixClient

    path = tmp_path / "wyoming.sock"
    cfg = ServeConfig(uri=f"unix://{path}")
    assert cfg.loopback and cfg.problems() == []
    app = build_app(
        Config(tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "t.db"))), backend=ScriptedBackend()
    )
    service = WyomingService(cfg, service_parts(app))  # no engines: handle only
    await service.start()
    try:
        async with AsyncUnixClient(str(path)) as client:
            await client.write_event(Describe().event())
            info = Info.from_event((await read_until(client, "info"))[-1])
            snap = service.snapshot()
    finally:
        await service.stop()
        await app.close()
    assert [p.name for p in info.handle] == ["iris"] and info.asr == [] and info.tts == []
    assert [c["peer"] for c in snap["clients"]] == ["unix-socket#1"]


async def test_doctor_checks_a_satellites_hub_and_its_token(tmp_path):
    from iris_voice.config import SatelliteConfig
    from iris_voice.wyoming.doctor import satellite_checks

    def with_hub(cfg: Config, hub: str, token: str) -> Config:
        return cfg.model_copy(update={"satellite": SatelliteConfig(hub=hub, token=token)})

    async with serving(tmp_path, token="s3cret-kitchen-token") as (_svc, port, app):
        uri = f"tcp://127.0.0.1:{port}"
        right = await satellite_checks(with_hub(app.cfg, uri, "s3cret-kitchen-token"))
        wrong = await satellite_checks(with_hub(app.cfg, uri, "guess"))
    gone = await satellite_checks(with_hub(app.cfg, uri, "s3cret-kitchen-token"))
    assert await satellite_checks(app.cfg) == []  # no satellite.hub: nothing to check
    assert right == [(True, f"satellite hub: {uri} answers (iris)")]
    assert wrong[0][0] is False and "refuses satellite.token" in wrong[0][1]
    assert gone[0][0] is False and gone[0][1].startswith("satellite hub: satellite.hub: cannot connect")


async def test_bad_audio_over_the_wire_gets_errors_and_the_next_transcription_works(tmp_path):
    stt = FakeStt("the second one")
    tone = (np.sin(np.arange(48000) * 2 * np.pi * 440 / 48000) * 8000).astype(np.int16)
    stereo = np.stack([tone, tone], axis=1).reshape(-1)
    async with serving(tmp_path, stt=stt) as (_svc, port, _app), AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe().event())
        await client.write_event(AudioStart(1, 2, 1).event())  # 1 Hz: refused
        refused = await read_until(client, "error")
        await client.write_event(Transcribe().event())
        events = _audio_events(stereo, 48000, channels=2)
        for data in (
            {"rate": "48000", "width": 2, "channels": 2},
            {"rate": 10**30, "width": 10**9, "channels": 2},
        ):
            events.insert(2, Event("audio-chunk", data, b"\1\0" * 512))  # skipped, never raised on
        for event in events:
            await client.write_event(event)
        answer = await read_until(client, "transcript", "error")
    assert refused[-1].data["code"] == "bad-audio" and "audio rate 1 " in refused[-1].data["text"]
    assert Transcript.from_event(answer[-1]).text == "the second one"
    (audio,) = stt.audio
    assert audio.dtype == np.float32 and abs(len(audio) - 16000) <= 16  # 1 s of 16 kHz mono


async def test_a_transcript_whose_text_is_no_string_gets_an_error_and_the_next_one_an_answer(tmp_path):
    async with serving(tmp_path) as (_svc, port, _app), AsyncTcpClient("127.0.0.1", port) as client:
        errors = []
        for text in (["what", "time"], 42, {"a": 1}):
            await client.write_event(Event("transcript", {"text": text}))
            errors.append((await read_until(client, "error", "handled", "not-handled"))[-1])
        await client.write_event(Transcript(text="what time is it").event())
        answer = await read_until(client, "handled", "not-handled", "error")
    assert [(e.type, e.data["code"]) for e in errors] == [("error", "bad-text")] * 3, errors
    assert "must be a string, not a list" in errors[0].data["text"]
    assert answer[-1].type == "handled", answer


async def test_synthesize_refuses_text_that_is_not_a_short_string_and_serves_on(tmp_path):
    async with serving(tmp_path, max_synthesize_chars=20) as (_svc, port, app):
        async with AsyncTcpClient("127.0.0.1", port) as client:
            errors = []
            for text in (123, ["a"], "A sentence longer than twenty."):
                await client.write_event(Event("synthesize", {"text": text}))
                errors.append((await read_until(client, "error", "audio-start"))[-1])
            await client.write_event(Synthesize(text="Short enough.").event())
            spoken = await read_until(client, "audio-stop", "error")
            said = list(app.engines.tts.spoken)
    assert [(e.type, e.data["code"]) for e in errors] == [("error", "bad-text")] * 2 + [("error", "too-long")]
    assert (
        "must be a string" in errors[0].data["text"]
        and "serve.max_synthesize_chars = 20" in errors[2].data["text"]
    )
    assert spoken[0].type == "audio-start" and spoken[-1].type == "audio-stop" and said == ["Short enough."]
