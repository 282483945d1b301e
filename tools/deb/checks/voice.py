"""The spoken turn of the .deb install test (run by ``python3.11 -m tools.deb.checks`` in
the container).

tester's desktop: linger keeps tester's user manager — and with it PipeWire — running,
as being logged in would, so the virtual devices of DESIGN.md ("Virtual audio") made in
that session with ``pactl`` outlive IRIS's restart: a speaker sink whose monitor is
recorded, and a microphone fed by another sink.

The language model: the host starts its Ollama-protocol test server on the loopback (the
container shares the host's network) only when this step asks for it — it writes
``llm-request`` in /srv/iris-test and the host answers in ``llm.json`` — because the
server takes the machine's single LLM lock; ``llm-done`` lets the host stop it again.
tester's ``~/.config/iris/config.toml`` points IRIS at it, and iris.service restarts.

The question is the test bed's spoken fixture ``jarvis_multiply`` ("Hey Jarvis, what is
twenty three times forty seven?", Piper, 16 kHz), copied in by the host and played into
the virtual microphone. What reaches the virtual speaker is recorded and transcribed
with the packaged Whisper base, and must carry most of the words IRIS's own trace
(``iris status --json`` → ``turns[-1]``) says it spoke. Whether the small model got the
sum right (1081) is reported, not required: it answers wrongly now and then.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import signal
import subprocess
import time
from difflib import SequenceMatcher
from pathlib import Path

from tools.deb.checks import iris_unit
from tools.deb.checks.common import USERS, WORK, Fail, session_env, sh, wait_for

OWNER = "tester"
HOME = Path("/home", OWNER)
VENV_PYTHON = "/usr/lib/iris/venv/bin/python"
RATE = 16000
LLM_WAIT_S = 1500  # the host may wait for the machine's LLM lock held by someone else
TURN_TIMEOUT_S = 300
MIN_SHARE = 0.6
"""Share of the words IRIS's trace says it spoke that the speaker recording must carry."""
HEAR = """
import sys, numpy as np
from faster_whisper import WhisperModel
audio = np.fromfile(sys.argv[1], dtype=np.int16).astype(np.float32) / 32768
model = WhisperModel("/usr/share/iris/models/whisper-base", device="cpu", compute_type="int8", cpu_threads=2)
segments, _ = model.transcribe(audio, language="en", beam_size=5)
print(" ".join(s.text.strip() for s in segments))
"""
_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
         "fifteen sixteen seventeen eighteen nineteen").split()  # fmt: skip
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def spell(n: int) -> str:
    """An integer below a million in English words (1081 → "one thousand eighty one")."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        return _ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + spell(n % 100))
    return spell(n // 1000) + " thousand" + ("" if n % 1000 == 0 else " " + spell(n % 1000))


def words(text: str) -> list[str]:
    """Lower-case words and numbers ("1,081" → "1081", "eighty-one" → "eighty", "one";
    Whisper's "23x47" → "23 times 47", as tests/voice_helpers.py reads it)."""
    text = re.sub(r"(\d),(\d)", r"\1\2", text.lower())
    return re.findall(r"[a-z0-9']+", re.sub(r"(\d)\s*[x×*]\s*(\d)", r"\1 times \2", text))


def _heard_word(word: str, got: set[str]) -> bool:
    if word in got:
        return True
    if word.isdigit():  # a number: in digits, or every word of it spelled out
        return int(word) < 10**6 and set(spell(int(word)).split()) <= got
    # Whisper runs words together now and then ("answer is" -> "answers")
    return len(word) >= 3 and any(SequenceMatcher(None, word, g).ratio() >= 0.8 for g in got)


def share_heard(said: str, heard: str) -> float:
    """Share of ``said``'s words in ``heard``: numbers exactly (in digits or words), other
    words also when Whisper ran them together with the next one."""
    wanted, got = words(said), set(words(heard))
    return sum(_heard_word(w, got) for w in wanted) / max(1, len(wanted))


def _own(path: Path) -> None:
    pw = pwd.getpwnam(OWNER)
    os.chown(path, pw.pw_uid, pw.pw_gid)


def _virtual_devices(env: dict[str, str]) -> None:
    for args in (
        ["load-module", "module-null-sink", "sink_name=iris_speaker", "channels=1"],
        ["load-module", "module-null-sink", "sink_name=iris_micfeed", "channels=1"],
        [
            "load-module",
            "module-remap-source",
            "master=iris_micfeed.monitor",
            "source_name=iris_mic",
            "channels=1",
        ],
    ):
        sh(["pactl", *args], user=OWNER, env=env)

    def defaults_set() -> bool:  # set-default-* fails until wireplumber has seen the new nodes
        for verb, name in (("set-default-sink", "iris_speaker"), ("set-default-source", "iris_mic")):
            if sh(["pactl", verb, name], user=OWNER, env=env, check=False).returncode != 0:
                return False
        got = [
            sh(["pactl", f"get-default-{k}"], user=OWNER, env=env).stdout.strip() for k in ("sink", "source")
        ]
        return got == ["iris_speaker", "iris_mic"]

    wait_for("pactl set-default-sink/-source", defaults_set, 20)


def request_llm() -> str:
    """Ask the host for the test server; its URL."""
    answer = WORK / "llm.json"
    (WORK / "llm-request").write_text(str(time.time()))
    wait_for("the host's test server (llm.json)", answer.exists, LLM_WAIT_S, interval=1)
    reply = json.loads(answer.read_text())
    if not reply.get("url"):
        raise Fail(f"the host started no Ollama-protocol test server: {reply.get('error')}")
    return reply["url"]


def release_llm() -> None:
    """Tell the host the test server is no longer needed."""
    if (WORK / "llm-request").exists():
        (WORK / "llm-done").write_text(str(time.time()))


def _status() -> dict:
    return iris_unit.iris_status(OWNER)


def _wait_for_turn(after: int) -> dict:
    """``iris status --json`` until turn ``after`` + 1 is recorded and IRIS is idle again."""
    deadline = time.monotonic() + TURN_TIMEOUT_S
    while time.monotonic() < deadline:
        st = _status()
        if st.get("turn_count", 0) > after and st.get("state") == "idle" and st.get("turns"):
            return st
        time.sleep(1)
    said = iris_unit.logs("iris.service", OWNER)
    raise Fail(f"no turn within {TURN_TIMEOUT_S} s; status {st}\n{said}")


def _record(env: dict[str, str], out: Path) -> subprocess.Popen:
    """``parec`` of the virtual speaker as tester, straight into ``out`` (run as tester
    directly, not through runuser, so that SIGINT reaches it)."""
    pw = pwd.getpwnam(OWNER)
    cmd = ["parec", "-d", "iris_speaker.monitor", "--raw", "--format=s16le", f"--rate={RATE}", "--channels=1"]
    full_env = {"PATH": "/usr/bin:/bin", "HOME": str(HOME), "USER": OWNER, **env}
    with out.open("wb") as f:
        _own(out)
        return subprocess.Popen(
            cmd, stdout=f, env=full_env, cwd=HOME, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[]
        )


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def _stages(turn: dict) -> str:
    t = turn.get("timings_ms") or {}
    keys = ("vad_hangover", "stt", "llm_first_token", "first_sentence", "tts_first_audio")
    return ", ".join(f"{k} {t[k]:.0f}" for k in keys if isinstance(t.get(k), int | float))


def spoken_turn(params: dict, ctx: dict) -> str:
    """Speak the question into tester's virtual microphone; IRIS's answer must be heard."""
    env = session_env(OWNER)
    question = WORK / "question.wav"
    if not question.is_file():
        raise Fail(f"the host copied no spoken question to {question}")
    sh(["loginctl", "enable-linger", OWNER])
    try:
        wait_for(f"{OWNER}'s session bus", lambda: Path(f"/run/user/{USERS[OWNER]}/bus").exists(), 30)
        _virtual_devices(env)
        url = request_llm()
        config = HOME / ".config" / "iris" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f'[llm]\nhost = "{url}"\nmodel = "{params["llm_model"]}"\ntemperature = 0.0\n')
        for path in (config.parent.parent, config.parent, config):
            _own(path)
        took = iris_unit.start("iris.service", verb="restart")  # the new config and devices
        iris_unit.check_instance("iris.service", OWNER)
        before = _status()
        if before["llm"]["reachable"] is not True:
            raise Fail(f"IRIS cannot reach the test server at {url}: {before['llm']}")
        recording = HOME / "answer.raw"
        rec = _record(env, recording)
        try:
            time.sleep(1)
            sh(["paplay", "-d", "iris_micfeed", str(question)], user=OWNER, env=env, timeout=60)
            st = _wait_for_turn(before["turn_count"])
            time.sleep(1.5)  # the tail of the answer leaves the speaker
        finally:
            _stop(rec)
    finally:
        release_llm()
        sh(["loginctl", "disable-linger", OWNER], check=False)
    turn = st["turns"][-1]
    heard = sh([VENV_PYTHON, "-c", HEAR, str(recording)], user=OWNER, timeout=300).stdout.strip()
    spoken, reply = turn.get("spoken") or "", turn.get("reply") or ""
    ctx["voice"] = {"turn": turn, "heard": heard}
    summary = (
        f"restart READY in {took:.1f} s; IRIS heard {turn.get('transcript')!r}, "
        f"tools {[c['name'] for c in turn.get('tool_calls', [])]}, said {spoken!r}; "
        f"the speaker carried {heard!r}; first audio {turn.get('first_audio_ms')} ms ({_stages(turn)})"
    )
    if turn.get("interrupted") or not spoken:
        raise Fail(f"IRIS did not speak its whole reply: {summary}")
    share = share_heard(spoken, heard)
    if share < MIN_SHARE:
        raise Fail(
            f"the recording carries {share:.0%} of the words IRIS spoke (< {MIN_SHARE:.0%}); {summary}"
        )
    if "1081" in words(reply):
        verdict = "the answer is right (1081)"
    else:
        verdict = f"NOTE the small model answered wrongly ({reply!r}); IRIS spoke it as its trace says"
    return f"{verdict}; {share:.0%} of its words heard; {summary}"
