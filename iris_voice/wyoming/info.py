"""What ``iris serve``'s parts say about themselves in ``info``: attributions and languages."""

from __future__ import annotations

import re

from wyoming.info import Attribution

IRIS = Attribution(name="IRIS", url="")  # no public home page yet: an empty url, not an invented one
OLLAMA = Attribution(name="Ollama", url="https://ollama.com")
WHISPER = Attribution(
    name="OpenAI Whisper (faster-whisper, SYSTRAN)", url="https://github.com/SYSTRAN/faster-whisper"
)
PIPER = Attribution(name="Piper (Open Home Foundation)", url="https://github.com/OHF-Voice/piper1-gpl")


def languages(code: str) -> list[str]:
    """``["en"]`` from ``stt.language`` ("" = Whisper guesses: still say English first)."""
    return [code or "en"]


def voice_language(voice_name: str, fallback: str) -> str:
    """``en_US`` from a Piper voice name such as ``en_US-joe-medium``."""
    m = re.match(r"([a-z]{2,3}_[A-Z]{2})-", voice_name)
    return m.group(1) if m else fallback
