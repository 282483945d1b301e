"""What ``iris status`` and ``iris ask --wav`` show of a voice turn.

A voice turn's record is its ``TurnTrace`` (the question, the reply, the model's
figures) plus what only the voice side knows: the transcript, what opened the turn,
whether the user interrupted, what was heard of the reply, and the timings measured
from the end of speech (the VAD hangover counted in). The pipeline keeps the latest
records; this module decides what one holds.
"""

from __future__ import annotations

from typing import Any

from iris_voice.conversation.trace import TurnTrace
from iris_voice.voice.heard import Utterance
from iris_voice.voice.speaker import SpokenReply


def stop_trace(text: str) -> TurnTrace:
    """The trace of a stop command: a turn too (``iris ask --wav``, ``iris status`` show
    what was heard), one with no reply and ``command: "stop"``."""
    trace = TurnTrace(text=text)
    trace.extra["command"] = "stop"
    trace.finish()
    return trace


def voice_turn_record(
    utt: Utterance,
    text: str,
    trace: TurnTrace,
    reply: SpokenReply,
    timings: dict[str, Any],
    *,
    now: float,
    device_at: float | None,
) -> dict[str, Any]:
    """The record of the turn ``utt`` opened, at ``now`` on the pipeline's clock;
    ``device_at`` is when the sink sent its first sample to the device, if it knows."""
    result = trace.to_dict()
    result["transcript"] = text
    result["trigger"] = str(utt.trigger)
    result["interrupted"] = reply.interrupted
    result["spoken"] = reply.spoken
    t = result["timings_ms"]
    t.update(timings)
    t["llm_first_token"] = t.pop("first_token", None)
    t["tts_first_audio"] = reply.tts_first_ms
    t["total"] = round(utt.hangover_s * 1000 + (now - utt.decided_at) * 1000, 1)
    # A speaker sink knows when the first sample went to the device, a few ms after it
    # was handed over; a later value belongs to a later burst (a gap between sentences).
    if reply.first_audio_at is not None and device_at is not None:
        if 0 <= device_at - reply.first_audio_at < 0.3:
            t["first_audio_ms"] = round(utt.hangover_s * 1000 + (device_at - utt.decided_at) * 1000, 1)
    result["first_audio_ms"] = t.get("first_audio_ms")
    return result
