"""The end of turn: the segmenter ended early on a turn detector's word, asked after a short
silence and again while the silence lasts."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from iris_voice.config import AudioConfig
from iris_voice.events import EventBus
from iris_voice.speech.endpoint import CHECK_S, RECHECK_S, TurnEnd, Words, looks_unfinished
from iris_voice.speech.vad import Segmenter, UtteranceEnded
from iris_voice.voice.heard import UtteranceReady
from iris_voice.voice.listener import Listener
from tests.support.fakes_audio import FRAME_S, SILENCE, SPEECH, FakeVad, ScriptSource, frames

PAUSE_MARK = 2222  # a speech frame that tells the fake detector "the words so far are unfinished"


def test_segmenter_silence_and_an_early_end():
    seg = Segmenter(speech_seconds=0.1, hangover_seconds=1.0)
    assert seg.silence_s == 0 and seg.end_turn() is None  # no utterance yet
    for _ in range(5):
        seg.process(0.032, True)
    assert seg.in_utterance and seg.silence_s == 0
    for _ in range(4):
        assert seg.process(0.032, False) is None
    assert seg.silence_s == pytest.approx(0.128)
    seg.process(0.032, True)  # a blip: not yet speech, not silence either
    assert seg.silence_s == 0 and seg.end_turn() is None
    seg.process(0.032, False)
    event = seg.end_turn()
    assert isinstance(event, UtteranceEnded) and event.reason == "turn_complete"
    assert event.silence_s == pytest.approx(0.192)  # since the last confirmed speech
    assert seg.end_turn() is None and not seg.in_utterance


class ScriptedDetector:
    """A turn detector that calls the turn unfinished when the audio's last speech frame is a
    PAUSE_MARK frame; records each question and can be slow or broken."""

    name = "scripted-turn"

    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.asked: list[float] = []
        self.delay = delay
        self.fail = fail

    async def probability(self, audio: np.ndarray) -> float:
        voiced = [int(v) for v in audio[::512] if int(v) != SILENCE]
        self.asked.append(len(audio) / 16000)
        await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError("onnxruntime exploded")
        return 0.1 if voiced and voiced[-1] == PAUSE_MARK else 0.9

    async def warmup(self) -> None:
        """Nothing to load."""


class PauseVad(FakeVad):
    async def probability(self, frame: np.ndarray) -> float:
        return 1.0 if int(frame[0]) in (SPEECH, PAUSE_MARK) else 0.0


async def listen(script: list[np.ndarray], detector: ScriptedDetector | None, **audio) -> list:
    cfg = AudioConfig(activation="always", end_of_turn_max_ms=1000, vad_hangover_ms=400, **audio)
    turn_end = TurnEnd(detector) if detector is not None else None
    listener = Listener(cfg, PauseVad(), None, EventBus().publish, turn_end=turn_end)
    out: asyncio.Queue = asyncio.Queue(16)
    await asyncio.wait_for(listener.run(ScriptSource(script, speed=1.0, tail_s=1.5), out), 30)
    return [
        h.utterance for h in (out.get_nowait() for _ in range(out.qsize())) if isinstance(h, UtteranceReady)
    ]


async def test_a_finished_question_ends_soon_after_the_speech():
    detector = ScriptedDetector()
    (utt,) = await listen(frames(SILENCE, 0.3) + frames(SPEECH, 1.0), detector)
    assert utt.end_reason == "turn_complete" and utt.turn_probability == 0.9
    # asked once, after CHECK_S of silence; decided a frame or two later, long before 1 s
    assert len(detector.asked) == 1
    assert CHECK_S <= utt.hangover_s <= CHECK_S + 3 * FRAME_S


async def test_a_pause_inside_a_sentence_waits_for_the_rest():
    detector = ScriptedDetector()
    script = frames(SPEECH, 0.6) + frames(PAUSE_MARK, 0.1) + frames(SILENCE, 0.7) + frames(SPEECH, 0.6)
    (utt,) = await listen(script, detector)  # one utterance, not two
    assert len(utt.audio) / 16000 >= 0.6 + 0.1 + 0.7 + 0.6
    # The pause was asked about again while it lasted (each time "unfinished"), then the end once.
    in_pause = [t for t in detector.asked if t < 0.6 + 0.1 + 0.7]
    assert len(in_pause) >= 2 and len(detector.asked) == len(in_pause) + 1
    assert utt.end_reason == "turn_complete"


class GrowingDetector(ScriptedDetector):
    """Calls the turn finished only once ``sure_after_s`` of silence ends the audio (Smart Turn
    grows surer as the silence after a finished sentence goes on)."""

    def __init__(self, sure_after_s: float) -> None:
        super().__init__()
        self.sure_after_s = sure_after_s

    async def probability(self, audio: np.ndarray) -> float:
        self.asked.append(len(audio) / 16000)
        voiced = np.flatnonzero(audio != SILENCE)
        silence_s = (len(audio) - (voiced[-1] + 1 if voiced.size else 0)) / 16000
        return 0.9 if silence_s >= self.sure_after_s else 0.3


async def test_a_turn_unsure_at_first_ends_once_the_detector_is_sure_not_at_the_maximum():
    detector = GrowingDetector(sure_after_s=0.4)
    (utt,) = await listen(frames(SILENCE, 0.3) + frames(SPEECH, 1.0), detector)
    assert utt.end_reason == "turn_complete" and utt.turn_probability == 0.9
    assert len(detector.asked) >= 2  # unsure at CHECK_S, asked again as the silence went on
    assert 0.4 <= utt.hangover_s < 1.0 - 2 * FRAME_S  # long before end_of_turn_max_ms
    gaps = np.diff(detector.asked)
    assert (gaps >= RECHECK_S - 1e-6).all()  # never asked more often than every RECHECK_S


async def test_an_unfinished_turn_ends_after_the_long_silence():
    detector = ScriptedDetector()
    (utt,) = await listen(frames(SPEECH, 0.6) + frames(PAUSE_MARK, 0.1), detector)
    assert utt.end_reason == "silence" and utt.turn_probability == 0.1
    assert utt.hangover_s == pytest.approx(1.0, abs=2 * FRAME_S)


async def test_speech_that_resumes_drops_the_pending_verdict():
    # The detector answers after 0.4 s; the speaker goes on after 0.3 s of pause: that
    # verdict ("complete") must not end the turn in the middle of the second half.
    detector = ScriptedDetector(delay=0.4)
    script = frames(SPEECH, 0.6) + frames(SILENCE, 0.3) + frames(SPEECH, 0.8)
    (utt,) = await listen(script, detector)
    assert len(utt.audio) / 16000 >= 0.6 + 0.3 + 0.8


async def test_a_broken_detector_falls_back_to_the_silence(caplog):
    (utt,) = await listen(frames(SPEECH, 0.8), ScriptedDetector(fail=True))
    assert utt.end_reason == "silence" and utt.hangover_s == pytest.approx(1.0, abs=2 * FRAME_S)
    assert "end-of-turn detector failed" in caplog.text


async def test_without_a_detector_the_hangover_decides():
    (utt,) = await listen(frames(SPEECH, 0.8), None)
    assert utt.end_reason == "silence" and utt.hangover_s == pytest.approx(0.4, abs=2 * FRAME_S)


@pytest.mark.parametrize(
    ("text", "unfinished"),
    [
        ("Set a timer for.", True),
        ("What is 23 times?", True),
        ("How much time is left on?", True),
        ("Remind me to call.", True),
        ("Set a timer for...", True),
        ("What is the capital of France,", True),
        ("Set a timer for ten minutes.", False),
        ("What is 23 times 47?", False),
        ("Remind me to call mom.", False),
        ("What time is it?", False),
        ("Stop.", False),
        ("Set a timer for five.", True),
        ("Remind me in twenty", True),
        ("Set a timer for 10", True),
        ("Set a timer for five minutes.", False),
        ("What is six times five?", False),
        ("", False),
    ],
)
def test_words_a_sentence_cannot_end_on(text, unfinished):
    assert looks_unfinished(text) is unfinished


class StaticDetector:
    name = "static"

    def __init__(self, p: float) -> None:
        self.p = p

    async def probability(self, audio: np.ndarray) -> float:
        return self.p

    async def warmup(self) -> None:
        """Nothing to load."""


async def test_a_finished_sound_waits_for_the_words_and_an_open_word_vetoes_it():
    end = TurnEnd(StaticDetector(0.95))
    audio = lambda: np.zeros(16000, np.int16)  # noqa: E731
    pending = lambda: Words(None, True)  # noqa: E731
    assert not end.frame(0.2, audio, pending)  # asks the detector
    await asyncio.sleep(0.01)
    assert not end.frame(0.23, audio, pending)  # it says finished; the words are not in yet
    assert not end.frame(0.26, audio, lambda: Words("Set a timer for.", False))  # an open word
    assert end.vetoes == 1
    assert not end.frame(0.6, audio, lambda: Words("Set a timer for.", False))  # still waiting
    end.frame(0, audio)  # speech: "…ten minutes."
    assert not end.frame(0.2, audio, lambda: Words(None, True))
    await asyncio.sleep(0.01)
    assert end.frame(0.25, audio, lambda: Words("Set a timer for ten minutes.", False))


async def test_without_a_detector_the_silence_is_the_sound():
    end = TurnEnd(None, silence_s=0.4)
    audio = lambda: np.zeros(16000, np.int16)  # noqa: E731
    done = lambda: Words("What time is it?", False)  # noqa: E731
    assert not end.frame(0.3, audio, done)
    assert end.frame(0.4, audio, done)
    end.reset()
    assert not end.frame(0.4, audio, lambda: Words("What is 23 times?", False))


async def test_asked_once_per_pause_when_rechecks_are_off():
    detector = GrowingDetector(sure_after_s=0.4)
    cfg = AudioConfig(activation="always", end_of_turn_max_ms=1000, vad_hangover_ms=400)
    listener = Listener(cfg, PauseVad(), None, EventBus().publish, turn_end=TurnEnd(detector, recheck_s=0))
    out: asyncio.Queue = asyncio.Queue(16)
    script = frames(SILENCE, 0.3) + frames(SPEECH, 1.0)
    await asyncio.wait_for(listener.run(ScriptSource(script, speed=1.0, tail_s=1.5), out), 30)
    (utt,) = [
        h.utterance for h in (out.get_nowait() for _ in range(out.qsize())) if isinstance(h, UtteranceReady)
    ]
    assert len(detector.asked) == 1 and utt.end_reason == "silence"  # the unsure verdict waited the maximum


async def test_the_wake_phrase_alone_is_never_the_end_of_a_turn():
    # A follow-up capture has no wake word to hold it: "Hey Jarvis." at a pause only opens the turn.
    end = TurnEnd(None, silence_s=0.4, lead_in=lambda text: text.strip(" .,!").lower() == "hey jarvis")
    audio = lambda: np.zeros(16000, np.int16)  # noqa: E731
    assert not end.frame(0.4, audio, lambda: Words("Hey Jarvis.", False))
    assert end.vetoes == 1
    end.frame(0, audio)  # speech: the question
    assert end.frame(0.4, audio, lambda: Words("Hey Jarvis. What time is it?", False))
    assert TurnEnd(None, silence_s=0.4).frame(0.4, audio, lambda: Words("Hey Jarvis.", False))
