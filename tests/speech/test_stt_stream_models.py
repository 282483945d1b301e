"""Incremental decoding with the real models: Silero VAD finds the pauses, tiny.en decodes.

A two-sentence utterance (two Piper fixtures joined by a breath-long pause) is decoded
in pieces while it is "spoken" and in one pass; the pieces must say the same thing.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import SttConfig
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.stt_stream import StreamingTranscriber
from iris_voice.speech.vad import SileroDetector
from tests.support.spoken import spoken_words
from tools.testbed.fixtures import read_wav

pytestmark = pytest.mark.speech

FILLER = {"a", "an", "the", "is", "me", "about", "what", "hey", "and", "of", "to"}


def content_words(text: str) -> set[str]:
    """Lower-case words of ``text`` without fillers, numbers as digits however Whisper wrote
    them (one pass may write "23" where the pieces write "twenty-three")."""
    return {w for w in spoken_words(text) if w not in FILLER}


def two_sentences(manifest: dict) -> np.ndarray:
    """ "Tell me a long story about the sea." + 0.2 s + "What is twenty three times forty seven?"."""
    parts = [np.zeros(SAMPLE_RATE // 2, np.int16)]
    for i, name in enumerate(("story", "multiply")):
        entry = manifest[name]
        if i:
            parts.append(np.zeros(SAMPLE_RATE // 5, np.int16))
        parts.append(read_wav(name)[entry["speech_start"] : entry["speech_end"]])
    parts.append(np.zeros(SAMPLE_RATE // 3, np.int16))  # the endpointer's hangover
    return np.concatenate(parts)


async def test_pieces_decoded_at_pauses_say_what_one_pass_says(speech_manifest):
    whisper = FasterWhisperTranscriber(SttConfig())
    stt = StreamingTranscriber(whisper, min_chunk_s=1.0, pause_s=0.15)
    vad = SileroDetector()
    audio = two_sentences(speech_manifest)
    single = await stt.transcribe(audio)

    session = stt.open_session()
    for i in range(0, len(audio) - FRAME_SAMPLES + 1, FRAME_SAMPLES):
        frame = audio[i : i + FRAME_SAMPLES]
        session.feed(frame, await vad.probability(frame) >= 0.5)
        while session.busy:  # a speaker slower than the decoder: every pause becomes a piece
            await asyncio.sleep(0.01)
    used = len(audio) // FRAME_SAMPLES * FRAME_SAMPLES
    text = await session.finish(audio[:used])

    assert session.partials >= 1, "no pause was found: the test would prove nothing"
    assert content_words(single) >= {"story", "sea"}, single
    missing = content_words(single) - content_words(text)
    assert not missing, f"one pass: {single!r}; in pieces: {text!r}"
    assert len(content_words(text) - content_words(single)) <= 1, (single, text)
