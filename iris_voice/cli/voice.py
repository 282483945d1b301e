"""The voice-daemon side of the ``iris`` command: ``run``, the control commands, file mode.

Kept apart from ``cli/main.py`` so text-only commands never import numpy or the engines;
it imports nothing from ``main`` (the exit codes are ``iris_voice.errors``'s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any, TextIO

from iris_voice.app.control import reply_fields, request
from iris_voice.config import Config
from iris_voice.errors import EXIT_FAILED, EXIT_UNAVAILABLE, EXIT_USAGE, is_llm_code, is_speech_server_code
from iris_voice.safejson import one_line

log = logging.getLogger(__name__)


def cmd_run(args: argparse.Namespace, cfg: Config) -> int:
    """Run the daemon in the foreground until SIGTERM/SIGINT."""
    from iris_voice.app.daemon import Daemon
    from iris_voice.app.runtime import runtime_dir

    runtime_dir()  # refuse an unsafe runtime directory before loading any model

    async def main() -> int:
        return await Daemon(cfg).run()

    return asyncio.run(main())


def cmd_serve(args: argparse.Namespace, cfg: Config) -> int:
    """``iris serve``: IRIS headless, as a Wyoming service, until SIGTERM/SIGINT."""
    from iris_voice.app.headless import Hub
    from iris_voice.app.runtime import runtime_dir
    from iris_voice.config import parse

    if args.uri:  # through the schema and the trust checks again, as if it were in the file
        cfg = parse({**cfg.model_dump(), "serve": {**cfg.serve.model_dump(), "uri": args.uri}}, "--uri")
    runtime_dir()

    async def main() -> int:
        return await Hub(cfg).run()

    return asyncio.run(main())


def cmd_satellite(args: argparse.Namespace, cfg: Config) -> int:
    """Run as a satellite of the hub in ``--hub`` (or ``satellite.hub``), or wait for a hub on
    ``--listen`` (``satellite.listen``), until SIGTERM/SIGINT."""
    from iris_voice.app.satellite_mode import SatelliteMode

    async def run() -> int:
        return await SatelliteMode(cfg, args.hub, args.name, listen=args.listen).run()

    return asyncio.run(run())


def _send(cmd: str, timeout: float = 10.0, **fields: Any) -> dict[str, Any]:
    answer = request(cmd, timeout=timeout, **fields)
    if not answer.get("ok"):
        print(f"iris {cmd}: {one_line(answer.get('error'))}", file=sys.stderr)
    return answer


def _simple(cmd: str):
    def run(args: argparse.Namespace, cfg: Config) -> int:
        answer = _send(cmd)
        if answer.get("ok"):
            print(json.dumps({k: v for k, v in answer.items() if k != "ok"}))
        return 0 if answer.get("ok") else 1

    run.__doc__ = f"``iris {cmd}`` through the control socket."
    return run


cmd_listen, cmd_stop, cmd_mute, cmd_unmute = (_simple(c) for c in ("listen", "stop", "mute", "unmute"))


def cmd_forget(args: argparse.Namespace, cfg: Config) -> int:
    """``iris forget [ORIGIN]``: one conversation, or every one, starts anew."""
    answer = _send("forget", origin=args.origin)
    if answer.get("ok"):
        print(json.dumps({k: v for k, v in answer.items() if k != "ok"}))
    return 0 if answer.get("ok") else 1


def cmd_say(args: argparse.Namespace, cfg: Config) -> int:
    """Speak a text through the daemon."""
    return 0 if _send("say", timeout=120, text=args.text).get("ok") else 1


def cmd_status(args: argparse.Namespace, cfg: Config) -> int:
    """The daemon's status, as text or JSON."""
    answer = _send("status", timeout=cfg.llm.connect_timeout_s + 5)
    if not answer.get("ok"):
        return 1
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    with reply_fields("status"):
        lines = _status_lines(answer)
    print("\n".join(lines))
    return 0


def _serve_lines(serve: dict[str, Any]) -> list[str]:
    """The Wyoming service's part of ``iris status``: address, programs, clients."""
    lines = [
        f"wyoming:    {serve['uri']} ({serve['programs']}; trust: {serve['auth']})",
        f"zeroconf:   {serve['zeroconf']}",
        f"clients:    {len(serve['clients'])} connected, {serve['refused']} refused since start",
    ]
    lines += [f"  {c['peer']} for {c['connected_s']:.0f} s" for c in serve["clients"]]
    return lines


def _hub_lines(answer: dict[str, Any]) -> list[str]:
    """``iris status`` of a headless hub (``iris serve``)."""
    llm, m = answer["llm"], answer["models"]
    reach = {True: "reachable", False: f"NOT reachable ({llm['error']})", None: "not tried yet"}
    lines = [
        f"state:      serving (headless), uptime {answer['uptime_s']:.0f} s, pid {answer['pid']}, "
        f"IRIS {answer['version']}",
        f"models:     stt {m['stt']}, tts {m['tts']}, llm {m['llm']}",
        f"llm server: {llm['host']} {reach[llm['reachable']]}",
        *_serve_lines(answer["serve"]),
    ]
    lines += [f"  not announced: #{t['id']} {t['message']}" for t in answer["timers"]["unannounced"]]
    return lines


def _satellite_lines(answer: dict[str, Any]) -> list[str]:
    """``iris status`` of a satellite (``iris satellite``)."""
    hub = answer["hub"]
    link = "connected" if hub["connected"] else "NOT connected"
    lines = [
        f"state:      {answer['state']}, satellite {hub['name']!r}, activation {answer['activation']}",
        f"uptime:     {answer['uptime_s']:.0f} s, pid {answer['pid']}, IRIS {answer['version']}",
        f"hub:        {hub['where']} {link}; {answer['turn_count']} questions, {hub['answers']} answers",
    ]
    if answer.get("alarm_ringing"):
        lines.append(f"ringing:    {answer['alarm_ringing']}")
    return lines


def _status_lines(answer: dict[str, Any]) -> list[str]:
    """``iris status`` as text (a reply without some field raises KeyError or TypeError)."""
    if answer.get("mode") == "serve":
        return _hub_lines(answer)
    if answer.get("mode") == "satellite":
        return _satellite_lines(answer)
    llm = answer["llm"]
    fa = answer["first_audio_ms"]
    reach = {True: "reachable", False: f"NOT reachable ({llm['error']})", None: "not tried yet"}[
        llm["reachable"]
    ]
    muted = " (muted)" if answer["muted"] else ""
    m = answer["models"]
    lines = [
        f"state:      {answer['state']}{muted}, activation {answer['activation']}",
        f"uptime:     {answer['uptime_s']:.0f} s, pid {answer['pid']}, IRIS {answer['version']}",
        f"models:     stt {m['stt']}, tts {m['tts']}, wake {m['wake']}, llm {m['llm']}",
        f"llm server: {llm['host']} {reach}",
        f"first audio: p50 {fa['p50']} ms, p95 {fa['p95']} ms over {fa['n']} turns",
    ]
    lag = answer.get("loop_lag_ms")  # absent from a daemon older than this command
    if lag:
        recent = lag["last_minute"]
        lines.append(
            f"loop lag: p99 {lag['p99']} ms, max {lag['max']} ms since start; "
            f"last minute p99 {recent['p99']} ms, max {recent['max']} ms"
        )
    for t in answer["turns"]:
        tm = t["timings_ms"]
        # stt_partials counts decodes; every other figure is milliseconds
        stages = ", ".join(
            f"{k} {v:.0f}" for k, v in tm.items() if isinstance(v, int | float) and k != "stt_partials"
        )
        partials = f", {tm['stt_partials']} partial decodes" if tm.get("stt_partials") else ""
        lines.append(f"  {t.get('transcript', t['text'])!r} -> {t['reply']!r}  [{stages} ms{partials}]")
    if answer.get("serve"):  # serve.enabled
        lines += _serve_lines(answer["serve"])
    return lines


def cmd_timers(args: argparse.Namespace, cfg: Config) -> int:
    """List or cancel timers in the running daemon."""
    answer = _send("timers", action=args.action, which=args.which)
    if not answer.get("ok"):
        return 1
    if args.json:
        print(json.dumps({k: v for k, v in answer.items() if k != "ok"}, indent=2))
        return 0
    with reply_fields("timers"):
        if args.action == "cancel":
            lines = [f"cancelled: {', '.join(f'#{i}' for i in answer['cancelled']) or 'nothing'}"]
        else:
            lines = [f"#{t['id']} {t['describe']}" for t in answer["timers"]] or ["#- no timers"]
    print("\n".join(lines))
    return 0


def cmd_devices(args: argparse.Namespace, cfg: Config) -> int:
    """List audio devices (PortAudio's view, as the daemon sees them) and which ones IRIS uses."""
    from dataclasses import asdict

    from iris_voice.audio.devices import describe, list_devices, resolve

    devices = list_devices()
    if args.json:
        print(json.dumps([asdict(d) for d in devices], indent=2))
        return 0
    print(f"input devices:  {describe(devices, 'input')}")
    print(f"output devices: {describe(devices, 'output')}   (* = system default)")
    for kind, value in (("input", cfg.audio.input_device), ("output", cfg.audio.output_device)):
        chosen = resolve(value, kind)
        print(f"IRIS {kind}: {chosen.index} {chosen.name}  (audio.{kind}_device = {value!r})")
    return 0


async def _file_turns(cfg: Config, wav_in: Path, wav_out: Path | None, errlog: TextIO | None) -> list:
    from iris_voice.app.filemode import FileTurns

    async with FileTurns(cfg, errlog=errlog) as turns:
        return await turns.run(wav_in, wav_out)


def ask_wav(cfg: Config, args: argparse.Namespace, errlog: TextIO | None = None) -> int:
    """``iris ask --wav IN [--out OUT] [--json]``: MCP servers are started as for a typed turn."""
    wav_in = Path(args.wav)
    if not wav_in.is_file():
        print(f"iris ask: no such file: {wav_in}", file=sys.stderr)
        return EXIT_USAGE
    turns = asyncio.run(_file_turns(cfg, wav_in, Path(args.out) if args.out else None, errlog))
    if args.json:
        print(json.dumps(turns[0] if len(turns) == 1 else {"turns": turns}, indent=2, ensure_ascii=False))
    else:
        for t in turns:
            print(f"> {t['transcript']}\n{'(stop)' if t.get('command') == 'stop' else t['reply']}")
    if not turns:
        print("iris ask: no speech found in the file", file=sys.stderr)
        return EXIT_FAILED
    failed = [t["error"] for t in turns if t.get("error")]
    for error in failed:
        print(f"iris: {error.get('message', '')} [{error.get('code', '')}]", file=sys.stderr)
    if any(is_llm_code(e.get("code")) or is_speech_server_code(e.get("code")) for e in failed):
        return EXIT_UNAVAILABLE
    return EXIT_FAILED if failed else 0


def cmd_wake(args: argparse.Namespace, cfg: Config) -> int:
    """``iris wake --wav FILE [--threshold T] [--patience K] [--model NAME] [--[no-]verifier]``: the wake
    detector over a file, fed as the daemon's listener feeds it; exit 0 when it fired, 1
    when not, 2 for a file it cannot read (a missing or bad model raises ``ModelMissing``:
    exit 78)."""
    import numpy as np

    from iris_voice.audio import SAMPLE_RATE
    from iris_voice.audio.files import read_wav
    from iris_voice.audio.resample import resample
    from iris_voice.errors import AudioError
    from iris_voice.speech.wake import OpenWakeWordDetector, scan

    update = {
        "threshold": args.threshold,
        "model": args.model,
        "patience": getattr(args, "patience", None),
        "verifier": getattr(args, "verifier", None),
    }
    wake_cfg = cfg.wake.model_copy(update={k: v for k, v in update.items() if v is not None})
    try:
        samples, rate = read_wav(args.wav)
    except AudioError as exc:
        print(f"iris wake: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    detector = OpenWakeWordDetector(wake_cfg)  # a bad wake.model / --model raises here
    samples = resample(samples, rate, SAMPLE_RATE)
    # A second of silence after the recording, as file mode adds: the daemon would go on
    # hearing, and the model scores a phrase a little after it ends.
    padded = np.concatenate([samples, np.zeros(SAMPLE_RATE, np.int16)])
    result = scan(detector, padded, wake_cfg.threshold)
    print(
        f"{detector.name} over {args.wav} ({len(samples) / SAMPLE_RATE:.2f} s, then 1 s of silence), "
        f"threshold {wake_cfg.threshold:.2f}, patience {wake_cfg.patience}"
        + (", verifier" if getattr(detector, "verified", False) else "")
    )
    for at, score in result.detections:
        print(f"detected at {at:.2f} s (score {score:.3f})")
    if not result.detections:
        print("not detected")
    print(f"highest score {result.best_score:.3f} at {result.best_time_s:.2f} s")
    return 0 if result.detections else EXIT_FAILED
