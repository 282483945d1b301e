"""Two cores, shared: thread counts for the models that overlap at the end of a turn.

When the user stops speaking, IRIS runs at once: Silero VAD on every 32 ms frame (in real
time), Whisper on the words at the pause and Smart Turn on the last 8 s; right after the
decision Piper synthesizes the reply's first sentence. Each model has its own thread pool
(CTranslate2's, and one onnxruntime pool per session), so on two cores their settings
decide who waits for whom. This benchmark replays that moment per human recording
(commands, questions and other speech of ``../shared/testdata/human-speech``) for each configuration,
the configurations taking turns clip by clip so a busy moment of the shared machine hits
each alike:

- ``decision``: Whisper's decode of the clip and Smart Turn's inference started together,
  VAD fed the clip's frames every 32 ms beside them; ms until both are done;
- ``piper``: then the first sentence of a typical reply, ms to Piper's first audio (VAD
  still running);
- ``total``: the two in a row: the part of first audio these models make.

Configurations (``whisper`` = ``stt.threads``, ``turn`` = Smart Turn's intra-op threads,
``piper`` = Piper's session: ``ort`` is onnxruntime's default, one thread per core with
spinning workers): printed p50/p95 of each figure and its p50 ratio to ``now``.

    .venv/bin/python -m tools.bench.threads [--reps 3] [--configs now,whisper1,...]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iris_voice import heavy
from iris_voice.config import SttConfig, TtsConfig
from iris_voice.speech.stt import FasterWhisperTranscriber
from iris_voice.speech.tts import PiperSynthesizer
from iris_voice.speech.turn import SmartTurnDetector
from iris_voice.speech.vad import FRAME_SAMPLES, SileroDetector
from tools.bench.rooms_speech import HUMAN, KINDS
from tools.bench.stats import p50, p95
from tools.bench.stt_window import read_clip

REPLY = "It is 3:05 PM in Tokyo."
"""The first sentence spoken (a fast-path answer's length)."""


@dataclass(frozen=True)
class Threads:
    """One configuration: thread counts per model."""

    whisper: int
    turn: int
    piper: int | None  # None: onnxruntime's defaults, as piper-tts loads its session
    spin: bool = True  # Piper's intra-op workers spin while waiting for work


def describe(t: Threads) -> str:
    """``t`` in words."""
    return f"whisper {t.whisper}, turn {t.turn}, piper {t.piper or 'ort'}{'' if t.spin else ' no spin'}"


CONFIGS = {
    "now": Threads(2, 1, None),
    "whisper1": Threads(1, 1, None),
    "turn2": Threads(2, 2, None),
    "piper1": Threads(2, 1, 1),
    "piper2-nospin": Threads(2, 1, 2, spin=False),
    "all1": Threads(1, 1, 1),
}


def piper_session(synth: PiperSynthesizer, threads: Threads) -> None:
    """Give ``synth``'s loaded voice a session with ``threads``' Piper settings."""
    if threads.piper is None:
        return
    ort = heavy.load("onnxruntime")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads.piper
    opts.inter_op_num_threads = 1
    if not threads.spin:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    voice = synth._load()
    voice.session = ort.InferenceSession(
        str(synth.model_path), sess_options=opts, providers=["CPUExecutionProvider"]
    )


class Models:
    """The models of one configuration, loaded and warmed up."""

    def __init__(self, threads: Threads) -> None:
        self.stt = FasterWhisperTranscriber(SttConfig(threads=threads.whisper))
        self.turn = SmartTurnDetector(threads=threads.turn)
        self.tts = PiperSynthesizer(TtsConfig())
        piper_session(self.tts, threads)
        self.stt.transcribe_sync(np.zeros(16000, np.float32))
        self.turn.probability_sync(np.zeros(16000, np.float32))
        self.first_audio(REPLY)

    def first_audio(self, text: str) -> None:
        """Synthesize until Piper's first chunk of ``text``."""
        chunks = self.tts._start(text)
        self.tts._next(chunks)


class RealTimeVad:
    """Silero VAD on a clip's frames every 32 ms, in its own thread, while the clip is set."""

    def __init__(self) -> None:
        self.vad = SileroDetector()
        self.audio: np.ndarray | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i, next_at = 0, time.perf_counter()
        while not self._stop.is_set():
            audio = self.audio
            if audio is not None and len(audio) >= FRAME_SAMPLES:
                start = (i * FRAME_SAMPLES) % (len(audio) - FRAME_SAMPLES + 1)
                self.vad.probability_sync(audio[start : start + FRAME_SAMPLES])
                i += 1
            next_at += FRAME_SAMPLES / 16000
            time.sleep(max(0.0, next_at - time.perf_counter()))

    def close(self) -> None:
        """Stop the thread."""
        self._stop.set()
        self._thread.join(2)


def end_of_turn(models: Models, clip: np.ndarray, pool: ThreadPoolExecutor) -> dict[str, float]:
    """One end of turn on ``clip``: ms for the decision (Whisper and Smart Turn together)
    and for Piper's first audio after it."""
    start = time.perf_counter()
    words = pool.submit(models.stt.transcribe_sync, clip)
    done = pool.submit(models.turn.probability_sync, clip[-8 * 16000 :])
    words.result()
    whisper_ms = (time.perf_counter() - start) * 1000
    done.result()
    decided = time.perf_counter()
    models.first_audio(REPLY)
    end = time.perf_counter()
    return {"decision": (decided - start) * 1000, "whisper": whisper_ms,
            "piper": (end - decided) * 1000, "total": (end - start) * 1000}  # fmt: skip


def main(args: argparse.Namespace) -> None:
    """Every configuration on every clip, ``--reps`` times, the configurations interleaved."""
    manifest = json.loads((args.human / "manifest.json").read_text())
    clips = [read_clip(args.human / c["file"]) for c in manifest if c.get("kind") in KINDS]
    names = args.configs.split(",")
    models = {name: Models(CONFIGS[name]) for name in names}
    described = [f"{n} ({describe(CONFIGS[n])})" for n in names]
    print(f"{len(clips)} human clips x {args.reps}; configurations: " + ", ".join(described), flush=True)
    rows: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    vad = RealTimeVad()
    try:
        with ThreadPoolExecutor(2) as pool:
            for rep in range(args.reps):
                for i, clip in enumerate(clips):
                    vad.audio = clip
                    order = names[(i + rep) % len(names) :] + names[: (i + rep) % len(names)]
                    for name in order:
                        rows[name].append(end_of_turn(models[name], clip, pool))
    finally:
        vad.close()
    base = {k: p50(r[k] for r in rows["now"]) if "now" in rows else None for k in ("decision", "total")}
    print(f"\n  {'config':15} {'decision p50/p95':>18} {'whisper p50':>12} {'piper p50/p95':>15} "
          f"{'total p50/p95':>15}  ratio to now (decision, total)")  # fmt: skip
    for name in names:
        r = rows[name]

        def fig(key: str, r: list[dict[str, float]] = r) -> str:
            return f"{p50(x[key] for x in r):.0f}/{p95(x[key] for x in r):.0f}"

        ratio = ""
        if base["decision"]:
            ratio = (f"{p50(x['decision'] for x in r) / base['decision']:.2f}, "
                     f"{p50(x['total'] for x in r) / base['total']:.2f}")  # fmt: skip
        print(f"  {name:15} {fig('decision'):>18} {p50(x['whisper'] for x in r):>12.0f} "
              f"{fig('piper'):>15} {fig('total'):>15}  {ratio}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="passes over the clips")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="configurations (comma-separated)")
    parser.add_argument("--human", type=Path, default=HUMAN)
    main(parser.parse_args())
