"""Speculative decoding at a pause (``stt.speculative``): the text is ready when the
speaker turns out to be done, and dropped when they go on."""

from __future__ import annotations

from iris_voice.speech.stt_stream import IncrementalSession
from tests.unit.test_stt_stream import FakeDecoder, Feeder, settle


async def test_a_pause_decodes_everything_so_far_and_the_end_needs_no_decode():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15, speculative=True)
    f = Feeder(s)
    f.speech(1.2)
    assert s.speculation() is None
    f.silence(0.2)  # a pause long before 2 s of audio: a speculative decode, not a cut
    await settle()
    assert len(dec.calls) == 1 and s.partials == 0 and s.speculations == 1
    spoken = s.speculation()
    assert spoken == dec.calls[0][0]
    f.silence(0.3)  # the speaker was done
    text = await s.finish()
    assert len(dec.calls) == 1  # nothing left to decode after the end of speech
    assert text == spoken and s.speculated and s.timings()["stt_speculated"] is True


async def test_speech_after_the_pause_drops_the_speculation_and_the_tail_covers_it():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15, speculative=True)
    f = Feeder(s)
    f.speech(0.8), f.silence(0.2)
    await settle()
    assert s.speculation() is not None
    f.speech(0.6)  # "…for eight minutes": the speaker was not done
    assert s.speculation() is None
    f.silence(0.1)  # too short for a pause
    text = await s.finish()
    # the last decode covers the whole utterance again, from the start, without a prompt
    assert dec.calls[-1] == (f"0-{f.n - 1}", "") and text == f"0-{f.n - 1}"
    assert not s.speculated


async def test_a_speculation_after_a_committed_piece_continues_it():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15, speculative=True)
    f = Feeder(s)
    f.speech(2.4), f.silence(0.2)  # a real cut: committed
    await settle()
    assert s.partials == 1
    f.speech(0.7), f.silence(0.2)  # too little since the cut for another: a speculation
    await settle()
    assert s.speculations == 1 and dec.calls[1][1] == dec.calls[0][0]  # prompted with the prefix
    text = await s.finish()
    assert len(dec.calls) == 2 and s.speculated
    first, second = text.split()
    assert first == dec.calls[0][0] and second.split("-")[0] == first.split("-")[1]  # consecutive
    pause_start = round((2.4 + 0.2 + 0.7) / 0.032)
    assert pause_start <= int(second.split("-")[1]) < f.n  # up to the middle of the last pause


async def test_without_speculation_a_short_question_waits_for_its_end():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15)
    f = Feeder(s)
    f.speech(1.2), f.silence(0.4)
    await settle()
    assert dec.calls == [] and s.speculation() is None
    await s.finish()
    assert len(dec.calls) == 1 and not s.speculated


async def test_a_cancelled_session_offers_nothing():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15, speculative=True)
    f = Feeder(s)
    f.speech(1.0), f.silence(0.2)
    await settle()
    s.cancel()
    assert s.speculation() is None


async def test_the_words_at_a_pause_are_pending_then_ready_then_gone_with_speech():
    dec = FakeDecoder(hold=True)
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15, speculative=True)
    f = Feeder(s)
    f.speech(1.0)
    assert s.words() == (None, False)  # no pause yet
    f.silence(0.2)
    await settle()
    assert s.words() == (None, True)  # decoding what came before the pause
    dec.release.set()
    await settle()
    text, pending = s.words()
    assert not pending and text == dec.calls[0][0]
    f.speech(0.1)
    assert s.words() == (None, False)


async def test_a_cut_at_the_pause_gives_its_words_too():
    dec = FakeDecoder()
    s = IncrementalSession(dec, min_chunk_s=2.0, pause_s=0.15)  # not speculative: a real cut
    f = Feeder(s)
    f.speech(2.4), f.silence(0.2)
    await settle()
    assert s.partials == 1 and s.words() == (dec.calls[0][0], False)
    assert s.speculation() is None  # offered to the pipeline only with speculative
