"""IRIS's lifecycle end to end on the virtual devices: a crash with timers pending, SIGTERM,
and the language-model server dying mid-turn. Each test runs a daemon of its own (after
test_voice_e2e's shared one has stopped: two daemons for one user would share the lock)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from iris_voice.voice.servergone import UNREACHABLE
from tests.support.voice_helpers import ask, heard, heard_apart
from tests.support.waiting import PATIENCE_S, wait_heard, wait_quiet, wait_until

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.speech, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
STOP_TIMEOUT_S = 15.0
"""``TimeoutStopSec`` of IRIS's systemd units (packaging/systemd*/)."""


def _set_timer(iris, label: str, seconds: int) -> None:
    cmd = [sys.executable, "-m", "iris_voice.cli", "tools", "call", "set_timer",
           f'{{"duration": "{seconds} seconds", "label": "{label}"}}']  # fmt: skip
    subprocess.run(cmd, env=iris.env(), cwd=ROOT, check=True, capture_output=True, timeout=60)


def test_timers_survive_sigkill_and_are_announced_as_missed(virtual_audio, ollama_server, judge, tmp_path):
    from tools.testbed.voicebed import LiveDaemon

    config = {"audio": {"chime": False}, "tools": {"timezone": "UTC"}}
    daemon = LiveDaemon(virtual_audio, ollama_server.url, tmp_path, config).start()
    try:
        _set_timer(daemon, "pasta", 2)
        _set_timer(daemon, "laundry", 3)
        daemon.kill()  # a crash: no chance to save anything
        time.sleep(4)  # both fall due while IRIS is down
        rec = virtual_audio.record_speaker()
        daemon.start()
        wait_until(lambda: daemon.log_tail(400).count("fired (missed)") >= 2, "both timers to fire")
        # What IRIS announces for each timer, from its log: the label in a missed-timer sentence.
        missed = [line for line in daemon.log_tail(400).splitlines() if "fired (missed)" in line]
        for label in ("pasta", "laundry"):
            assert any(f"While I was off, your {label} timer went off" in line for line in missed), missed
        # The two announcements follow each other (they may have begun during the start);
        # then IRIS stays idle. The ear checks that both were spoken; it is not asked to
        # spell the labels (Whisper under load heard "pasta" as "repost a").
        wait_heard(rec, 1.0, "the announcements to begin")
        daemon.wait_idle(2.0, timeout=PATIENCE_S)
        said = heard_apart(judge, wait_quiet(rec, 1.0))
        assert sum(part.count("while i was off") for part in said) >= 2, f"IRIS said {said!r}"
    finally:
        daemon.terminate()


def test_sigterm_stops_cleanly(virtual_audio, ollama_server, tmp_path):
    from tools.testbed.voicebed import LiveDaemon

    daemon = LiveDaemon(virtual_audio, ollama_server.url, tmp_path).start()
    code, seconds = daemon.terminate(timeout=PATIENCE_S)
    # exit 0 within the units' TimeoutStopSec (15 s), after which systemd would SIGKILL it;
    # how fast is not this test's business (a loaded machine stops slower)
    assert code == 0 and seconds < STOP_TIMEOUT_S, (code, seconds, daemon.log_tail())
    assert daemon.wait_notice("STOPPING=1", 10.0)
    assert not daemon.socket_path.exists()
    # the lock went with it: a new daemon starts at once
    daemon.start()
    daemon.terminate()


def test_model_server_stopped_mid_turn(virtual_audio, speech_manifest, judge, tmp_path):
    from tools.testbed.servers import free_port, start_server
    from tools.testbed.voicebed import LiveDaemon

    port = free_port()
    server = start_server(extra_args=["--port", str(port)])
    # No follow-up window after the "cannot reach" sentence: the question after the restart
    # is a new wake-word question, whenever the new server is up (a quick restart put it
    # inside the window, where the comma after "Hey Jarvis" once ended the capture).
    config = {"audio": {"follow_up_s": 0}}
    daemon = LiveDaemon(virtual_audio, server.url, tmp_path / "iris", config=config).start()
    try:
        from tools.testbed.fixtures import fixture

        rec = virtual_audio.record_speaker()
        # a question only the model answers (the clock would be answered by the fast path)
        virtual_audio.play_into_mic(fixture("jarvis_story"))
        daemon.wait_state("thinking", timeout=PATIENCE_S)
        server.process.kill()  # the server dies while IRIS waits for the answer
        server.process.wait()
        turn = daemon.wait_turn(after=0, timeout=PATIENCE_S)
        assert turn["error"]["code"] == "llm-unreachable", turn
        said = heard(judge, wait_quiet(rec, 1.0))
        assert "reach" in said and "language model" in said, f"IRIS said {said!r} (expected {UNREACHABLE!r})"
        assert daemon.proc.poll() is None, "the daemon must survive"
        server = start_server(extra_args=["--port", str(port)])  # back on the same address
        # the new server loads the model and reads the whole prompt: minutes on a busy machine
        turn, _ = ask(virtual_audio, daemon, "bench_france", timeout=3 * PATIENCE_S)
        assert turn["execution_path"] != "fast" and "paris" in turn["reply"].lower(), turn
    finally:
        daemon.terminate()
        server.stop()
