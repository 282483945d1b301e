"""The spoken turn of the .deb install test (run by deb_checks.py inside the container).

In tester's PipeWire session it makes the virtual devices of DESIGN.md ("Virtual audio"):
a speaker sink whose monitor is recorded, and a microphone fed by another sink. The
question is spoken with the packaged Piper voice into the microphone while iris.service
runs as tester against the host's Ollama-protocol test server (the container shares the
host's network, so the server on 127.0.0.1 is reachable); the answer is recorded from
the speaker and transcribed with the packaged Whisper tiny.en.
"""

from __future__ import annotations

import array
import math
import os
import pwd
import signal
import subprocess
import time
from pathlib import Path

from deb_checks import Fail, Skip, session_env, sh

QUESTION = "Hey Jarvis. What is 23 times 47?"
VENV_PYTHON = "/usr/lib/iris/venv/bin/python"
HOME = Path("/home/tester")
RATE = 16000
SPEAK = """
import sys, wave
from piper import PiperVoice
m = "/usr/share/iris/models/piper/en_US-joe-medium.onnx"
voice = PiperVoice.load(m, config_path=m + ".json")
chunks = list(voice.synthesize(sys.argv[1]))
with wave.open(sys.argv[2], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(chunks[0].sample_rate)
    w.writeframes(b"".join(c.audio_int16_bytes for c in chunks))
"""
HEAR = """
import sys, numpy as np
from faster_whisper import WhisperModel
audio = np.fromfile(sys.argv[1], dtype=np.int16).astype(np.float32) / 32768
tiny = "/usr/share/iris/models/whisper-tiny.en"
model = WhisperModel(tiny, device="cpu", compute_type="int8", cpu_threads=2)
segments, _ = model.transcribe(audio, language="en", beam_size=1)
print(" ".join(s.text.strip() for s in segments))
"""


def _as_tester(path: Path) -> None:
    pw = pwd.getpwnam("tester")
    os.chown(path, pw.pw_uid, pw.pw_gid)


def _virtual_devices(env: dict[str, str]) -> None:
    for args in (
        ["load-module", "module-null-sink", "sink_name=iris_speaker"],
        ["load-module", "module-null-sink", "sink_name=iris_micfeed"],
        ["load-module", "module-remap-source", "master=iris_micfeed.monitor", "source_name=iris_mic"],
    ):
        sh(["pactl", *args], user="tester", env=env)
    # set-default-* fails until wireplumber has seen the new nodes.
    deadline = time.monotonic() + 15
    while True:
        ok = all(
            sh(["pactl", verb, name], user="tester", env=env, check=False).returncode == 0
            for verb, name in (("set-default-sink", "iris_speaker"), ("set-default-source", "iris_mic"))
        )
        if ok:
            return
        if time.monotonic() > deadline:
            raise Fail("pactl set-default-sink/-source kept failing")
        time.sleep(0.5)


def _windows_rms(raw: bytes, window: int = RATE // 10) -> list[float]:
    samples = array.array("h", raw[: len(raw) // 2 * 2])
    return [
        math.sqrt(sum(x * x for x in samples[i : i + window]) / window)
        for i in range(0, len(samples) - window + 1, window)
    ]


def _wait_for_answer(recording: Path, timeout: float) -> float:
    """Seconds until the speaker carried speech followed by 2 s of silence."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        time.sleep(1)
        rms = _windows_rms(recording.read_bytes())
        loud = [i for i, r in enumerate(rms) if r > 500]
        if len(loud) >= 5 and len(rms) - 1 - loud[-1] >= 20:
            return time.monotonic() - start
    raise Fail(f"no spoken answer on the virtual speaker within {timeout:.0f} s")


def spoken_turn(params: dict, daemon: bool) -> str:
    """Speak the question into tester's virtual microphone; the answer must say 1081."""
    if not daemon:
        raise Skip("daemon not in this build")
    if not params.get("llm_url"):
        raise Skip("the host started no Ollama-protocol test server")
    env = session_env("tester")
    config = HOME / ".config" / "iris" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[llm]\nhost = "{params["llm_url"]}"\nmodel = "{params["llm_model"]}"\n')
    for path in (config.parent.parent, config.parent, config):
        _as_tester(path)
    _virtual_devices(env)
    question = HOME / "question.wav"
    sh([VENV_PYTHON, "-c", SPEAK, QUESTION, str(question)], user="tester", timeout=120)
    sh(["systemctl", "restart", "iris.service"], timeout=240)  # the new config and devices
    recording = HOME / "answer.raw"
    with recording.open("wb") as out:
        _as_tester(recording)
        rec = subprocess.Popen(
            ["runuser", "-u", "tester", "--", "env", *(f"{k}={v}" for k, v in env.items()), "parec",
             "-d", "iris_speaker.monitor", "--format=s16le", f"--rate={RATE}", "--channels=1"],
            stdout=out,
        )  # fmt: skip
        try:
            time.sleep(1)
            sh(["paplay", "-d", "iris_micfeed", str(question)], user="tester", env=env, timeout=60)
            took = _wait_for_answer(recording, timeout=240)
        finally:
            rec.send_signal(signal.SIGINT)
            rec.wait(10)
    heard = sh([VENV_PYTHON, "-c", HEAR, str(recording)], user="tester", timeout=300).stdout.strip()
    said = heard.lower().replace(",", "")
    if "1081" not in said and not ("thousand" in said and "eighty" in said):
        raise Fail(f"IRIS answered {heard!r} to {QUESTION!r}")
    return f"answer after {took:.0f} s: {heard!r}"
