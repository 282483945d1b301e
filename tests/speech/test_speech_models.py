"""The speech engines with their real models, on Piper-spoken fixtures.

Whisper (tiny.en, base), Piper (en_US joe), Silero VAD and openWakeWord, each behind
the Protocol the pipeline uses. Fixtures come from ``tools/testbed/fixtures.py`` (cached).
"""

from __future__ import annotations

import asyncio
import re
from difflib import SequenceMatcher
from pathlib import Path

import numpy as np
import pytest

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import SttConfig, TtsConfig, WakeConfig
from iris_voice.speech.model_files import ModelMissing
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.tts import PiperSynthesizer, speakable
from iris_voice.speech.vad import Segmenter, SileroDetector, UtteranceEnded, UtteranceStarted
from iris_voice.speech.wake import OpenWakeWordDetector
from tools.testbed.fixtures import read_wav

pytestmark = pytest.mark.speech

FRAME_S = FRAME_SAMPLES / SAMPLE_RATE
QUESTIONS = ["time_tokyo", "multiply", "timer", "story"]


def frames(samples: np.ndarray):
    """Consecutive whole FRAME_SAMPLES frames of ``samples``."""
    for i in range(0, len(samples) - FRAME_SAMPLES + 1, FRAME_SAMPLES):
        yield samples[i : i + FRAME_SAMPLES]


@pytest.fixture(scope="module")
def tiny(speech_manifest) -> FasterWhisperTranscriber:
    return FasterWhisperTranscriber(SttConfig())


@pytest.fixture(scope="module")
def piper(speech_manifest) -> PiperSynthesizer:
    return PiperSynthesizer(TtsConfig())


@pytest.fixture(scope="module")
def wake(speech_manifest) -> OpenWakeWordDetector:
    return OpenWakeWordDetector(WakeConfig())


def heard(word: str, text: str) -> bool:
    """``word`` is in ``text``, allowing one small slip of a tiny model ("Tokivo")."""
    words = re.findall(r"[a-z0-9']+", text.lower())
    return word in words or any(SequenceMatcher(None, word, w).ratio() >= 0.7 for w in words)


async def ticking(coro, period: float = 0.01) -> tuple[object, int]:
    """Run ``coro`` while a ticker counts event-loop turns: (result, ticks)."""
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(period)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        result = await coro
    finally:
        done.set()
        await task
    return result, ticks


# --- speech to text -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("time_tokyo", ["time", "tokyo"]),
        ("jarvis_time_tokyo", ["jarvis", "time", "tokyo"]),
        ("timer", ["timer", "seconds"]),
        ("pause", ["timer", "seconds"]),  # both halves, across the 0.5 s pause
        ("story", ["story", "sea"]),
    ],
)
async def test_tiny_en_transcribes_the_fixtures(tiny, name, words):
    text = await tiny.transcribe(read_wav(name).astype(np.float32) / 32768.0)
    assert text == text.strip() and text
    for word in words:
        assert heard(word, text), text


async def test_multiplication_words_survive(tiny):
    text = (await tiny.transcribe(read_wav("multiply"))).lower()  # int16 is accepted too
    assert ("23" in text or "twenty" in text) and ("47" in text or "forty" in text), text


async def test_silence_is_empty_text(tiny):
    assert await tiny.transcribe(np.zeros(SAMPLE_RATE, dtype=np.float32)) == ""
    assert await tiny.transcribe(np.zeros(0, dtype=np.float32)) == ""


async def test_decoding_never_blocks_the_event_loop(tiny):
    await tiny.warmup()
    audio = read_wav("story")
    text, ticks = await ticking(tiny.transcribe(audio))
    assert "sea" in text.lower()
    assert ticks >= 5  # the loop kept running while Whisper decoded (≥ 0.3 s)


async def test_concurrent_utterances_are_serialized_and_both_correct(tiny):
    a, b = await asyncio.gather(tiny.transcribe(read_wav("time_tokyo")), tiny.transcribe(read_wav("story")))
    assert "tokyo" in a.lower() and "sea" in b.lower()


@pytest.mark.slow
async def test_whisper_base_transcribes(speech_manifest):
    base = FasterWhisperTranscriber(SttConfig(model="base"))
    text = (await base.transcribe(read_wav("time_tokyo"))).lower()
    assert heard("time", text) and heard("tokyo", text), text
    assert base.model_dir is not None and base.model_dir.name == "whisper-base"


async def test_a_bad_model_directory_is_a_clear_error(tmp_path):
    stt = FasterWhisperTranscriber(SttConfig(model=str(tmp_path)))
    with pytest.raises(ModelMissing, match="stt.model: .* is not a CTranslate2 Whisper model"):
        await stt.warmup()


# --- text to speech -------------------------------------------------------------------


async def test_piper_streams_one_int16_chunk_per_sentence(piper):
    assert piper.sample_rate == 22050 and piper.name == "en_US-joe-medium"
    text = "The time in Tokyo is ten past nine. It is a clear evening. Anything else?"
    chunks = [c async for c in piper.stream(text)]
    assert len(chunks) == 3  # streamed sentence by sentence, not as one block
    for chunk in chunks:
        assert chunk.dtype == np.int16 and chunk.ndim == 1
        assert np.abs(chunk.astype(np.int32)).max() > 3000  # real, audible speech
    seconds = sum(len(c) for c in chunks) / piper.sample_rate
    assert 3.0 < seconds < 10.0


async def test_piper_first_chunk_comes_before_the_rest_is_made(piper):
    await piper.warmup()
    stream = piper.stream("One short sentence. " + "Then a much longer second sentence follows it here. " * 3)
    first, ticks = await ticking(anext(stream))
    assert first.dtype == np.int16 and len(first) > 0
    rest = [c async for c in stream]
    assert len(rest) >= 3
    assert ticks >= 1  # synthesis ran off the event loop


@pytest.mark.parametrize("text", ["", "   ", "...", "?!", "**", "[[ ]]"])
async def test_nothing_speakable_yields_nothing(piper, text):
    assert [c async for c in piper.stream(text)] == []


def test_speakable_text():
    assert speakable("**Tokyo** is `9:10`.") == "Tokyo is 9:10 ."
    assert speakable("[[ hɛloʊ ]] world") == "hɛloʊ world"
    assert speakable("2 × 3") == "2 times 3"
    assert speakable(" ... ") == ""


async def test_length_scale_slows_speech(speech_manifest):
    text = "What time is it in Tokyo?"

    async def length(tts: PiperSynthesizer) -> float:
        # Piper draws each phoneme's duration with noise: one synthesis each came out
        # 1.295x once. The median of five is the voice's pace; 1.5 must slow it clearly.
        return float(np.median([sum(len(c) for c in [c async for c in tts.stream(text)]) for _ in range(5)]))

    normal = await length(PiperSynthesizer(TtsConfig()))
    slow = await length(PiperSynthesizer(TtsConfig(length_scale=1.5)))
    assert slow > 1.2 * normal, (slow, normal)


def test_missing_voice_is_a_clear_error(tmp_path):
    with pytest.raises(ModelMissing, match="tts.voice: no Piper voice at"):
        PiperSynthesizer(TtsConfig(voice=str(tmp_path / "none.onnx")))


# --- voice activity -------------------------------------------------------------------


def probabilities(det: SileroDetector, samples: np.ndarray) -> np.ndarray:
    det.reset()
    return np.array([det.probability_sync(f) for f in frames(samples)])


def test_silero_scores_speech_high_and_silence_or_noise_low(speech_manifest):
    det = SileroDetector()
    entry = speech_manifest["story"]
    probs = probabilities(det, read_wav("story"))
    start, end = entry["speech_start"] // FRAME_SAMPLES, entry["speech_end"] // FRAME_SAMPLES
    assert np.median(probs[start + 3 : end - 3]) > 0.8
    assert probs[: start - 2].max() < 0.1  # the leading digital silence
    assert probs[end + 10 :].max() < 0.2  # the trailing silence, 0.3 s after the speech
    noise = (np.random.default_rng(1).normal(0, 0.02, SAMPLE_RATE * 3) * 32767).astype(np.int16)
    assert probabilities(det, noise).max() < 0.3


async def test_silero_reset_forgets_the_state(speech_manifest):
    det = SileroDetector()
    speech = read_wav("time_tokyo")[8000:16192]
    first = [await det.probability(f) for f in frames(speech)]
    det.reset()
    again = [await det.probability(f) for f in frames(speech)]
    assert first == pytest.approx(again, abs=1e-6)
    fresh_after_speech = await det.probability(np.zeros(FRAME_SAMPLES, dtype=np.int16))
    det.reset()
    fresh = await det.probability(np.zeros(FRAME_SAMPLES, dtype=np.int16))
    assert fresh != pytest.approx(fresh_after_speech, abs=1e-6)


def test_silero_rejects_wrong_frame_sizes():
    with pytest.raises(ValueError, match="512 samples"):
        SileroDetector().probability_sync(np.zeros(480, dtype=np.int16))


def endpoint(det: SileroDetector, samples: np.ndarray, hangover: float, threshold: float = 0.5):
    """Drive the Segmenter with Silero over a recording; its events."""
    det.reset()
    seg = Segmenter(speech_seconds=0.096, hangover_seconds=hangover, max_seconds=15.0, timeout_seconds=6.0)
    events = []
    for frame in frames(samples):
        event = seg.process(FRAME_S, det.probability_sync(frame) >= threshold)
        if event is not None:
            events.append(event)
    return events


@pytest.mark.parametrize("name", [*QUESTIONS, "jarvis_time_tokyo", "stop"])
def test_silero_endpointing_finds_the_true_end_of_speech(speech_manifest, name):
    entry = speech_manifest[name]
    hangover = 0.3
    events = endpoint(SileroDetector(), read_wav(name), hangover)
    assert [type(e) for e in events] == [UtteranceStarted, UtteranceEnded]
    started, ended = events
    true_start, true_end = entry["speech_start"] / SAMPLE_RATE, entry["speech_end"] / SAMPLE_RATE
    assert abs(started.start_s - true_start) < 0.15
    decided = ended.end_s + ended.silence_s
    assert ended.reason == "silence"
    assert abs(decided - true_end) <= hangover + 0.1, (decided, true_end)
    assert abs(ended.end_s - true_end) <= 0.12  # the speech end it reports is the real one


def test_a_mid_sentence_pause_shorter_than_the_hangover_is_kept(speech_manifest):
    entry = speech_manifest["pause"]
    (_, first_end), (second_start, true_end) = entry["speech_spans"]
    assert (second_start - first_end) / SAMPLE_RATE == pytest.approx(0.5, abs=0.01)
    det = SileroDetector()
    events = endpoint(det, read_wav("pause"), hangover=0.8)
    assert [type(e) for e in events] == [UtteranceStarted, UtteranceEnded]
    assert abs(events[1].end_s - true_end / SAMPLE_RATE) <= 0.12
    # With a 300 ms hangover (IRIS's default before 400 ms) the same pause ends the utterance early.
    events = endpoint(det, read_wav("pause"), hangover=0.3)
    assert abs(events[1].end_s - first_end / SAMPLE_RATE) <= 0.12


# --- wake word ------------------------------------------------------------------------


async def max_score(det: OpenWakeWordDetector, samples: np.ndarray) -> float:
    det.reset()
    return max([await det.process(f) for f in frames(samples)])


@pytest.mark.parametrize(
    "name", ["jarvis_time_tokyo", "jarvis_multiply", "jarvis_timer", "jarvis_story", "jarvis"]
)
async def test_hey_jarvis_triggers(wake, name):
    assert await max_score(wake, read_wav(name)) >= wake.threshold


@pytest.mark.parametrize("name", [*QUESTIONS, "stop", "pause"])
async def test_the_same_questions_without_it_do_not(wake, name):
    assert await max_score(wake, read_wav(name)) < wake.threshold


def test_espeak_voice_as_a_second_speaker(wake, speech_manifest):
    if "espeak_jarvis_time_tokyo" not in speech_manifest:
        pytest.skip("espeak-ng is not installed, so there is no second-speaker fixture")
    wake.reset()
    hit = max(wake.process_sync(f) for f in frames(read_wav("espeak_jarvis_time_tokyo")))
    wake.reset()
    miss = max(wake.process_sync(f) for f in frames(read_wav("espeak_time_tokyo")))
    assert hit >= wake.threshold > miss


async def test_one_phrase_fires_once(wake):
    samples = np.concatenate([read_wav("jarvis"), np.zeros(SAMPLE_RATE, dtype=np.int16)])
    wake.reset()
    detections = 0
    for frame in frames(samples):
        if await wake.process(frame) >= wake.threshold:
            detections += 1
            wake.reset()  # what the pipeline does on a detection
    assert detections == 1


async def test_frames_are_stepped_every_80_ms(wake, monkeypatch):
    await wake.warmup()
    steps: list[tuple[int, int]] = []
    real_run = wake._run
    fed = 0

    def counting_run(chunk):
        steps.append((fed - 1, len(chunk)))
        return real_run(chunk)

    monkeypatch.setattr(wake, "_run", counting_run)
    for frame in frames(read_wav("story")[: 10 * FRAME_SAMPLES]):
        fed += 1
        await wake.process(frame)
    # Ten 512-sample frames hold four whole 1280-sample steps: the model ran on the 3rd,
    # 5th, 8th and 10th frames only; the others were buffered without a thread hop.
    assert steps == [(2, 1280), (4, 1280), (7, 1280), (9, 1280)]


def test_a_custom_tflite_model_by_path(speech_manifest):
    import pyopen_wakeword

    path = Path(pyopen_wakeword.__file__).parent / "models" / "hey_jarvis.tflite"
    det = OpenWakeWordDetector(WakeConfig(model=str(path)))
    assert det.name == "hey_jarvis"
    hit = max(det.process_sync(f) for f in frames(read_wav("jarvis")))
    assert hit >= det.threshold


def test_single_threaded_features_score_like_the_library_defaults(speech_manifest):
    from pyopen_wakeword import Model, OpenWakeWord, OpenWakeWordFeatures

    samples = read_wav("jarvis_time_tokyo")
    steps = [samples[i : i + 1280] for i in range(0, len(samples) - 1279, 1280)]

    def scores(ww, features) -> list[float]:
        return [
            float(p)
            for s in steps
            for e in features.process_streaming(s.tobytes())
            for p in ww.process_streaming(e)
        ]

    reference = scores(OpenWakeWord.from_builtin(Model.HEY_JARVIS), OpenWakeWordFeatures.from_builtin())
    det = OpenWakeWordDetector(WakeConfig())
    det._load()  # with IRIS's single-threaded feature interpreters
    ours = scores(det._ww, det._features)
    assert len(ours) == len(reference) > 100 and max(reference) > 0.9
    assert np.allclose(ours, reference, atol=1e-4)
