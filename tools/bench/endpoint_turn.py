"""End of turn by Smart Turn against silence alone, on the same audio (``make bench-endpoint``).

Each recording goes once through Silero (``endpoint.probabilities``); then IRIS's listener
is replayed frame by frame, as ``Listener`` + ``TurnEnd`` run it: the segmenter waits up to
``audio.end_of_turn_max_ms``, and at every pause, after ``CHECK_S`` of silence, the real
Smart Turn model is asked about the audio so far, and again every ``RECHECK_S`` while the
silence lasts and its verdict fell short (policy ``smart_turn_once``: asked once per pause,
as IRIS did before). Its verdict arrives as long after the
question as the inference really took here, measured each time (speech that resumes
first makes it moot). Reported per recording: cut (the decision came before the speech
really ended) and the cost (true end of speech to the decision).

Recordings: the mid-sentence hesitations (``hesitate_*``: one sentence, its comma's
silence stretched to 0.5/0.7 s, the voice going on), the two-sentence pauses
(``endpoint_*``: each half ends as a finished sentence), the 34 spoken benchmark
questions, and the real human recordings of ``../shared/testdata/human-speech`` (kinds
command and question; their end of speech is Silero's last speech frame).
"""

from __future__ import annotations

import json
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.config import AudioConfig, SttConfig
from iris_voice.speech.endpoint import CHECK_S, RECHECK_S, looks_unfinished
from iris_voice.speech.turn import SmartTurnDetector
from iris_voice.speech.vad import Segmenter, UtteranceEnded
from iris_voice.voice.listener import SPEECH_HYSTERESIS
from tools.bench.stats import p50

FRAME_S = FRAME_SAMPLES / SAMPLE_RATE
WORDS_S = SttConfig().incremental_pause_ms / 1000
"""The silence at which the listener's session decodes the words so far (``stt.incremental_pause_ms``)."""
HUMAN = Path(__file__).resolve().parents[3] / "shared" / "testdata" / "human-speech"


def human_clips() -> dict[str, np.ndarray]:
    """The human command and question recordings (int16, 16 kHz), by file stem."""
    manifest = HUMAN / "manifest.json"
    if not manifest.is_file():
        return {}
    out = {}
    for clip in json.loads(manifest.read_text()):
        if clip.get("kind") in ("command", "question"):
            with wave.open(str(HUMAN / clip["file"]), "rb") as w:
                if w.getframerate() != SAMPLE_RATE or w.getnchannels() != 1:
                    continue
                out[Path(clip["file"]).stem] = np.frombuffer(w.readframes(w.getnframes()), np.int16).copy()
    return out


def after_wake(probs: list[float], threshold: float = 0.5, pre_roll_s: float = 0.25) -> int:
    """Where a capture opened by "Hey Jarvis" starts (a sample index): the end of the first
    speech run of at least 0.3 s that a pause of 0.1 s follows, minus the listener's
    pre-roll; 0 when there is none."""
    run = quiet = 0
    for i, p in enumerate(probs):
        if p >= threshold:
            run, quiet = run + 1, 0
        else:
            quiet += 1
            if run * FRAME_S >= 0.3 and quiet * FRAME_S >= 0.1:
                end = i + 1 - quiet
                return max(0, round((end * FRAME_S - pre_roll_s) * SAMPLE_RATE))
    return 0


class WordsAtPauses:
    """The speculative decode as the listener's session runs it: at ``WORDS_S`` into a pause
    after 0.7 s of speech, Whisper decodes everything so far (really, here; its text is
    ready that much later)."""

    def __init__(self, stt: Any) -> None:
        self.stt = stt
        self.decode_ms: list[float] = []

    def at(self, audio: np.ndarray, ready_from: float) -> tuple[str, float]:
        """The text of ``audio`` and when it would be ready (s)."""
        t0 = time.perf_counter()
        text = self.stt.transcribe_sync(audio.astype(np.float32) / 32768.0)
        took = time.perf_counter() - t0
        self.decode_ms.append(round(took * 1000, 1))
        return text, ready_from + took


def decide(
    probs: list[float],
    audio: np.ndarray,
    detector: SmartTurnDetector | None,
    audio_cfg: AudioConfig,
    words: WordsAtPauses | None = None,
    silence_s: float = 0.4,
    recheck_s: float | None = RECHECK_S,
    check_s: float = CHECK_S,
    words_s: float = WORDS_S,
) -> tuple[float | None, str, list[float], list[float]]:
    """Replay the listener with ``TurnEnd``'s rules (``detector`` None: 400 ms of silence is
    the sound's verdict; ``words`` None: no words check; ``recheck_s`` None: the detector is
    asked once per pause; ``check_s``: the silence of the first question; ``words_s``: the
    silence at which the words so far are decoded): (decision time in s or None, the reason,
    the detector's verdicts, their inference times in ms)."""
    longest = audio_cfg.end_of_turn_max_ms / 1000
    seg = Segmenter(hangover_seconds=longest, max_seconds=audio_cfg.max_utterance_s, timeout_seconds=None)
    verdicts, costs = [], []
    next_ask: float | None = check_s  # the silence at which the detector is asked (again)
    vetoed = False
    sound_at: float | None = None  # when this pause's sound verdict ("finished") is in
    text: tuple[str, float] | None = None  # this pause's words and when they are in
    speech_run = 0.0
    for i, p in enumerate(probs):
        threshold = audio_cfg.vad_threshold - (SPEECH_HYSTERESIS if seg.in_utterance else 0.0)
        speech = p >= threshold
        event = seg.process(FRAME_S, speech)
        now = (i + 1) * FRAME_S
        speech_run = speech_run + FRAME_S if speech else speech_run
        if isinstance(event, UtteranceEnded):
            return now, event.reason, verdicts, costs
        if not seg.in_utterance:
            continue
        if seg.silence_s <= 0:
            next_ask, vetoed = check_s, False  # speech again: this pause's verdicts are moot
            sound_at, text = None, None
            continue
        upto = audio[: (i + 1) * FRAME_SAMPLES]
        if words is not None and text is None and seg.silence_s + 1e-9 >= words_s and speech_run >= 0.7:
            text = words.at(upto, now)
        if detector is None:
            if sound_at is None and seg.silence_s + 1e-9 >= silence_s:
                sound_at = now
        elif sound_at is None and next_ask is not None and seg.silence_s + 1e-9 >= next_ask:
            t0 = time.perf_counter()
            prob = detector.probability_sync(upto)
            took = time.perf_counter() - t0
            verdicts.append(round(prob, 3))
            costs.append(round(took * 1000, 1))
            # The next question waits for this verdict, and for recheck_s more silence.
            next_ask = None if recheck_s is None else seg.silence_s + max(recheck_s, took)
            if prob >= audio_cfg.end_of_turn_threshold:
                sound_at = now + took
        if vetoed or sound_at is None or now < sound_at:
            continue
        if text is not None:
            if now < text[1]:
                continue  # waiting for the words
            if looks_unfinished(text[0]):
                vetoed = True
                continue
        if (ended := seg.end_turn()) is not None:
            return now, ended.reason, verdicts, costs
    return None, "none", verdicts, costs


POLICIES = (
    "smart_turn+words",
    "smart_turn_once+words",
    "silence250+words",
    "silence400+words",
    "smart_turn",
    "silence400",
    "smart_turn@128+words",
    "smart_turn@96+words",
)
"""The sound's verdict (Smart Turn asked again while the silence lasts, or once per pause, or
that many ms of silence), with or without the words check; ``…@128``: Smart Turn first
asked, or the words decoded, at that many ms of silence instead of ``CHECK_S`` / ``WORDS_S``.
The replay decodes at every pause it reaches (after 0.7 s of speech) as if the decoder were
free; the listener's session skips a pause while a decode is running."""


def _at(policy: str, part: str, default: float) -> float:
    """The silence (s) a policy names for ``part`` (``smart_turn@96`` → 0.096), or ``default``."""
    for piece in policy.split("+"):
        name, _, ms = piece.partition("@")
        if name == part and ms:
            return int(ms) / 1000
    return default


def run(recordings: dict[str, tuple[np.ndarray, float | None]], probabilities) -> dict[str, dict[str, dict]]:
    """Policy → recording name → verdict; ``recordings`` maps a name to (audio, true end in
    s, or None: Silero's last speech frame)."""
    from iris_voice.speech.stt import FasterWhisperTranscriber

    audio_cfg = AudioConfig()
    detector = SmartTurnDetector()
    detector.probability_sync(np.zeros(SAMPLE_RATE, np.int16))  # load
    stt = FasterWhisperTranscriber(SttConfig())
    stt.transcribe_sync(np.zeros(SAMPLE_RATE, np.float32))
    out: dict[str, dict[str, dict]] = {p: {} for p in POLICIES}
    for name, (audio, true_end) in recordings.items():
        padded = np.concatenate([audio, np.zeros(2 * SAMPLE_RATE, np.int16)])
        probs = probabilities(padded)
        if true_end is None:
            voiced = [i for i, p in enumerate(probs) if p >= audio_cfg.vad_threshold]
            true_end = (voiced[-1] + 1) * FRAME_S if voiced else 0.0
        for policy in POLICIES:
            smart = detector if policy.startswith("smart_turn") else None
            words = WordsAtPauses(stt) if "+words" in policy else None
            quiet = int(policy.removeprefix("silence").split("+")[0]) / 1000 if smart is None else 0.4
            recheck = None if policy.startswith("smart_turn_once") else RECHECK_S
            check_s, words_s = _at(policy, "smart_turn", CHECK_S), _at(policy, "words", WORDS_S)
            decided, reason, verdicts, costs = decide(
                probs, padded, smart, audio_cfg, words, quiet, recheck, check_s, words_s
            )
            cost = None if decided is None else round((decided - true_end) * 1000, 1)
            out[policy][name] = {
                "cut": decided is not None and decided < true_end, "cost_ms": cost, "reason": reason,
                "verdicts": verdicts, "inference_ms": costs, "decode_ms": words.decode_ms if words else [],
            }  # fmt: skip
    return out


def _kind(name: str) -> str:
    for prefix in ("hesitate", "endpoint", "bench"):
        if name.startswith(prefix):
            return prefix
    return "human"


LABELS = {
    "hesitate": "hesitations (0.5/0.7 s)",
    "endpoint": "two sentences, a pause",
    "bench": "benchmark questions",
    "human": "human recordings",
}


def report(results: dict[str, dict[str, dict]]) -> None:
    """Per policy and kind of recording: cuts, and the cost on the recordings not cut."""
    print("\n== End of turn: the sound's verdict (Smart Turn, or 400 ms of silence), with and without")
    print("   the words before the pause (the speculative decode); cut / cost p50 (ms, true end -> decision)")
    print(f"  {'recordings':28} {'n':>3}" + "".join(f"{p:>24}" for p in POLICIES))
    names = list(results[POLICIES[0]])
    for k, label in LABELS.items():
        mine = [n for n in names if _kind(n) == k]
        if not mine:
            continue
        cells = []
        for policy in POLICIES:
            res = results[policy]
            cuts = sum(res[n]["cut"] for n in mine)
            costs = [res[n]["cost_ms"] for n in mine if not res[n]["cut"] and res[n]["cost_ms"] is not None]
            cost = round(p50(costs)) if costs else None
            cells.append(f"{cuts:>3} / {cost!s:>5}")
        print(f"  {label:28} {len(mine):>3}" + "".join(f"{c:>24}" for c in cells))
    smart = results["smart_turn+words"]
    infer = [c for r in smart.values() for c in r["inference_ms"]]
    decode = [c for r in smart.values() for c in r["decode_ms"]]
    if infer and decode:
        print(f"  here: Smart Turn inference p50 {p50(infer):.0f} ms (max {max(infer):.0f}); "
              f"Whisper decode of the words so far p50 {p50(decode):.0f} ms "
              f"(max {max(decode):.0f})")  # fmt: skip
    for policy in POLICIES:
        cut = [n for n, r in results[policy].items() if r["cut"]]
        finished = [n for n in results[policy] if _kind(n) in ("bench", "human")]
        late = [n for n in finished if results[policy][n]["reason"] == "silence"]
        print(f"  {policy}: cut {', '.join(cut) or 'none'}; finished questions that waited the full "
              f"{AudioConfig().end_of_turn_max_ms} ms: {', '.join(late) or 'none'}")  # fmt: skip
