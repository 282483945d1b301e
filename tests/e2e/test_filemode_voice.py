"""``iris ask --wav`` with the real speech models (and the real language model): whole turns
from spoken files, judged by a second ear."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from iris_voice.app.filemode import FileTurns
from iris_voice.config import Config, LlmConfig, ToolsConfig
from tests.support.audiosignals import write_wav
from tests.support.spoken import share_said
from tests.support.voice_helpers import heard

ROOT = Path(__file__).resolve().parents[2]


def run_file_turn(tmp_path: Path, host: str, intents: bool) -> dict:
    """``iris ask --wav`` on the spoken multiplication in a fresh process; its JSON trace."""
    from tools.testbed.fixtures import fixture
    from tools.testbed.voicebed import write_config

    sections = {"llm": {"temperature": 0.0}, "tools": {"timezone": "UTC"}, "intents": {"enabled": intents}}
    config = write_config(tmp_path / "c.toml", sections)
    env = dict(os.environ, OLLAMA_HOST=host, XDG_STATE_HOME=str(tmp_path), IRIS_CONFIG=str(config))
    cmd = [sys.executable, "-m", "iris_voice.cli", "ask", "--wav", str(fixture("jarvis_multiply")),
           "--out", str(tmp_path / "answer.wav"), "--json"]  # fmt: skip
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-2000:]
    trace = json.loads(proc.stdout)
    assert (
        "twenty three times forty seven" in trace["transcript"].lower().replace("-", " ")
        or "23" in trace["transcript"]
    )
    assert "1081" in trace["reply"].replace(",", "")
    return trace


def assert_answer_heard(judge, trace: dict, wav: Path) -> None:
    """The reply WAV says the reply (judged by Whisper)."""
    with wave.open(str(wav)) as w:
        samples = np.frombuffer(w.readframes(w.getnframes()), np.int16)
        rate = w.getframerate()
    import soxr

    audio16k = soxr.resample(samples, rate, 16000).astype(np.int16)
    said = heard(judge, audio16k)
    assert share_said(trace["reply"], said) >= 0.6, (trace["reply"], said)


@pytest.mark.model
@pytest.mark.speech
@pytest.mark.timeout(600)
def test_cli_voice_turn_from_a_file(ollama_server, speech_manifest, judge, tmp_path):
    # the intent fast path is off: this turn goes through the model, every stage timed
    trace = run_file_turn(tmp_path, ollama_server.url, intents=False)
    assert trace["execution_path"] != "fast"
    t = trace["timings_ms"]
    for key in ("vad_hangover", "llm_first_token", "first_sentence", "tts_first_audio", "total"):
        assert isinstance(t[key], int | float) and t[key] > 0, key
    # Speech-to-text after the end of speech may cost nothing: with stt.speculative the
    # decode made at the pause is the transcript, or the pieces decoded while the user spoke
    # cover it all. Then the trace says so.
    assert isinstance(t["stt"], int | float) and t["stt"] >= 0
    if t["stt"] < 1:
        assert t.get("stt_speculated") or t.get("stt_partials"), t
    assert trace["first_audio_ms"] >= t["vad_hangover"] + t["stt"]
    assert_answer_heard(judge, trace, tmp_path / "answer.wav")


@pytest.mark.speech
@pytest.mark.timeout(300)
def test_cli_fast_path_file_turn_needs_no_model_server(speech_manifest, judge, tmp_path):
    from tools.testbed.servers import free_port

    # nothing listens on this port: the sum is answered from the intent templates alone
    trace = run_file_turn(tmp_path, f"http://127.0.0.1:{free_port()}", intents=True)
    assert trace["execution_path"] == "fast"
    t = trace["timings_ms"]
    assert t["llm_first_token"] is None  # no model was asked
    for key in ("vad_hangover", "first_sentence", "tts_first_audio", "total"):
        assert isinstance(t[key], int | float) and t[key] > 0, key
    # The words decoded at the pause may already be the transcript (stt.speculative): then
    # nothing is left to decode after the end of turn, and the trace says why.
    assert isinstance(t["stt"], int | float) and t["stt"] >= 0
    if t["stt"] < 1:
        assert t.get("stt_speculated") or t.get("stt_partials"), t
    assert trace["first_audio_ms"] >= t["vad_hangover"] + t["stt"] + t["tts_first_audio"]
    assert_answer_heard(judge, trace, tmp_path / "answer.wav")


@pytest.mark.speech
@pytest.mark.timeout(300)
def test_cli_file_turn_for_the_model_without_a_server_exits_unavailable(speech_manifest, judge, tmp_path):
    from tools.testbed.fixtures import fixture
    from tools.testbed.servers import free_port

    env = dict(os.environ, OLLAMA_HOST=f"http://127.0.0.1:{free_port()}", XDG_STATE_HOME=str(tmp_path))
    env.pop("IRIS_CONFIG", None)
    out = tmp_path / "answer.wav"
    cmd = [sys.executable, "-m", "iris_voice.cli", "ask", "--wav", str(fixture("jarvis_story")),
           "--out", str(out), "--json"]  # fmt: skip
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=250)
    assert proc.returncode == 69, proc.stderr[-2000:]
    assert "[llm-unreachable]" in proc.stderr
    trace = json.loads(proc.stdout)  # the turn is still reported, with what went wrong
    assert trace["error"]["code"] == "llm-unreachable"
    # and the answer file holds the one spoken sentence about it
    assert_answer_heard(judge, {"reply": "Sorry, I can't reach my language model right now."}, out)


@pytest.mark.speech
@pytest.mark.timeout(300)
async def test_file_mode_keeps_every_question_of_a_long_recording(speech_manifest, tmp_path):
    """Four questions 8 s apart: four turns, as the daemon would answer the audio arriving in
    real time — none lost while another is answered, none waiting behind another."""
    from tools.testbed.fixtures import read_wav

    names = ["bench_time_tokyo", "bench_multiply", "bench_pasta_timer", "bench_left_pasta"]
    gap = np.zeros(8 * 16000, dtype=np.int16)
    audio = np.concatenate([part for name in names for part in (read_wav(name), gap)])
    wav = write_wav(tmp_path / "four.wav", audio, 16000)
    cfg = Config(tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "t.db")))
    cfg = cfg.model_copy(update={"llm": LlmConfig(host="http://127.0.0.1:9", warmup=False)})
    async with FileTurns(cfg) as turns:
        got = await turns.run(wav)
    said = [t["transcript"].lower() for t in got]
    assert len(got) == 4, said
    assert "tokyo" in said[0] and "pasta" in said[2] and "left" in said[3]
    assert "forty seven" in said[1].replace("-", " ") or "47" in said[1]
    assert all(t["execution_path"] == "fast" for t in got), [t["reply"] for t in got]
    assert "1081" in got[1]["reply"] and "pasta" in got[3]["reply"].lower()
    for before, t in zip([None, *got], got, strict=False):
        ms = t["timings_ms"]
        # First audio is the hangover, the decode and the synthesis, not time spent queued
        # behind an earlier turn (that was 1-3 s per turn when file mode raced ahead). A turn
        # may wait only when the one before it was still answering when this question came:
        # on a busy machine a turn can outlast the 8 s of silence after it.
        if before is not None and before["timings_ms"]["total"] >= len(gap) / 16:
            continue
        waited = t["first_audio_ms"] - ms["vad_hangover"] - ms["stt"] - ms["tts_first_audio"]
        assert waited < 500, (t["transcript"], ms)


@pytest.mark.speech
@pytest.mark.timeout(300)
@pytest.mark.parametrize("end_of_turn", ["smart_turn", "silence"])
async def test_a_pause_inside_a_sentence_does_not_cut_it(speech_manifest, tmp_path, end_of_turn):
    """The hesitation fixtures (one synthesized sentence, its comma stretched to 0.5 and
    0.7 s) through the real listener, Smart Turn and Whisper: one turn each, with the words
    after the pause. With "silence" the sound of the pause is 400 ms of silence, and the
    words before it ("set a timer for") keep the turn open."""
    from tools.testbed.fixtures import HESITATIONS, read_wav

    gap = np.zeros(4 * 16000, dtype=np.int16)
    names = sorted(HESITATIONS)
    audio = np.concatenate([part for name in names for part in (read_wav(name), gap)])
    wav = write_wav(tmp_path / "hesitations.wav", audio, 16000)
    cfg = Config(tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "t.db")))
    cfg = cfg.model_copy(
        update={
            "llm": LlmConfig(host="http://127.0.0.1:9", warmup=False),
            "audio": cfg.audio.model_copy(update={"end_of_turn": end_of_turn}),
        }
    )
    async with FileTurns(cfg) as turns:
        got = await turns.run(wav)
    said = [t["transcript"].lower().replace("-", " ") for t in got]
    assert len(got) == len(names), said
    after_pause = {
        "timer": ("ten", "10"),
        "multiply": ("forty", "47"),
        "remind": ("mother",),
        "left": ("pasta",),
    }
    for name, text in zip(names, said, strict=True):
        assert any(word in text for word in after_pause[name.split("_")[1]]), (name, text)
