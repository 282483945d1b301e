"""WebRTC's echo canceller (AEC3) run in-process, fed the exact samples IRIS plays.

Offline and reproducible, on the scene of ``aec_scene`` (Piper replies, the test bed's
room, real people said with IRIS silent and over it). A chirp played first and found by
cross-correlation gives the delay hint (the room's own delay is never handed over). Each
canceller runs in 10 ms frames, far end fed beside the microphone as the daemon would. Printed per room and
configuration: ERLE where only IRIS talks (median over replies; 5th percentile of 100 ms
windows, the residue's spikes; what an output of only the noise would show), how much the person
is damped with IRIS silent and talking (the output's least-squares gain on the person's
own signal, 200-7000 Hz), the WER of IRIS's Whisper on the person's words over IRIS (raw
microphone, cancelled, person alone), and the time per 10 ms frame. Rows with the same
samples 150 ms late or early without a hint, or with a 100 ppm clock drift, show what
the exact reference is worth.

    .venv/bin/python -m tools.bench.aec_offline [--rooms default,harsh] [--configs ...]
        [--clips N] [--no-wer] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from tools.bench.aec_scene import (
    FRAME,
    HUMAN,
    NOISE_DB,
    PERSON_DB,
    RATE,
    ROOMS,
    Scene,
    Signals,
    build_scene,
    human_clips,
    locate_delay,
    piper_replies,
    room_signals,
    shifted,
    xcorr,
)  # fmt: skip
from tools.bench.stats import p50, percentile, pooled_wer, word_errors


@dataclass(frozen=True)
class Canceller:
    """One canceller configuration: the engine and the reference it is fed."""

    name: str
    """Row label."""
    engine: str
    """``livekit`` (livekit.rtc.AudioProcessingModule) or ``pywebrtc`` (pywebrtc_audio.AudioProcessor)."""
    noise_suppression: bool = False
    """WebRTC's noise suppressor after the canceller."""
    hint: bool = True
    """Give the chirp's delay as the stream delay (else 0: AEC3's own estimator alone)."""
    ref_shift_ms: float = 0.0
    """Feed the reference this much later (+) or earlier (-) than the samples were played."""
    drift_ppm: float = 0.0
    """Resample the reference by this much, as a monitor on another clock would deliver it."""


CONFIGS = (
    Canceller("livekit", "livekit"),
    Canceller("livekit+ns", "livekit", noise_suppression=True),
    Canceller("pywebrtc", "pywebrtc"),
    Canceller("pywebrtc+ns", "pywebrtc", noise_suppression=True),
    Canceller("livekit no hint", "livekit", hint=False),
    Canceller("livekit ref 150ms late", "livekit", hint=False, ref_shift_ms=150.0),
    Canceller("livekit ref 150ms early", "livekit", hint=False, ref_shift_ms=-150.0),
    Canceller("livekit drift 100ppm", "livekit", drift_ppm=100.0),
    Canceller("pywebrtc no hint", "pywebrtc", hint=False),
    Canceller("pywebrtc ref 150ms early", "pywebrtc", hint=False, ref_shift_ms=-150.0),
)


def erle_db(mic: np.ndarray, out: np.ndarray) -> float:
    """Echo return loss enhancement: microphone energy over the canceller's output energy, dB."""
    return float(10 * np.log10(max(float(np.sum(mic**2)), 1e-12) / max(float(np.sum(out**2)), 1e-12)))


def damping_db(out: np.ndarray, person: np.ndarray, rate: int = RATE) -> float:
    """How much quieter the person is in ``out`` than in the microphone, dB. Per STFT bin
    (32 ms frames, 200-7000 Hz, frames where the person is loud) the magnitude of the
    least-squares gain of ``out`` on ``person``, weighted by the person's energy: a delay
    or phase shift of the canceller's filters costs nothing, and what else is in ``out``
    (the echo's residue, noise) is uncorrelated and averages out."""
    n, hop = 512, 256
    frames = 1 + (len(person) - n) // hop
    if frames < 1:
        raise ValueError("damping_db needs at least 32 ms of audio")
    at = np.arange(n)[None, :] + hop * np.arange(frames)[:, None]
    f = np.fft.rfftfreq(n, 1 / rate)
    keep = (f >= 200) & (f <= 7000)
    p = np.fft.rfft(person[at] * np.hanning(n), axis=1)[:, keep]
    o = np.fft.rfft(out[at] * np.hanning(n), axis=1)[:, keep]
    energy = np.sum(np.abs(p) ** 2, axis=1)
    loud = energy > energy.max() * 10**-3.5
    power = np.sum(np.abs(p[loud]) ** 2, axis=0)
    gain = np.abs(np.sum(o[loud] * np.conj(p[loud]), axis=0)) / np.maximum(power, 1e-12)
    mean = float(np.sum(gain**2 * power) / max(float(np.sum(power)), 1e-12))
    return float(-10 * np.log10(mean)) if mean > 1e-12 else 120.0


def best_lag(out: np.ndarray, person: np.ndarray, max_lag: int = 400) -> int:
    """Samples by which ``out`` lags ``person`` (AEC3 delays the capture by its blocks)."""
    corr = xcorr(out, person)
    lags = np.concatenate([corr[-max_lag:], corr[: max_lag + 1]])
    return int(np.argmax(lags)) - max_lag


def _pcm(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


def engine(cfg: Canceller, hint_ms: int) -> Any:
    """A fresh canceller as ``step(far, near) -> out``, one 10 ms int16 frame each."""
    if cfg.engine == "livekit":
        from livekit import rtc

        ns = cfg.noise_suppression
        apm = rtc.AudioProcessingModule(echo_cancellation=True, noise_suppression=ns, high_pass_filter=True)
        apm.set_stream_delay_ms(hint_ms)  # the module keeps it: setting it every frame changed nothing

        def step(far: np.ndarray, near: np.ndarray) -> np.ndarray:
            f = rtc.AudioFrame(far.tobytes(), RATE, 1, FRAME)
            m = rtc.AudioFrame(near.tobytes(), RATE, 1, FRAME)
            apm.process_reverse_stream(f)
            apm.process_stream(m)  # in place
            return np.frombuffer(m.data, np.int16)

        return step
    from pywebrtc_audio import AudioProcessor

    ap = AudioProcessor(RATE, 1, echo_cancellation=True, noise_suppression=cfg.noise_suppression)
    ap.stream_delay_ms = hint_ms
    return lambda far, near: ap.process(near, far)


def reference(cfg: Canceller, ref: np.ndarray) -> np.ndarray:
    """The far end ``cfg`` feeds: the exact samples, shifted or drifted as it says."""
    if cfg.drift_ppm:  # more samples per second: the reference falls slowly behind
        ref = soxr.resample(ref, RATE, RATE * (1 + cfg.drift_ppm * 1e-6))[: len(ref)]
    return shifted(ref, round(cfg.ref_shift_ms * RATE / 1000)) if cfg.ref_shift_ms else ref


def cancel(step: Any, far: np.ndarray, mic: np.ndarray) -> tuple[np.ndarray, float]:
    """(output, seconds per frame): ``mic`` through ``step`` in 10 ms frames, far end beside it."""
    far, near = _pcm(far), _pcm(mic)
    out, spent = np.zeros(len(near)), 0.0
    for i in range(0, len(near) - FRAME + 1, FRAME):
        t0 = time.perf_counter()
        out[i : i + FRAME] = step(far[i : i + FRAME], near[i : i + FRAME])
        spent += time.perf_counter() - t0
    return out, spent / max(len(near) // FRAME, 1)


def _span(span: tuple[float, float], pad: tuple[float, float] = (0.0, 0.0)) -> slice:
    return slice(max(0, int((span[0] - pad[0]) * RATE)), int((span[1] + pad[1]) * RATE))


def measure(scene: Scene, sig: Signals, out: np.ndarray) -> dict[str, Any]:
    """ERLE, the ERLE of the noise alone and the person's damping of one run; ``out`` as the
    canceller returned it (its latency is found on the person and taken out)."""
    cal = int(scene.calibration_s * RATE)
    lag = best_lag(out[cal:], sig.person[cal:])
    out = shifted(out, -lag)
    quiet = np.ones(len(out), bool)  # where the person is silent
    for span in [s for t in scene.talks for s in (t.alone, t.over)]:
        quiet[_span(span, (0.1, 0.3))] = False
    erles, noise_only, windows, w = [], [], [], RATE // 10
    for span in scene.replies:
        s = _span(span, (0.0, 0.3))
        keep, mic, res = quiet[s], sig.mic[s], out[s]
        if keep.sum() < RATE:
            continue
        erles.append(erle_db(mic[keep], res[keep]))
        noise_only.append(erle_db(mic[keep], sig.noise[s][keep]))
        starts = [i for i in range(0, len(keep) - w, w) if keep[i : i + w].all()]
        energy = np.array([np.sum(mic[i : i + w] ** 2) for i in starts])
        loud = [i for i, e in zip(starts, energy, strict=True) if e > np.max(energy, initial=0.0) * 1e-3]
        windows += [erle_db(mic[i : i + w], res[i : i + w]) for i in loud]

    def damped(which: str) -> float | None:
        spans = [_span(getattr(t, which)) for t in scene.talks]
        return p50([damping_db(out[s], sig.person[s]) for s in spans], 1)

    return {"lag_samples": lag, "erle_p50_db": p50(erles, 1), "erle_p5_100ms_db": percentile(windows, 5, 1),
            "noise_db": p50(noise_only, 1), "damp_silent_db": damped("alone"), "damp_over_db": damped("over"),
            "out": out}  # fmt: skip


def wer_of(hear: Any, scene: Scene, audio: np.ndarray, which: str) -> tuple[float | None, list[str]]:
    """Pooled WER and transcripts of the person's words in ``audio`` (span ``alone`` or
    ``over``, 0.3 s before and 0.5 s after); (None, []) without a transcriber."""
    if hear is None:
        return None, []
    heard = [hear(audio[_span(getattr(t, which), (0.3, 0.5))]) for t in scene.talks]
    return pooled_wer(word_errors(t.text, h) for t, h in zip(scene.talks, heard, strict=True)), heard


def _pct(x: float | None) -> str:
    return "    -" if x is None else f"{100 * x:3.0f} %"


def report(rooms: list[dict[str, Any]]) -> str:
    """The printed tables, one per room, and the notes."""
    lines = []
    for r in rooms:
        lines += [
            "",
            f"room {r['room']}: {r['delay_ms']:.0f} ms, {r['gain_db']:.0f} dB, RT60 {r['rt60_ms']:.0f} ms;"
            f" chirp found {r['found_ms']:.1f} ms, {r['found_db']:.1f} dB;"
            f" person {PERSON_DB - r['gain_db']:+.0f} dB against the direct echo;"
            f" noise {NOISE_DB:.0f} dB against IRIS's voice",
            f"WER of the person's words over IRIS, raw microphone: {_pct(r['wer_raw'])}; "
            f"person alone: {_pct(r['wer_alone'])}",
            f"{'canceller':24} {'hint':>6} {'ERLE p50':>8} {'p5 100ms':>8} {'noise':>8} "
            f"{'damped: silent':>14} {'over IRIS':>9} {'WER':>5} {'us/frame':>8} {'RTF':>6}",
        ]
        for c in r["configs"]:
            lines.append(
                f"{c['name']:24} {c['hint_ms']:>3} ms {c['erle_p50_db']:>5.1f} dB"
                f" {c['erle_p5_100ms_db']:>5.1f} dB {c['noise_db']:>5.1f} dB"
                f" {c['damp_silent_db']:>11.1f} dB {c['damp_over_db']:>6.1f} dB"
                f" {_pct(c['wer'])} {c['us_per_frame']:>8.0f} {c['us_per_frame'] / 10000:>6.3f}"
            )
    lines += [
        "",
        "ERLE: microphone over output energy where only IRIS talks (median over replies; p5 of its 100 ms",
        "windows = the residue's spikes; noise = the ERLE of an output holding only the noise). damped:",
        "the person's level lost in the output, IRIS silent / talking (median over clips). PipeWire's",
        "echo-cancel removed 9-13 dB of this room's echo in the live bench, with spiky residue",
        "(docs/benchmarks.md, 'IRIS in a room: its own voice'). Offline the room is linear and still and",
        "the clocks agree, so these are the canceller's best case; the misaligned rows show what a late,",
        "early or drifting reference costs. RTF: time per 10 ms frame / 10 ms, one thread, busy machine.",
    ]
    return "\n".join(lines)


def run_room(name: str, scene: Scene, configs: list[Canceller], hear: Any) -> dict[str, Any]:
    """Every configuration over one room's microphone; the room's figures."""
    room, cal = ROOMS[name], int(scene.calibration_s * RATE)
    sig = room_signals(scene, room)
    found_ms, found_db = locate_delay(sig.mic[:cal], sig.ref[:cal], RATE)
    r = {"room": name, **asdict(room), "found_ms": found_ms, "found_db": found_db, "configs": []}
    r["wer_raw"], r["heard_raw"] = wer_of(hear, scene, sig.mic, "over")
    r["wer_alone"], r["heard_alone"] = wer_of(hear, scene, sig.mic, "alone")
    for cfg in configs:
        hint = round(found_ms) if cfg.hint else 0
        out, spent = cancel(engine(cfg, hint), reference(cfg, sig.ref), sig.mic)
        m = measure(scene, sig, out)
        wer, heard = wer_of(hear, scene, m.pop("out"), "over")
        r["configs"].append({**asdict(cfg), "hint_ms": hint, **m, "us_per_frame": spent * 1e6, "wer": wer,
                             "heard": heard})  # fmt: skip
        print(
            f"  {name} / {cfg.name}: ERLE {m['erle_p50_db']} dB, WER {_pct(wer)}", file=sys.stderr, flush=True
        )
    return r


ENGINES = {"livekit": "livekit", "pywebrtc": "pywebrtc_audio"}
"""Each engine's top-level module, to skip what is not installed."""


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when it ran, 2 without the recordings or any canceller."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rooms", default=",".join(ROOMS), help=f"comma-separated, of {', '.join(ROOMS)}")
    ap.add_argument("--configs", default="", help="comma-separated canceller names (default: all)")
    ap.add_argument("--human", type=Path, default=HUMAN, help=f"the human recordings (default {HUMAN})")
    ap.add_argument("--clips", type=int, default=0, help="use only the first N clips (quick runs)")
    ap.add_argument("--no-wer", action="store_true", help="skip the Whisper decodes")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    wanted = [n.strip() for n in args.configs.split(",") if n.strip()]
    configs = [c for c in CONFIGS if not wanted or c.name in wanted]
    for gone in {c.engine for c in configs if importlib.util.find_spec(ENGINES[c.engine]) is None}:
        print(f"skipped {gone}: not installed (pip install -r requirements/bench-aec.txt)", file=sys.stderr)
        configs = [c for c in configs if c.engine != gone]
    if not (args.human / "manifest.json").is_file() or not configs:
        print(f"nothing to run: no {args.human / 'manifest.json'} or no canceller", file=sys.stderr)
        return 2
    clips = human_clips(args.human, args.clips)
    scene = build_scene(*piper_replies(), clips)
    hear = None
    if not args.no_wer:
        from iris_voice.config import load
        from iris_voice.speech.stt import FasterWhisperTranscriber

        whisper = FasterWhisperTranscriber(load(None)[0].stt)
        hear = lambda audio: whisper.transcribe_sync((audio / 32768).astype(np.float32))  # noqa: E731
    results = [run_room(name.strip(), scene, configs, hear) for name in args.rooms.split(",")]
    print(report(results))
    if args.json:
        versions = {p: metadata.version(p) for p in ("livekit", "pywebrtc-audio") if _installed(p)}
        args.json.write_text(json.dumps({"versions": versions, "rooms": results}, indent=2, default=float))
    return 0


def _installed(package: str) -> bool:
    try:
        return bool(metadata.version(package))
    except metadata.PackageNotFoundError:
        return False


if __name__ == "__main__":
    sys.exit(main())
