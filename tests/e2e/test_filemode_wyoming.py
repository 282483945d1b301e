"""``iris ask --wav`` with both speech engines on real Wyoming servers (wyoming-faster-whisper,
wyoming-piper on loopback): a whole turn in a fresh process, its answer heard back; and the
same turn when the speech recognition server is gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_filemode_voice import assert_answer_heard
from tests.support.voice_helpers import clock_hours, hours_near

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.speech, pytest.mark.timeout(300)]


def ask_wav(tmp_path: Path, stt_uri: str, tts_uri: str, fixture_name: str) -> subprocess.CompletedProcess:
    """``iris ask --wav FIXTURE --out answer.wav --json`` with remote engines and no model server."""
    from tools.testbed.fixtures import fixture
    from tools.testbed.servers import free_port
    from tools.testbed.voicebed import write_config

    sections = {
        "llm": {"host": f"http://127.0.0.1:{free_port()}"},  # nothing there: the fast path answers
        "tools": {"timezone": "UTC"},
        # generous: a busy machine's servers answer late, not never
        "stt": {"engine": "wyoming", "uri": stt_uri, "timeout_s": 60.0},
        "tts": {"engine": "wyoming", "uri": tts_uri, "timeout_s": 60.0},
    }
    config = write_config(tmp_path / "c.toml", sections)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path), IRIS_CONFIG=str(config))
    env.pop("OLLAMA_HOST", None)
    cmd = [sys.executable, "-m", "iris_voice.cli", "ask", "--wav", str(fixture(fixture_name)),
           "--out", str(tmp_path / "answer.wav"), "--json"]  # fmt: skip
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=250)


def test_a_whole_turn_through_remote_engines(wyoming_servers, speech_manifest, judge, tmp_path):
    stt, tts = wyoming_servers
    proc = ask_wav(tmp_path, stt.uri, tts.uri, "jarvis_time_tokyo")
    assert proc.returncode == 0, proc.stderr[-2000:]
    trace = json.loads(proc.stdout)
    assert "tokyo" in trace["transcript"].lower()
    assert trace["execution_path"] == "fast" and "Tokyo" in trace["reply"]
    t = trace["timings_ms"]
    assert t["tts_first_audio"] > 0  # the remote voice's first chunk, timed
    # stt.incremental (the default) over Wyoming: the utterance went through a decode session
    # (pieces at pauses, the speculative decode), each piece a request to the server
    assert "stt_speculated" in t and t["stt"] >= 0
    assert_answer_heard(judge, trace, tmp_path / "answer.wav")
    # and it is Tokyo's time (the hour now, or the one before if the turn crossed it)
    hours, _ = hours_near("Asia/Tokyo")
    assert clock_hours(trace["reply"]) & hours, trace["reply"]


def test_a_turn_with_the_stt_server_gone_says_so(wyoming_servers, speech_manifest, judge, tmp_path):
    from tools.testbed.servers import free_port

    _, tts = wyoming_servers
    gone = f"tcp://127.0.0.1:{free_port()}"
    proc = ask_wav(tmp_path, gone, tts.uri, "jarvis_time_tokyo")
    assert proc.returncode == 69, proc.stderr[-2000:]  # EX_UNAVAILABLE, as for the model server
    assert "stt.uri: cannot connect to " + gone in proc.stderr and "[stt-unreachable]" in proc.stderr
    trace = json.loads(proc.stdout)
    assert trace["error"]["code"] == "stt-unreachable"
    # the one sentence, spoken by the (remote) voice into the answer file
    sentence = "Sorry, I can't reach my speech recognition server right now."
    assert_answer_heard(judge, {"reply": sentence}, tmp_path / "answer.wav")
