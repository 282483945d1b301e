"""The endpointing state machine, driven with booleans only (no audio, no model)."""

from __future__ import annotations

import pytest

from iris_voice.speech.vad import (
    NoSpeech,
    Segmenter,
    SegmenterState,
    UtteranceEnded,
    UtteranceStarted,
)

FRAME = 0.032  # one 512-sample frame at 16 kHz


def feed(
    seg: Segmenter, pattern: list[tuple[bool, float]], chunk: float = FRAME
) -> list[tuple[float, object]]:
    """Feed runs of (is_speech, seconds) in ``chunk`` steps; (elapsed, event) for each event."""
    events = []
    for is_speech, seconds in pattern:
        for _ in range(round(seconds / chunk)):
            event = seg.process(chunk, is_speech)
            if event is not None:
                events.append((seg.elapsed_s, event))
    return events


def make(**kw) -> Segmenter:
    params = {"speech_seconds": 0.096, "hangover_seconds": 0.288, "max_seconds": 15.0, "timeout_seconds": 6.0}
    params.update(kw)
    return Segmenter(**params)


def test_silence_alone_starts_nothing_until_timeout():
    seg = make()
    assert feed(seg, [(False, 3.008)]) == []
    assert seg.state is SegmenterState.WAITING
    events = feed(seg, [(False, 3.008)])
    assert len(events) == 1
    at, event = events[0]
    assert isinstance(event, NoSpeech)
    assert event.waited_s == pytest.approx(6.016, abs=FRAME)
    assert seg.state is SegmenterState.DONE
    # Done means done: more input is ignored until reset.
    assert feed(seg, [(True, 1.0)]) == []


def test_no_timeout_when_disabled():
    seg = make(timeout_seconds=None)
    assert feed(seg, [(False, 60.0)]) == []
    assert seg.state is SegmenterState.WAITING


def test_speech_then_silence_is_one_utterance_with_exact_positions():
    seg = make()
    events = feed(seg, [(False, 0.512), (True, 1.024), (False, 1.0)])
    assert [type(e) for _, e in events] == [UtteranceStarted, UtteranceEnded]
    (t_start, started), (t_end, ended) = events
    assert started.start_s == pytest.approx(0.512)
    assert t_start == pytest.approx(0.512 + 0.096)  # confirmed after speech_seconds
    assert ended.reason == "silence"
    assert ended.start_s == pytest.approx(0.512)
    assert ended.end_s == pytest.approx(1.536)  # the true end of speech
    assert ended.silence_s == pytest.approx(0.288)  # exactly the hangover, in whole frames
    assert t_end == pytest.approx(ended.end_s + ended.silence_s)


def test_pauses_shorter_than_the_hangover_do_not_end_the_utterance():
    seg = make()
    pattern = [
        (True, 0.64),  # "what time is it"
        (False, 0.256),  # a pause mid-sentence, one frame short of the hangover
        (True, 0.48),  # "in Tokyo"
        (False, 0.16),
        (True, 0.32),
        (False, 0.5),
    ]
    events = feed(seg, pattern)
    assert [type(e) for _, e in events] == [UtteranceStarted, UtteranceEnded]
    ended = events[1][1]
    assert ended.start_s == pytest.approx(0.0)
    assert ended.end_s == pytest.approx(0.64 + 0.256 + 0.48 + 0.16 + 0.32)


def test_a_pause_as_long_as_the_hangover_ends_it():
    seg = make()
    events = feed(seg, [(True, 0.64), (False, 0.288), (True, 0.48)])
    assert [type(e) for _, e in events] == [UtteranceStarted, UtteranceEnded]
    assert events[1][1].end_s == pytest.approx(0.64)


def test_a_short_blip_before_speech_does_not_start_an_utterance():
    seg = make()
    events = feed(seg, [(True, 0.064), (False, 0.5), (True, 0.064), (False, 0.5)])
    assert events == []
    assert seg.state is SegmenterState.WAITING


def test_start_needs_consecutive_speech():
    seg = make()
    # Three separated speech frames add up to speech_seconds but are not a run.
    assert feed(seg, [(True, FRAME), (False, FRAME)] * 3) == []
    events = feed(seg, [(True, 0.096)])
    assert len(events) == 1 and isinstance(events[0][1], UtteranceStarted)
    assert events[0][1].start_s == pytest.approx(6 * FRAME)


def test_blips_in_the_trailing_silence_count_as_silence():
    seg = make()
    events = feed(seg, [(True, 0.64), (False, 0.128), (True, 0.032), (False, 0.16)])
    assert [type(e) for _, e in events] == [UtteranceStarted, UtteranceEnded]
    ended = events[1][1]
    assert ended.end_s == pytest.approx(0.64)  # the blip did not move the end of speech
    assert ended.silence_s == pytest.approx(0.288)  # blip included: it counts as silence


def test_a_word_starting_at_the_end_of_the_hangover_continues_the_utterance():
    seg = make()
    # The pause is one frame short of the hangover, then real speech resumes: the
    # decision waits for the run to be confirmed instead of cutting the word off.
    events = feed(seg, [(True, 0.64), (False, 0.256), (True, 0.32), (False, 0.5)])
    assert [type(e) for _, e in events] == [UtteranceStarted, UtteranceEnded]
    assert events[1][1].end_s == pytest.approx(0.64 + 0.256 + 0.32)


def test_max_length_cuts_a_long_utterance():
    seg = make(max_seconds=2.0)
    events = feed(seg, [(False, 0.32), (True, 5.0)])
    assert [type(e) for _, e in events] == [UtteranceStarted, UtteranceEnded]
    t_end, ended = events[1]
    assert ended.reason == "max_length"
    assert ended.silence_s == pytest.approx(0.0)
    assert t_end - ended.start_s == pytest.approx(2.0, abs=FRAME)


def test_timeout_does_not_fire_once_speaking():
    seg = make(timeout_seconds=1.0)
    events = feed(seg, [(False, 0.8), (True, 2.0), (False, 0.4)])
    assert [type(e) for _, e in events] == [UtteranceStarted, UtteranceEnded]


def test_uneven_chunk_sizes_keep_positions():
    seg = make()
    chunks = [(0.01, False)] * 10 + [(0.05, True)] * 4 + [(0.1, False)] * 3
    events = [e for c, s in chunks if (e := seg.process(c, s)) is not None]
    assert isinstance(events[0], UtteranceStarted) and events[0].start_s == pytest.approx(0.1)
    assert isinstance(events[1], UtteranceEnded) and events[1].end_s == pytest.approx(0.3)
    assert events[1].silence_s == pytest.approx(0.3)


def test_reset_listens_again_from_zero():
    seg = make()
    feed(seg, [(True, 0.5), (False, 0.5)])
    assert seg.state is SegmenterState.DONE
    seg.reset()
    assert seg.state is SegmenterState.WAITING and seg.elapsed_s == 0
    events = feed(seg, [(False, 0.128), (True, 0.5), (False, 0.5)])
    assert events[0][1] == UtteranceStarted(pytest.approx(0.128))


def test_in_utterance_flag():
    seg = make()
    assert not seg.in_utterance
    feed(seg, [(True, 0.2)])
    assert seg.in_utterance
    feed(seg, [(False, 0.5)])
    assert not seg.in_utterance


@pytest.mark.parametrize(
    "kw",
    [{"hangover_seconds": 0}, {"max_seconds": 0}, {"speech_seconds": -1}, {"timeout_seconds": 0}],
)
def test_bad_parameters_are_rejected(kw):
    with pytest.raises(ValueError):
        make(**kw)
