"""``iris doctor``: is the language model usable, and the remote speech servers, and if not,
what to do about it."""

from __future__ import annotations

import asyncio
import re

from iris_voice.config import Config
from iris_voice.errors import ConfigError, LlmError, SpeechError
from iris_voice.llm.client import OllamaBackend


async def run_checks(cfg: Config) -> list[tuple[bool, str]]:
    """Each check as (passed, one line with the fix when it failed)."""
    results = await _local_checks(cfg)
    if cfg.boost.enabled:
        results.append(await _planner_check(cfg))
    results += await speech_server_checks(cfg)
    return results


async def speech_server_checks(cfg: Config) -> list[tuple[bool, str]]:
    """Each configured Wyoming speech server (``describe`` → ``info``): what it serves."""
    from iris_voice.speech.wyoming_client import describe
    from iris_voice.speech.wyoming_stt import stt_endpoint
    from iris_voice.speech.wyoming_tts import tts_endpoint

    results: list[tuple[bool, str]] = []
    for engine, endpoint in (("stt", stt_endpoint(cfg.stt)), ("tts", tts_endpoint(cfg.tts))):
        if getattr(cfg, engine).engine != "wyoming":
            continue
        label = "speech recognition" if engine == "stt" else "speech synthesis"
        try:
            info = await describe(endpoint)
        except SpeechError as exc:
            results.append((False, f"{label} server: {exc.message}"))
            continue
        programs = info.asr if engine == "stt" else info.tts
        if not programs:
            results.append((False, f"{label} server: {endpoint.uri} answers but serves no {engine} program"))
            continue
        served = []
        for p in programs:
            if engine == "stt":
                names = [m.name for m in p.models if m.installed] or [m.name for m in p.models]
                streams = "streams its transcript" if p.supports_transcript_streaming else "whole transcripts"
            else:
                names = [v.name for v in p.voices if v.installed] or [v.name for v in p.voices]
                streams = "streams text in" if p.supports_synthesize_streaming else "whole sentences"
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            version = f" {p.version}" if p.version else ""
            served.append(f"{p.name}{version} ({shown or 'no model listed'}; {streams})")
        results.append((True, f"{label} server: {endpoint.uri} serves {'; '.join(served)}"))
    return results


async def _planner_check(cfg: Config) -> tuple[bool, str]:
    """Does boost mode's planner answer? (Without it IRIS still answers, with the local model.)"""
    from iris_voice.conversation.boost import planner_backend

    try:
        planner = planner_backend(cfg)
    except ConfigError as exc:
        return False, f"boost planner: {exc.message}"
    try:
        async with asyncio.timeout(cfg.boost.timeout_s):
            async for _ in planner.stream([{"role": "user", "content": "Say OK."}], None, {"num_predict": 1}):
                pass
    except LlmError as exc:
        return False, f"boost planner: {exc.message} (until it answers, the local model answers alone)"
    except TimeoutError:
        return (
            False,
            f"boost planner: {planner.name} gave no reply within boost.timeout_s = {cfg.boost.timeout_s}",
        )
    return True, f"boost planner: {planner.name} answers"


def choice_check(version: str, choice: str) -> tuple[bool, str]:
    """Whether the server takes a JSON Schema as ``format`` (Ollama 0.5 and newer), which
    ``llm.choice`` needs; without it IRIS calls tools natively, as with ``choice = "off"``."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
    if parts and tuple(parts) >= (0, 5, 0):
        return True, f"constrained choice: {choice} (the server takes a JSON Schema as format)"
    return (
        False,
        f"constrained choice: the server ({version or 'unknown version'}) takes no JSON Schema "
        'as format (Ollama 0.5 or newer does): tools are called natively; set llm.choice = "off"',
    )


async def _local_checks(cfg: Config) -> list[tuple[bool, str]]:
    backend = OllamaBackend(cfg.llm)
    results: list[tuple[bool, str]] = []
    try:
        version = await backend.version()
    except LlmError as exc:
        return [(False, f"ollama server: {exc.message}")]
    results.append((True, f"ollama server: {cfg.llm.host} answers, version {version}"))
    try:
        info = await backend.show()
    except LlmError as exc:
        results.append((False, f"model: {exc.message}"))
        return results
    results.append((True, f"model: {cfg.llm.model} is available"))
    if "tools" in info.capabilities:
        results.append((True, "tool calling: native (the model's template supports tools)"))
    elif cfg.llm.tool_mode == "native":
        results.append(
            (False, 'tool calling: the model has no tool support; set llm.tool_mode = "auto" or "text"')
        )
    else:
        results.append(
            (True, f"tool calling: text mode ({cfg.llm.text_format}); the model has no native tool support")
        )
    if cfg.llm.choice != "off":
        results.append(choice_check(version, cfg.llm.choice))
    if "thinking" in info.capabilities:
        results.append(
            (True, "thinking: off (llm.think = true makes every answer wait for the model's reasoning)")
            if not cfg.llm.think
            else (False, "thinking: on; every answer waits for the model's reasoning: set llm.think = false")
        )
    if info.context_length and cfg.llm.num_ctx > info.context_length:
        results.append(
            (
                False,
                f"num_ctx: {cfg.llm.num_ctx} exceeds the model's {info.context_length}; lower llm.num_ctx",
            )
        )
    else:
        limit = f" (model maximum {info.context_length})" if info.context_length else ""
        results.append((True, f"num_ctx: {cfg.llm.num_ctx}{limit}"))
    return results


def echo_check(cfg: Config) -> tuple[bool | None, str]:
    """Echo cancellation: what the running daemon uses, else whether IRIS could start it.
    ``None`` is a note (it does not fail ``iris doctor``): headphones need no canceller."""
    from iris_voice.app.control import request
    from iris_voice.audio.aec import unavailable as aec_unavailable
    from iris_voice.audio.echo import AEC_HINT, CANCELLING, ENABLE_HINT, unavailable
    from iris_voice.errors import IrisError

    try:
        echo = request("status", timeout=3.0).get("echo")
    except (IrisError, OSError, ValueError):
        echo = None  # no daemon: say what it would do
    if isinstance(echo, dict):
        method, detail = echo.get("method"), echo.get("detail", "")
        ignored = f"; IRIS ignored its own voice {echo.get('ignored', 0)} time(s)"
        if method in CANCELLING:
            erle = echo.get("erle_db")
            removed = f"; it removed {erle:.0f} dB of IRIS's voice lately" if isinstance(erle, float) else ""
            return True, f"echo cancellation: active, {detail}{removed}{ignored}"
        if method == "off":
            return True, "echo cancellation: off (audio.echo_cancel = off, for headphones)"
        return None, (
            f"echo cancellation: not active ({detail}); IRIS only guards against its own voice "
            f"in software{ignored}. To enable it: {ENABLE_HINT}"
        )
    if cfg.audio.echo_cancel == "off":
        return True, "echo cancellation: off (audio.echo_cancel = off, for headphones)"
    if cfg.audio.echo_cancel == "guard":
        return (
            None,
            f"echo cancellation: software guard only (audio.echo_cancel = guard). "
            f"To enable it: {ENABLE_HINT}",
        )
    if cfg.audio.echo_cancel == "webrtc":
        why = aec_unavailable()
        if why is not None:
            return (
                None,
                f"echo cancellation: not available ({why}); IRIS will guard in software. "
                f"To enable it: {AEC_HINT}",
            )
        return True, "echo cancellation: available (WebRTC's AEC3 runs inside IRIS when it runs)"
    why = unavailable(cfg.audio)
    if why is not None:
        return (
            None,
            f"echo cancellation: not available ({why}); IRIS will guard in software. "
            f"To enable it: {ENABLE_HINT}",
        )
    return (
        True,
        "echo cancellation: available (IRIS starts PipeWire's WebRTC canceller when it runs; "
        "it is not running now)",
    )
