"""What IRIS says, or plays, when a server it needs is gone.

It owns the two sentences and the chime: ``UNREACHABLE`` is said instead of an answer
when the language model cannot be reached (the desktop pipeline and the hub's turn for
satellites both say it); a remote speech server (``stt.engine``/``tts.engine =
"wyoming"``) that is gone raises ``SpeechError`` with a speech-server code, logged once
by its adapter. Then an utterance that could not be transcribed gets one sentence,
``STT_UNREACHABLE``, and a reply or an announcement that could not be voiced gets the
chime instead, so a failure is never silence. None of it ends the daemon: the next turn
tries the server again. The pipeline decides when (under its speech lock, in which
state); this module decides what is heard.
"""

from __future__ import annotations

import logging

from iris_voice.audio.chime import chime
from iris_voice.conversation.trace import TurnTrace
from iris_voice.errors import SpeechError, is_speech_server_code
from iris_voice.voice.speaker import ReplySpeaker, SpokenReply

log = logging.getLogger(__name__)

UNREACHABLE = "Sorry, I can't reach my language model right now. I'll keep trying."
"""Said instead of an answer when the language model cannot be reached."""
STT_UNREACHABLE = "Sorry, I can't reach my speech recognition server right now. I'll keep trying."
"""Said when the remote speech-to-text server (``stt.uri``) is gone; without a voice
(the remote TTS gone too) a chime says that something failed."""


async def play_chime(speaker: ReplySpeaker) -> None:
    """The one sound IRIS makes without a voice (a remote TTS server that is gone)."""
    rate = speaker.tts.sample_rate
    await speaker.play_clip(chime(rate), rate)


async def voice_gone(
    speaker: ReplySpeaker,
    exc: SpeechError,
    what: str | None = None,
    trace: TurnTrace | None = None,
    *,
    sound: bool = True,
) -> bool:
    """Handle ``exc`` from speaking if it says a remote speech server is gone: log that
    ``what`` was not spoken, record the error in ``trace``, play the chime (unless
    ``sound`` is False: an alarm's own clip already rang). False for any other speech
    error, which the caller re-raises (called from its ``except`` clause)."""
    if not is_speech_server_code(exc.code):
        return False
    if what is not None:
        log.info("%s not spoken: %s", what, exc.message)
    if trace is not None:
        trace.extra["error"] = {"code": exc.code, "message": exc.message}
    if sound:
        await play_chime(speaker)
    return True


def not_transcribed(exc: SpeechError) -> TurnTrace:
    """The trace of an utterance the remote speech recognition server never got to
    transcribe: no text, the server's error."""
    log.info("utterance not transcribed: %s", exc.message)
    trace = TurnTrace(text="")
    trace.extra["error"] = {"code": exc.code, "message": exc.message}
    return trace


async def say_stt_unreachable(speaker: ReplySpeaker, trace: TurnTrace) -> SpokenReply:
    """Say ``STT_UNREACHABLE`` (the reply in ``trace``), or play the chime if the voice is
    gone too (an empty reply); any other speech error propagates."""
    try:
        reply = await speaker.say(STT_UNREACHABLE)
    except SpeechError as exc:
        if not await voice_gone(speaker, exc):
            raise
        return SpokenReply()
    trace.reply = STT_UNREACHABLE
    return reply
