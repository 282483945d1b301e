"""A wake-word capture keeps the wake phrase and tells Whisper it opens the audio: the real
wake model, VAD and Whisper tiny.en through IRIS's own ``Listener`` on the spoken
wake-word fixtures (``tools/bench/wake_capture`` measures the same on more voices)."""

from __future__ import annotations

import asyncio

import pytest

from iris_voice.config import Config, SttConfig
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.vad import SileroDetector
from iris_voice.speech.wake import OpenWakeWordDetector
from iris_voice.voice import wakewatch
from iris_voice.voice.phrases import wake_phrase_text
from tools.bench.stats import word_errors
from tools.bench.wake_capture import WAKE_NAME, _pad, _question, captures
from tools.testbed.fixtures import read_wav

pytestmark = pytest.mark.speech


def _transcripts(manifest: dict, pre_roll_s: float, lead: str) -> dict[str, str]:
    """Fixture → what IRIS would take as the question, with this pre-roll and lead."""
    cfg = Config()
    stt = FasterWhisperTranscriber(SttConfig())
    vad, wake = SileroDetector(), OpenWakeWordDetector(cfg.wake)

    async def run() -> dict[str, str]:
        out = {}
        for name, entry in manifest.items():
            if entry.get("wake_word") and entry["voice"].startswith("piper"):
                caps = await captures(_pad(read_wav(name)), vad, wake, cfg, pre_roll_s)
                out[name] = " ".join(_question(stt.transcribe_sync(c, lead=lead)) for c in caps)
        return out

    return asyncio.run(run())


def test_the_kept_wake_phrase_loses_no_words_the_old_capture_kept(speech_manifest) -> None:
    """With the phrase kept as the lead (``wake.keep_phrase``), the Piper wake-word fixtures
    are heard at least as well as with the capture cut right after the phrase (at most one
    of them worse by a word), and better in total."""
    kept = _transcripts(speech_manifest, wakewatch.WAKE_PRE_ROLL_S, wake_phrase_text(WAKE_NAME))
    cut = _transcripts(speech_manifest, wakewatch.WAKE_CUT_S, "")
    assert kept.keys() == cut.keys() and len(kept) >= 20
    refs = {name: _question(speech_manifest[name]["text"]) for name in kept}
    errors = {n: (word_errors(refs[n], kept[n])[0], word_errors(refs[n], cut[n])[0]) for n in kept}
    print({name: (kept[name], cut[name]) for name, (k, c) in errors.items() if k or c})
    worse = [name for name, (k, c) in errors.items() if k > c]
    assert len(worse) <= 1, [(refs[n], kept[n], cut[n]) for n in worse]
    assert sum(k for k, _ in errors.values()) < sum(c for _, c in errors.values())
    assert all(not text.lower().startswith(("hey", "jarvis")) for text in kept.values()), kept
