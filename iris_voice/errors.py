"""Errors that carry a stable code, translated once at each stage's boundary.

Every code is a ``Code`` member, so a caller compares against a constant rather than a
loose string; ``exit_code`` is the one place a code becomes a process exit status.
"""

from __future__ import annotations

from enum import StrEnum


class Code(StrEnum):
    """Stable, machine-readable error codes (what ``iris … --json`` and the control socket carry)."""

    CONFIG_INVALID = "config-invalid"
    TOOL_FAILED = "tool-failed"
    LLM_UNREACHABLE = "llm-unreachable"
    LLM_TIMEOUT = "llm-timeout"
    LLM_MODEL_MISSING = "llm-model-missing"
    LLM_NO_TOOLS = "llm-no-tools"
    LLM_AUTH = "llm-auth"
    LLM_RATE_LIMITED = "llm-rate-limited"
    LLM_ERROR = "llm-error"
    MODEL_MISSING = "model-missing"
    MODEL_INVALID = "model-invalid"
    STT_FAILED = "stt-failed"
    TTS_FAILED = "tts-failed"
    STT_UNREACHABLE = "stt-unreachable"
    TTS_UNREACHABLE = "tts-unreachable"
    WYOMING_UNREACHABLE = "wyoming-unreachable"
    AUDIO_UNAVAILABLE = "audio-unavailable"
    AUDIO_DEVICE_FAILED = "audio-device-failed"
    AUDIO_FILE_INVALID = "audio-file-invalid"
    ALREADY_RUNNING = "already-running"
    DAEMON_NOT_RUNNING = "daemon-not-running"
    DAEMON_TIMEOUT = "daemon-timeout"
    DAEMON_ERROR = "daemon-error"
    DAEMON_BAD_REPLY = "daemon-bad-reply"
    RUNTIME_UNSAFE = "runtime-unsafe"
    MUTED = "muted"
    BAD_REQUEST = "bad-request"
    TIMER_NOT_FOUND = "timer-not-found"


LLM_CODES = frozenset(c for c in Code if c.startswith("llm-"))
"""The codes of a language-model server that failed or could not be reached."""

EXIT_OK = 0
EXIT_FAILED = 1
"""A tool, a check or a command failed."""
EXIT_USAGE = 2
EXIT_NO_DAEMON = 3
"""The command needs the running daemon and there is none."""
EXIT_UNAVAILABLE = 69
"""EX_UNAVAILABLE: the language-model server, a remote speech server or a hub is unreachable."""
EXIT_ALREADY_RUNNING = 75
"""EX_TEMPFAIL: IRIS already runs for this user (the systemd units do not restart on it)."""
EXIT_PROTOCOL = 76
"""EX_PROTOCOL: what answered on the control socket does not speak its protocol."""
EXIT_CONFIG = 78
"""EX_CONFIG: the configuration is invalid, a model file is missing, or the runtime directory
is unsafe. A set-up problem that only a person can fix: the systemd units do not restart on it
(a refused runtime directory is 78 rather than 77 EX_NOPERM for that reason: restarting every
few seconds would only repeat the refusal in the journal)."""

_EXIT_CODES = {
    Code.CONFIG_INVALID: EXIT_CONFIG,
    Code.MODEL_MISSING: EXIT_CONFIG,
    Code.MODEL_INVALID: EXIT_CONFIG,
    Code.RUNTIME_UNSAFE: EXIT_CONFIG,
    Code.ALREADY_RUNNING: EXIT_ALREADY_RUNNING,
    Code.DAEMON_BAD_REPLY: EXIT_PROTOCOL,
    Code.DAEMON_NOT_RUNNING: EXIT_NO_DAEMON,
    **dict.fromkeys(LLM_CODES, EXIT_UNAVAILABLE),
    Code.STT_UNREACHABLE: EXIT_UNAVAILABLE,
    Code.TTS_UNREACHABLE: EXIT_UNAVAILABLE,
    Code.WYOMING_UNREACHABLE: EXIT_UNAVAILABLE,
}


def exit_code(code: str | None) -> int:
    """The process exit status for an error ``code`` (1 for any code without its own)."""
    try:
        return _EXIT_CODES.get(Code(code), EXIT_FAILED) if code else EXIT_FAILED
    except ValueError:
        return EXIT_FAILED


def is_llm_code(code: str | None) -> bool:
    """True for the codes of a language-model server failure."""
    return code in LLM_CODES


SPEECH_SERVER_CODES = frozenset({Code.STT_UNREACHABLE, Code.TTS_UNREACHABLE})
"""The codes of a remote speech server (Wyoming) that is gone or failing."""


def is_speech_server_code(code: str | None) -> bool:
    """True for a remote speech server failure (not a local model problem)."""
    return code in SPEECH_SERVER_CODES


class IrisError(Exception):
    """Base error: ``code`` is stable and machine-readable, ``message`` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(IrisError):
    """The configuration is invalid; ``problems`` lists one ``key: reason`` line each."""

    def __init__(self, problems: list[str], source: str = "") -> None:
        self.problems = problems
        self.source = source
        super().__init__(Code.CONFIG_INVALID, "; ".join(problems))


class LlmError(IrisError):
    """The language-model server failed (unreachable, missing model, timeout, bad reply)."""


class ToolError(IrisError):
    """A tool could not do what it was asked; the message goes back to the model."""

    def __init__(self, message: str) -> None:
        super().__init__(Code.TOOL_FAILED, message)


class SpeechError(IrisError):
    """A speech engine (wake word, VAD, STT, TTS) could not load its model or failed to run."""


class AudioError(IrisError):
    """A microphone, speaker or audio file could not be used (the message says which and why)."""
