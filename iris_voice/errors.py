"""Errors that carry a stable code, translated once at each stage's boundary."""

from __future__ import annotations


class IrisError(Exception):
    """Base error: `code` is stable and machine-readable, `message` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(IrisError):
    """The configuration is invalid; `problems` lists one `key: reason` line each."""

    def __init__(self, problems: list[str], source: str = "") -> None:
        self.problems = problems
        self.source = source
        super().__init__("config-invalid", "; ".join(problems))


class LlmError(IrisError):
    """The language-model server failed (unreachable, missing model, timeout, bad reply)."""


class ToolError(IrisError):
    """A tool could not do what it was asked; the message goes back to the model."""

    def __init__(self, message: str) -> None:
        super().__init__("tool-failed", message)


class SpeechError(IrisError):
    """A speech engine (wake word, VAD, STT, TTS) could not load its model or failed to run."""


class AudioError(IrisError):
    """A microphone, speaker or audio file could not be used (the message says which and why)."""
