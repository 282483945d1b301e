"""The hostile clients of ``tools.bench.abuse_serve``, one coroutine per class.

They run in a process of their own (``run_class``), so the benchmark's good client and
probes are never slowed by the attackers' own event loop. Each class returns one line
saying what the attacker got; the benchmark takes the figures around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from wyoming.event import Event, async_read_event, async_write_event

from iris_voice.app.control import request
from iris_voice.wyoming.trust import AUTH_TYPE

HOST = "127.0.0.1"
CHUNK = b"\0" * 65536
"""One 64 KiB audio chunk (declared at rate 1 it would be 9 hours of audio)."""
RATE1 = {"rate": 1, "width": 2, "channels": 1}
CHUNKS_PER_STREAM = 16
"""64 KiB chunks sent after each ``audio-start`` at rate 1 (1 MiB a stream)."""
IDLE_HOLDERS = 64
TOKEN_HOLDERS = 16
GUESSERS = 32
CLAIMS = 50
NAMES = 10_000
STREAM_CYCLES = 500
"""Connections of ``stream-cycles``: each streams its microphone, then leaves."""
ANSWER_S = 10.0
"""How long an attacker waits for an answer before it counts the connection as stuck."""


@dataclass(frozen=True)
class Target:
    """The hub under attack."""

    port: int
    token: str
    control: Path
    """The hub's control socket (``iris status``)."""
    seconds: float
    """How long a timed class runs."""


Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _connect(port: int) -> Streams:
    return await asyncio.open_connection(HOST, port)


async def _send(
    writer: asyncio.StreamWriter, kind: str, data: dict | None = None, payload: bytes | None = None
) -> None:
    await async_write_event(Event(kind, data or {}, payload), writer)


async def _answer(reader: asyncio.StreamReader, *wanted: str) -> Event | None:
    """The next event of a type in ``wanted`` (or ``error``); None when the hub closes."""
    async with asyncio.timeout(ANSWER_S):
        while (event := await async_read_event(reader)) is not None:
            if event.type in wanted or event.type == "error":
                return event
    return None


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


def _label(event: Event | None) -> str:
    if event is None:
        return "closed"
    return f"error {event.data.get('code')}" if event.type == "error" else event.type


def _counts(seen: Counter[str]) -> str:
    return ", ".join(f"{what} x{n}" for what, n in seen.most_common()) or "nothing"


async def _until(
    seconds: float, workers: int, one: Callable[[Counter[str]], Awaitable[None]]
) -> Counter[str]:
    """``workers`` loops of ``one`` for ``seconds``; what they saw, counted."""
    seen: Counter[str] = Counter()
    end = time.monotonic() + seconds

    async def loop() -> None:
        while (left := end - time.monotonic()) > 0:
            try:
                async with asyncio.timeout(left):  # a connection still held at the end is let go
                    await one(seen)
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
                if time.monotonic() < end:  # (ValueError: a line cut by a reset is no JSON)
                    seen[f"{type(exc).__name__}"] += 1
                    await asyncio.sleep(0.05)  # a refused connect must not spin

    await asyncio.gather(*(loop() for _ in range(workers)))
    return seen


# -- the classes -------------------------------------------------------------------------------
async def rate1_chunk(t: Target) -> str:
    """A satellite turn and a plain ``transcribe``, each ``audio-start`` at rate 1 followed by
    1 MiB of 64 KiB chunks declared at rate 1, over and over."""
    sent = 0

    async def stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Event | None:
        nonlocal sent
        await _send(writer, "audio-start", RATE1)
        for _ in range(CHUNKS_PER_STREAM):
            await _send(writer, "audio-chunk", RATE1, CHUNK)
        sent += CHUNKS_PER_STREAM * len(CHUNK)
        await _send(writer, "audio-stop")
        return await _answer(reader, "transcript", "handled", "not-handled")

    async def satellite(seen: Counter[str]) -> None:
        reader, writer = await _connect(t.port)
        try:
            await _send(writer, "run-satellite", {"name": "den"})
            if (hello := await _answer(reader, "satellite-connected")) is None or hello.type == "error":
                seen[f"satellite refused: {_label(hello)}"] += 1
                return
            end = time.monotonic() + t.seconds
            while time.monotonic() < end:
                await _send(writer, "run-pipeline", {"start_stage": "asr", "end_stage": "tts"})
                seen[f"satellite turn: {_label(await stream(reader, writer))}"] += 1
        finally:
            _close(writer)

    async def transcribe(seen: Counter[str]) -> None:
        reader, writer = await _connect(t.port)
        try:
            end = time.monotonic() + t.seconds
            while time.monotonic() < end:
                await _send(writer, "transcribe", {"language": "en"})
                seen[f"transcribe: {_label(await stream(reader, writer))}"] += 1
        finally:
            _close(writer)

    seen: Counter[str] = Counter()
    await asyncio.gather(satellite(seen), transcribe(seen))
    return f"{sent / 2**20:,.0f} MiB at rate 1; {_counts(seen)}"


async def _holder(seen: Counter[str], port: int, describe: bool) -> None:
    """One connection that sends nothing (or only ``describe``) and waits to be closed."""
    reader, writer = await _connect(port)
    seen["opened"] += 1
    try:
        if describe:
            await _send(writer, "describe")
        while True:  # read until the hub closes it; the info and error events are all it says
            event = await async_read_event(reader)
            if event is None:
                seen["closed by the hub"] += 1
                return
            if event.type == "error":
                seen[f"error {event.data.get('code')}"] += 1
    finally:
        _close(writer)


async def idle_holders(t: Target) -> str:
    """64 connections that send nothing, each reopened as soon as the hub closes it."""
    seen = await _until(t.seconds, IDLE_HOLDERS, lambda s: _holder(s, t.port, describe=False))
    return f"{IDLE_HOLDERS} holders: {_counts(seen)}"


async def idle_holders_token(t: Target) -> str:
    """16 connections that ask ``describe`` and never authenticate, reopened as closed."""
    seen = await _until(t.seconds, TOKEN_HOLDERS, lambda s: _holder(s, t.port, describe=True))
    return f"{TOKEN_HOLDERS} holders: {_counts(seen)}"


async def name_takeover(t: Target) -> str:
    """A satellite "kitchen" that answers pings; 50 claims of its name on fresh connections."""
    reader, writer = await _connect(t.port)
    await _send(writer, "run-satellite", {"name": "kitchen"})
    hello = await _answer(reader, "satellite-connected")
    if hello is None or hello.type != "satellite-connected":
        return f"kitchen was not accepted: {_label(hello)}"
    kitchen_port = writer.get_extra_info("sockname")[1]
    pings = 0

    async def answer_pings() -> None:  # what IRIS's and Wyoming's satellites do
        nonlocal pings
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, ValueError):
            while (event := await async_read_event(reader)) is not None:
                if event.type == "ping":
                    pings += 1
                    await _send(writer, "pong", event.data)

    kitchen = asyncio.get_running_loop().create_task(answer_pings())
    claims: Counter[str] = Counter()
    for _ in range(CLAIMS):
        r, w = await _connect(t.port)
        try:
            await _send(w, "run-satellite", {"name": "kitchen"})
            claims[_label(await _answer(r, "satellite-connected"))] += 1
        finally:
            _close(w)
    await asyncio.sleep(0.5)
    status = await asyncio.to_thread(request, "status", 30.0, t.control)
    peers = {c["peer"]: c for c in status.get("serve", {}).get("clients", [])}
    listed = peers.get(f"{HOST}:{kitchen_port}", {}).get("admitted", False)
    still = not kitchen.done()
    kitchen.cancel()
    _close(writer)
    refused = claims.get("error name-taken", 0)
    return (
        f"{refused}/{CLAIMS} claims refused name-taken ({_counts(claims)}); kitchen answered {pings} "
        f"probes, still connected: {still}, admitted in iris status: {listed}"
    )


async def ten_k_names(t: Target) -> str:
    """10,000 ``run-satellite`` with distinct names, one connection after another."""
    seen: Counter[str] = Counter()
    t0 = time.monotonic()
    for i in range(NAMES):
        try:
            reader, writer = await _connect(t.port)
        except OSError as exc:
            seen[type(exc).__name__] += 1
            continue
        try:
            await _send(writer, "run-satellite", {"name": f"room-{i:05d}"})
            seen[_label(await _answer(reader, "satellite-connected"))] += 1
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
            seen[type(exc).__name__] += 1
        finally:
            _close(writer)
    took = time.monotonic() - t0
    return f"{NAMES:,} names in {took:.0f} s ({took / NAMES * 1000:.1f} ms each): {_counts(seen)}"


async def wrong_token_flood(t: Target) -> str:
    """32 connections at once guessing the token, each guess on a new connection."""

    async def guess(seen: Counter[str]) -> None:
        reader, writer = await _connect(t.port)
        try:
            seen["guesses"] += 1
            await _send(writer, AUTH_TYPE, {"token": f"wrong-{time.monotonic_ns():018d}"})
            seen[_label(await _answer(reader, "iris-auth-ok"))] += 1
        finally:
            _close(writer)

    seen = await _until(t.seconds, GUESSERS, guess)
    return f"{seen.pop('guesses', 0)} guesses sent ({GUESSERS} connections at a time): {_counts(seen)}"


async def describe_flood(t: Target) -> str:
    """Pipelined ``describe`` events: clients that each write thousands in one go and read
    the answers as they come, again and again, without authenticating."""
    answered = 0

    async def flood() -> None:
        nonlocal answered
        end = time.monotonic() + t.seconds
        while time.monotonic() < end:
            reader, writer = await _connect(t.port)
            try:
                writer.write(b'{"type": "describe"}\n' * 5000)
                await writer.drain()
                while time.monotonic() < end:
                    async with asyncio.timeout(max(0.1, end - time.monotonic())):
                        event = await async_read_event(reader)
                    if event is None:
                        break
                    answered += event.type == "info"
            except (TimeoutError, OSError, ValueError):
                pass
            finally:
                _close(writer)

    await asyncio.gather(*(flood() for _ in range(4)))
    return f"{answered:,} describes answered ({4} clients pipelining 5,000 at a time)"


async def long_sentence(t: Target) -> str:
    """One ``synthesize`` of a 2,000-character sentence with no punctuation, five times."""
    text = " ".join(["words"] * 333)[:2000]
    got: Counter[str] = Counter()
    audio = 0
    for _ in range(5):
        reader, writer = await _connect(t.port)
        try:
            if t.token:
                await _send(writer, AUTH_TYPE, {"token": t.token})
            await _send(writer, "synthesize", {"text": text})
            while (event := await _answer(reader, "audio-chunk", "audio-stop")) is not None:
                if event.type == "audio-stop" or event.type == "error":
                    got[event.type] += 1
                    break
                audio += len(event.payload or b"")
        finally:
            _close(writer)
    return f"{_counts(got)}; {audio / 2 / 22050:.0f} s of audio"


async def stream_cycles(t: Target) -> str:
    """Stock satellites one after another: ``run-satellite``, ``run-pipeline`` from the wake
    word, half a second of their microphone streamed (16 kHz mono chunks, no
    ``audio-start``), then gone — ``STREAM_CYCLES`` of them, or as many as ``seconds`` allow."""
    seen: Counter[str] = Counter()
    rng = np.random.default_rng(7)
    noise = (rng.standard_normal(1600) * 300).astype(np.int16).tobytes()  # 100 ms of a quiet room
    fmt = {"rate": 16000, "width": 2, "channels": 1}
    end = time.monotonic() + t.seconds
    status = await asyncio.to_thread(request, "status", timeout=30, path=t.control)
    pid = int(status["pid"])
    marks: dict[int, tuple[float, int]] = {}
    for i in range(STREAM_CYCLES):
        if time.monotonic() > end:
            break
        if i in (50, 250):  # the first sets loaded by now: what comes after is growth per cycle
            marks[i] = _rss_files(pid)
        reader, writer = await _connect(t.port)
        try:
            if t.token:
                await _send(writer, AUTH_TYPE, {"token": t.token})
            await _send(writer, "run-satellite", {"name": f"stream-{i % 8}"})
            if (hello := await _answer(reader, "satellite-connected")) is None or hello.type == "error":
                seen[f"refused: {_label(hello)}"] += 1
                continue
            await _send(writer, "run-pipeline", {"start_stage": "wake", "end_stage": "tts"})
            for _ in range(5):
                await _send(writer, "audio-chunk", fmt, noise)
            await writer.drain()
            seen["streamed"] += 1
        finally:
            _close(writer)
    await asyncio.sleep(2.0)  # the last connections' ears given back
    marks[seen["streamed"]] = _rss_files(pid)
    growth = ", ".join(f"after {n}: {mb:.0f} MB, {files} files" for n, (mb, files) in sorted(marks.items()))
    return f"{_counts(seen)}; {growth}"


def _rss_files(pid: int) -> tuple[float, int]:
    """The hub's VmRSS (MB) and open files now."""
    status = Path(f"/proc/{pid}/status").read_text()
    kb = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")), "0")
    return int(kb) / 1024, len(os.listdir(f"/proc/{pid}/fd"))


CLASSES: dict[str, Callable[[Target], Awaitable[str]]] = {
    "rate1-chunk": rate1_chunk,
    "idle-holders": idle_holders,
    "idle-holders-token": idle_holders_token,
    "name-takeover": name_takeover,
    "10k-names": ten_k_names,
    "wrong-token-flood": wrong_token_flood,
    "describe-flood": describe_flood,
    "long-sentence": long_sentence,
    "stream-cycles": stream_cycles,
}
"""Every hostile class, in the order the benchmark runs them."""


def run_class(name: str, target: Target) -> str:
    """Run one class against ``target`` (in a worker process); what the attacker got."""
    try:
        return asyncio.run(CLASSES[name](target))
    except Exception as exc:  # the bench reports; a broken class must not end the run
        return f"bench error: {type(exc).__name__}: {exc}"[:200]
