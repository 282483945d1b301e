"""A late answer, heard in the room: the live daemon on the virtual devices, a model server
that writes slowly (the test server's scripted mode, streaming at a busy machine's pace),
a spoken question. IRIS says its late cue before the answer, and keeps only the answer.

What the speaker played is judged by transcribing the recording with Whisper.
"""

from __future__ import annotations

import contextlib
import re

import httpx
import pytest

from tests.support.voice_helpers import ask, heard

pytestmark = [pytest.mark.slow, pytest.mark.speech, pytest.mark.timeout(600)]

ANSWER = "Octopuses have three hearts and blue blood."


def test_a_late_answer_is_preceded_by_the_cue(virtual_audio, speech_manifest, judge, tmp_path):
    from tools.testbed.servers import scripted_server
    from tools.testbed.voicebed import LiveDaemon

    with contextlib.ExitStack() as stack:
        url = scripted_server(stack)
        config = {"tts": {"late_cue_s": 1.0, "late_cue": "One moment."}, "tools": {"timezone": "UTC"}}
        with LiveDaemon(virtual_audio, url, tmp_path, config) as iris:
            iris.wait_idle(2.0)
            # four characters every half second: the sentence is whole after about five
            # seconds. Several copies: the daemon's prompt-cache warm-ups take replies too.
            slow = {"text": ANSWER, "chunk": 4, "delay": 0.5}
            httpx.post(f"{url}/_script", json={"replies": [slow] * 6}, timeout=10).raise_for_status()
            turn, audio = ask(virtual_audio, iris, "jarvis_story")
    assert turn["spoken"] == ANSWER, turn  # the cue is none of the reply's words
    timings = turn["timings_ms"]
    assert "late_cue_ms" in timings, timings
    assert timings["late_cue_ms"] < turn["first_audio_ms"], timings
    said = heard(judge, audio)
    cue_ms, answer_ms = timings["late_cue_ms"], turn["first_audio_ms"]
    print(f"\nthe speaker said {said!r}; the cue at {cue_ms} ms, the answer at {answer_ms} ms")
    cue, answer = re.search(r"one moment", said), re.search(r"heart", said)
    assert cue and answer and cue.start() < answer.start(), said
