"""File mode (``iris ask --wav``) with fake engines: the wiring, MCP servers, files without speech."""

from __future__ import annotations

import os
import re
import wave
from pathlib import Path

import numpy as np

from iris_voice.app.assembly import Engines
from iris_voice.app.filemode import FileTurns
from iris_voice.config import AudioConfig, Config, LlmConfig, McpConfig, ToolsConfig
from tests.support.audiosignals import write_wav
from tests.support.fakes import ScriptedBackend
from tests.support.fakes_audio import SILENCE, SPEECH, FakeStt, FakeTts, FakeVad, frames
from tests.support.mcp_servers import time_server

ROOT = Path(__file__).resolve().parents[2]


async def test_file_turn_with_fakes(tmp_path):
    wav = write_wav(tmp_path / "q.wav", np.concatenate(frames(SILENCE, 0.5) + frames(SPEECH, 1.0)), 16000)
    engines = Engines(FakeStt("Hey Jarvis, say hi."), FakeTts(), FakeVad(), None)
    cfg = Config(llm=LlmConfig(warmup=False), tools=ToolsConfig(timers_db=str(tmp_path / "t.db")))
    turns = await FileTurns(cfg, engines, ScriptedBackend("Hi there.")).run(wav, tmp_path / "out.wav")
    (turn,) = turns
    assert turn["transcript"] == "say hi." and turn["reply"] == "Hi there."
    t = turn["timings_ms"]
    # the file ends 1.0 s of speech after 0.5 s of silence: endpointing decides after the hangover
    assert t["vad_hangover"] >= 300 and turn["first_audio_ms"] >= t["vad_hangover"]
    with wave.open(str(tmp_path / "out.wav")) as w:
        assert w.getframerate() == 16000 and w.getnframes() == 8000  # FakeTts: 0.5 s per sentence


async def test_file_mode_starts_and_uses_the_configured_mcp_servers(tmp_path):
    """``iris ask --wav`` gets its parts from the one assembly: MCP servers included."""
    wav = write_wav(tmp_path / "q.wav", np.concatenate(frames(SILENCE, 0.5) + frames(SPEECH, 1.0)), 16000)
    engines = Engines(FakeStt("What time is it in Paris?"), FakeTts(), FakeVad(), None)
    cfg = Config(
        llm=LlmConfig(warmup=False),
        tools=ToolsConfig(disabled=["get_current_time"], timers_db=str(tmp_path / "t.db")),
        mcp=McpConfig(servers=[time_server(mode="eager")]),
    )
    call = [("time/get_current_time", {"timezone": "Europe/Paris"})]
    devnull = open(os.devnull, "w")  # noqa: SIM115
    backend = ScriptedBackend(call, "It is noon in Paris.")
    async with FileTurns(cfg, engines, backend, errlog=devnull) as turns:
        (turn,) = await turns.run(wav)
    devnull.close()
    (tool,) = turn["tool_calls"]
    assert tool["name"] == "time/get_current_time" and tool["ok"], tool
    assert "Europe/Paris" in tool["result"]  # the real mcp-server-time answered
    # its time is said from the result (as the built-in clock says it), with no second round
    assert re.fullmatch(r"It is \d{1,2}:\d\d [AP]M on \w+day, \w+ \d{1,2}, \d{4} in Paris\.", turn["reply"])
    assert len(backend.requests) == 1


async def test_a_file_without_speech_has_no_turns(tmp_path):
    wav = write_wav(tmp_path / "q.wav", np.concatenate(frames(SILENCE, 1.0)), 16000)
    engines = Engines(FakeStt(), FakeTts(), FakeVad(), None)
    cfg = Config(llm=LlmConfig(warmup=False), tools=ToolsConfig(timers_db=str(tmp_path / "t.db")))
    assert await FileTurns(cfg, engines, ScriptedBackend()).run(wav) == []


async def test_a_stop_command_in_a_file_is_a_turn(tmp_path):
    """ "stop" alone is heard: a turn with no reply, not "no speech found"."""
    wav = write_wav(tmp_path / "q.wav", np.concatenate(frames(SILENCE, 0.5) + frames(SPEECH, 0.4)), 16000)
    engines = Engines(FakeStt("Stop."), FakeTts(), FakeVad(), None)
    backend = ScriptedBackend()
    cfg = Config(llm=LlmConfig(warmup=False), tools=ToolsConfig(timers_db=str(tmp_path / "t.db")))
    (turn,) = await FileTurns(cfg, engines, backend).run(wav)
    assert turn["transcript"] == "Stop." and turn["command"] == "stop" and turn["reply"] == ""
    assert backend.requests == []


class NeverFinished:
    """A turn detector that calls every pause unfinished (as Smart Turn may a command's end)."""

    name = "never-finished"

    async def probability(self, audio: np.ndarray) -> float:
        """Always unfinished."""
        return 0.0

    async def warmup(self) -> None:
        """Nothing to load."""


async def test_speech_to_the_end_of_the_file_is_heard_when_the_turn_check_waits(tmp_path):
    """The file's trailing silence covers ``audio.end_of_turn_max_ms``, the longest a turn
    check may hold a pause open, not just the VAD hangover."""
    wav = write_wav(tmp_path / "q.wav", np.concatenate(frames(SILENCE, 0.5) + frames(SPEECH, 1.0)), 16000)
    engines = Engines(FakeStt("turn off the lamp"), FakeTts(), FakeVad(), None, turn=NeverFinished())
    cfg = Config(
        llm=LlmConfig(warmup=False),
        tools=ToolsConfig(timers_db=str(tmp_path / "t.db")),
        audio=AudioConfig(end_of_turn="smart_turn", end_of_turn_max_ms=1500, vad_hangover_ms=400),
    )
    (turn,) = await FileTurns(cfg, engines, ScriptedBackend("Done.")).run(wav)
    assert turn["transcript"] == "turn off the lamp" and turn["reply"] == "Done."
    assert turn["timings_ms"]["vad_hangover"] >= 1500
