"""The voice daemon on the virtual devices with both speech engines on real Wyoming servers:
started while its speech recognition server is down, it says so when asked, keeps running,
and answers once the server is back on the same address."""

from __future__ import annotations

from pathlib import Path

import pytest

from iris_voice.voice.servergone import STT_UNREACHABLE
from tests.support.voice_helpers import ask, heard, heard_end

pytestmark = [pytest.mark.slow, pytest.mark.speech, pytest.mark.timeout(600)]


def test_daemon_survives_its_stt_server_and_uses_it_when_it_returns(
    virtual_audio, wyoming_servers, speech_manifest, judge, tmp_path: Path
):
    from tools.testbed.servers import free_port
    from tools.testbed.voicebed import LiveDaemon
    from tools.testbed.wyoming_servers import start, whisper_args

    _, tts = wyoming_servers
    port = free_port()
    stt_uri = f"tcp://127.0.0.1:{port}"
    config = {
        # generous: a busy machine's servers answer late, not never
        "stt": {"engine": "wyoming", "uri": stt_uri, "timeout_s": 60.0},
        "tts": {"engine": "wyoming", "uri": tts.uri, "timeout_s": 60.0},
        "tools": {"timezone": "UTC"},
        "llm": {"warmup": False},  # no model server: the clock is the fast path's
    }
    no_llm = f"http://127.0.0.1:{free_port()}"
    daemon = LiveDaemon(virtual_audio, no_llm, tmp_path / "iris", config=config).start()
    server = None
    try:
        # nothing listens at stt.uri: one sentence, in the remote voice; the daemon runs on
        turn, played = ask(virtual_audio, daemon, "bench_time_tokyo")
        assert turn["error"]["code"] == "stt-unreachable" and stt_uri in turn["error"]["message"], turn
        said = heard(judge, played)
        assert "speech recognition" in said, f"IRIS said {said!r} (expected {STT_UNREACHABLE!r})"
        assert daemon.proc is not None and daemon.proc.poll() is None, "the daemon must survive"
        # the server comes up on the same address: the next question is heard and answered
        (tmp_path / "data").mkdir()
        server = start("faster-whisper", whisper_args(port, tmp_path / "data"), stt_uri)
        turn, played = ask(virtual_audio, daemon, "bench_time_tokyo")
        assert "error" not in turn and "tokyo" in turn["transcript"].lower(), turn
        assert turn["execution_path"] == "fast" and "Tokyo" in turn["reply"]
        # Whisper may stop before the end of the long sentence ("…December 2, 2020."): the
        # last seconds of sound are heard on their own too
        said = heard(judge, played)
        assert "tokyo" in said or "tokyo" in heard_end(judge, played), f"IRIS said {said!r}"
        log = daemon.log_tail(200)
        assert log.count("speech recognition server (stt.uri) unavailable") == 1, log  # said once
        assert "answers again" in log
    finally:
        daemon.terminate()
        if server is not None:
            server.stop()
