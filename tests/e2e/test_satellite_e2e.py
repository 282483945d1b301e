"""A satellite and a hub, each its own process, over the Wyoming protocol: the satellite
(``iris satellite``) listens on the virtual microphone and speaks on the virtual speaker;
the hub (a headless process with the satellite part and the speech models) answers.
"Hey Jarvis, what time is it?" goes in; the spoken time comes out, judged by Whisper base.
A timer set at the satellite rings there, again and again, until "stop" is said there.
The hub is a real ``iris serve`` (``tools.testbed.hubs.hub_process``).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.spoken import share_said
from tests.support.voice_helpers import clock_hours, heard, hours_near
from tests.support.waiting import PATIENCE_S, wait_heard, wait_quiet
from tests.support.waiting import wait_line as _wait_line
from tools.testbed.hubs import hub_process
from tools.testbed.servers import free_port
from tools.testbed.voicebed import write_config

pytestmark = [pytest.mark.slow, pytest.mark.speech, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


def _satellite(config: Path, where: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        cmd = [sys.executable, "-m", "iris_voice.cli", "--config", str(config), "-v", "satellite", *where]
        return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture
def hub_and_satellite(virtual_audio, speech_manifest, tmp_path, request):
    """The hub and the satellite; ``request.param`` adds to the satellite's [audio], and with
    ``"listen": True`` the satellite waits for the hub, which connects to it (the protocol's
    roles as Home Assistant speaks them)."""
    tz = "UTC"
    param = dict(getattr(request, "param", {}))
    listen = param.pop("listen", False)
    audio = {"notifications": False, "alarm_repeat_s": 2.0, **param}
    env = virtual_audio.child_env()
    env.update(PYTHONUNBUFFERED="1", XDG_STATE_HOME=str(tmp_path / "state"),
               OLLAMA_HOST="http://127.0.0.1:9")  # fmt: skip  # the fast path answers: no model
    sat_port = free_port()
    connect = [f"tcp://127.0.0.1:{sat_port}"] if listen else []
    hub_cfg = write_config(
        tmp_path / "hub.toml", {"tools": {"timezone": tz}, "satellite": {"connect": connect}}
    )
    sat_cfg = write_config(tmp_path / "satellite.toml", {
        "audio": audio, "satellite": {"name": "kitchen"},
    })  # fmt: skip
    procs = []
    try:
        sat_log = tmp_path / "satellite.log"
        if listen:  # the satellite first: the hub connects to it (and retries until it can)
            sat = _satellite(sat_cfg, ["--listen", f"tcp://127.0.0.1:{sat_port}"], env, sat_log)
            procs.append(sat)
        hub_log = tmp_path / "hub.log"
        hub, port = hub_process(hub_cfg, env, hub_log, timeout=180)
        procs.append(hub)
        if not listen:
            sat = _satellite(sat_cfg, ["--hub", f"tcp://127.0.0.1:{port}"], env, sat_log)
            procs.append(sat)
        _wait_line(sat_log, "connected to the hub", sat, PATIENCE_S)
        _wait_line(sat_log, "ready, hub", sat, PATIENCE_S)
        yield tz, (hub, hub_log), (sat, sat_log)
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@pytest.mark.parametrize(
    "hub_and_satellite", [{"echo_cancel": "pipewire"}, {"echo_cancel": "pipewire", "listen": True}],
    ids=["satellite-connects", "hub-connects"], indirect=True,
)  # fmt: skip
def test_what_time_is_it_asked_at_the_satellite_is_answered_by_the_hub(
    virtual_audio, hub_and_satellite, judge
):
    from tools.testbed.fixtures import fixture

    tz, (hub, hub_log), (sat, sat_log) = hub_and_satellite
    _wait_line(sat_log, "microphone: ", sat, PATIENCE_S)  # the satellite's microphone stream is open
    rec = virtual_audio.record_speaker()
    virtual_audio.play_into_mic(fixture("bench_time_here"))
    answered = _wait_line(sat_log, "the hub answered", sat, PATIENCE_S)
    wait_heard(rec, 0.5, "the answer on the satellite's speaker")
    audio = wait_quiet(rec, 1.5)  # the last sentence has left the speaker
    reply = answered.split("answered: ", 1)[-1].strip("'\"")
    heard_line = _wait_line(hub_log, "kitchen heard:", hub, PATIENCE_S)
    assert "time" in heard_line.lower() and "jarvis" not in heard_line.split("heard:")[1].lower()
    hours, now = hours_near(tz)
    assert clock_hours(reply) & hours, f"the hub answered {reply!r}; the hour is {now:%H:%M}"
    said = heard(judge, audio)
    print(f"\nhub answered {reply!r}; the satellite's speaker said {said!r}")
    in_speech = clock_hours(said)
    # No time the listener could read ("2:23 PM" once came back as "223 pdm"): the rest of the
    # reply, whose words Whisper does not write in many ways, must have been said.
    rest = re.sub(r"\b\d{1,2}:\d{2}\s*[ap]\.?\s?m\.?", " ", reply, flags=re.I)
    assert in_speech & hours if in_speech else share_said(rest, said) >= 0.75, (
        f"the satellite's speaker said {said!r}; the reply was {reply!r}; the hour is {now:%H:%M}"
    )
    # audio.echo_cancel = "pipewire": the satellite runs PipeWire's canceller, as the desktop does
    assert "PipeWire's WebRTC canceller" in sat_log.read_text()
    assert sat.poll() is None and hub.poll() is None


def test_a_timer_set_at_the_satellite_rings_there_until_stop_is_said(virtual_audio, hub_and_satellite):
    from tools.testbed.fixtures import fixture

    _tz, (hub, _hub_log), (sat, sat_log) = hub_and_satellite
    _wait_line(sat_log, "microphone: ", sat, PATIENCE_S)  # the satellite's microphone stream is open
    virtual_audio.play_into_mic(fixture("jarvis_timer"))  # "Hey Jarvis, set a timer for three seconds."
    _wait_line(sat_log, "the hub answered", sat, PATIENCE_S)
    _wait_line(sat_log, "finished", sat, PATIENCE_S)
    _wait_line(sat_log, "rings again (1)", sat, PATIENCE_S)  # the hub rang it once; the satellite repeats
    virtual_audio.play_into_mic(fixture("stop"))  # "Stop.", no wake word
    dismissed = _wait_line(sat_log, "dismissed", sat, PATIENCE_S)
    assert "(stop)" in dismissed, dismissed  # the hub's words for it were a stop command
    rings = sat_log.read_text().count("rings again")
    time.sleep(4.5)  # two repeat periods: a window for nothing more to happen
    assert sat_log.read_text().count("rings again") == rings
    assert sat.poll() is None and hub.poll() is None
