"""The room benchmark's pure parts (tools/bench/ear.py): where speech starts and stops in a
recording, and the tables it prints.

The recording holds two channels on one clock: channel 0 is what was played into the
virtual microphone (the question), channel 1 what reached the virtual speaker (IRIS's
answer). Both are digital copies with digital silence around the speech, so a low energy
threshold finds the edges: the question's offset is the end of its last loud block, the
answer's onset the start of the first loud block after it.

Rows are turns: ``turn`` (1-based), ``group`` (``everyday`` or ``chat``), ``correct``,
``lost``, and, when known, ``first_audio_ms`` (IRIS's own: end of speech to the first
sample sent to the speaker), ``room_ms`` (heard: end of question audio to first answer
audio, from the recording), ``end_of_turn_ms`` (end of speech to IRIS's decision),
``transcript_ms`` (decision to transcript), ``evaluated`` (prompt tokens the model server
evaluated over the turn's rounds) and ``own`` (the tokens the turn itself adds).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tools.bench.report import NOISE, med
from tools.bench.stats import percentile

BLOCK_S = 0.01
"""Energy is measured over 10 ms blocks: an edge is known to that much."""
LEVEL = 100.0
"""RMS (int16) above which a block is sound: about -50 dBFS, the level below which the
fixtures' own edges count as silence (tools/testbed/fixtures.py), well above the
recording's digital silence."""


def loud_blocks(mono: np.ndarray, rate: int, level: float = LEVEL) -> np.ndarray:
    """Per block of ``BLOCK_S``, whether its RMS is above ``level`` (a partial last block is dropped)."""
    size = max(1, round(rate * BLOCK_S))
    n = len(mono) // size
    blocks = mono[: n * size].astype(np.float64).reshape(n, size)
    return np.sqrt(np.mean(blocks**2, axis=1)) > level


def offset(mono: np.ndarray, rate: int, lo: int, hi: int, level: float = LEVEL) -> int | None:
    """The sample index where the last sound in ``mono[lo:hi]`` ends (None: silence)."""
    loud = np.flatnonzero(loud_blocks(mono[lo:hi], rate, level))
    size = max(1, round(rate * BLOCK_S))
    return None if not loud.size else lo + (int(loud[-1]) + 1) * size


def onset(mono: np.ndarray, rate: int, lo: int, hi: int, level: float = LEVEL) -> int | None:
    """The sample index where the first sound in ``mono[lo:hi]`` starts (None: silence)."""
    loud = np.flatnonzero(loud_blocks(mono[lo:hi], rate, level))
    size = max(1, round(rate * BLOCK_S))
    return None if not loud.size else lo + int(loud[0]) * size


def room_latencies(stereo: np.ndarray, rate: int, windows: list[tuple[int, int]]) -> list[float | None]:
    """For each window (sample indices of one turn: from its question's start to the next
    one's), ms from the end of the question (channel 0) to the first answer audio after it
    (channel 1); None when either is silent."""
    out: list[float | None] = []
    for lo, hi in windows:
        lo, hi = max(0, lo), min(len(stereo), hi)
        end = offset(stereo[:, 0], rate, lo, hi) if hi > lo else None
        start = onset(stereo[:, 1], rate, end, hi) if end is not None else None
        out.append(None if start is None else round((start - end) * 1000 / rate, 1))
    return out


def _pick(rows: list[dict], key: str, group: str = "all", first: int = 1) -> list[float]:
    return [
        r[key]
        for r in rows
        if (group == "all" or r.get("group") == group) and r["turn"] >= first and r.get(key) is not None
    ]


def _pp(values: list[float]) -> str:
    return f"{percentile(values, 50, 1)!s:>7} / {percentile(values, 95, 1)!s:>7}" if values else f"{'-':>17}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def tokens(rows: list[dict]) -> dict[str, Any]:
    """Model turns, evaluated tokens per model turn (median) and the median of evaluated/own
    over the model turns after the first (the first reads the system prompt and tools)."""
    model = [r for r in rows if r.get("rounds")]
    ratios = [r["evaluated"] / r["own"] for r in model[1:] if r.get("own")]
    return {
        "model_turns": len(model),
        "evaluated_p50": med([r.get("evaluated") for r in model]),
        "evaluated_sum": sum(r.get("evaluated") or 0 for r in model),
        "ratio_p50": round(float(np.median(ratios)), 2) if ratios else None,
        "ratio_max": round(max(ratios), 2) if ratios else None,
    }


GROUPS = (("everyday", "everyday", 1), ("chat", "chat", 1), ("chat 7-30", "chat", 7), ("all", "all", 1))


def report(results: list[dict[str, Any]], naive: list[dict[str, Any]]) -> dict[str, Any]:
    """Print the tables for every configuration (and the naive pipeline); the figures."""
    figures: dict[str, Any] = {}
    print(f"\n== Tokens per model turn and end of turn   {NOISE}")
    print(f"  {'configuration':14} {'model turns':>11} {'eval p50':>8} {'eval sum':>8} {'eval/own p50':>12} "
          f"{'max':>6}   {'end of turn p50 / p95':>21} {'transcript p50':>14}")  # fmt: skip
    for name, rows in [("naive", naive), *((r["config"], r["rows"]) for r in results)]:
        tok = tokens(rows)
        eot = _pick(rows, "end_of_turn_ms")
        tr = percentile(_pick(rows, "transcript_ms"), 50)
        figures[name] = {"tokens": tok, "end_of_turn": (percentile(eot, 50, 1), percentile(eot, 95, 1)),
                         "transcript_p50": tr}  # fmt: skip
        print(f"  {name:14} {tok['model_turns']:>11} {tok['evaluated_p50']!s:>8} {tok['evaluated_sum']:>8} "
              f"{tok['ratio_p50']!s:>12} {tok['ratio_max']!s:>6}   {_pp(eot):>21} {tr!s:>14}")  # fmt: skip
    print(
        "\n== First audio (ms) p50 / p95: IRIS's own (end of speech to the first sample sent) and heard\n"
        "   in the room (end of question audio to first answer audio, one recording); naive: computed"
    )
    print(f"  {'configuration':20}" + "".join(f"{label:>22}" for label, _, _ in GROUPS))
    naive_p50 = {label: percentile(_pick(naive, "first_audio_ms", g, f), 50) for label, g, f in GROUPS}
    print(
        f"  {'naive':20}" + "".join(f"{_pp(_pick(naive, 'first_audio_ms', g, f)):>22}" for _, g, f in GROUPS)
    )
    for res in results:
        for key, label in (("first_audio_ms", "own"), ("room_ms", "room")):
            cells = [_pick(res["rows"], key, g, f) for _, g, f in GROUPS]
            print(f"  {res['config'] + ' ' + label:20}" + "".join(f"{_pp(c):>22}" for c in cells))
            labels = [lab for lab, _, _ in GROUPS]
            figures[res["config"]][label] = {
                lab: (percentile(c, 50), percentile(c, 95), len(c))
                for lab, c in zip(labels, cells, strict=True)
            }
    print("\n== naive / IRIS on medians (all, chat), correctness, lost turns")
    print(f"  {'configuration':14} {'own all':>8} {'own chat':>8} {'room all':>8} {'room chat':>9} "
          f"{'correct':>8} {'lost':>5}  wrong / lost")  # fmt: skip
    score = f"{sum(bool(r.get('correct')) for r in naive)}/{len(naive)}"
    print(f"  {'naive':14} {'':>8} {'':>8} {'':>8} {'':>9} {score:>8} "
          f"{sum(bool(r.get('lost')) for r in naive):>5}  "
          f"{', '.join(str(r['turn']) for r in naive if not r.get('correct')) or '-'}")  # fmt: skip
    for res in results:
        f, rows = figures[res["config"]], res["rows"]
        ratios = [_ratio(naive_p50[g], f[kind][g][0]) for kind in ("own", "room") for g in ("all", "chat")]
        wrong = [str(r["turn"]) for r in rows if not r.get("correct") and not r.get("lost")]
        lost = [str(r["turn"]) for r in rows if r.get("lost")]
        f.update(ratios=ratios, correct=sum(bool(r.get("correct")) for r in rows), lost=lost, n=len(rows))
        score = f"{f['correct']}/{len(rows)}"
        print(f"  {res['config']:14} {ratios[0]!s:>8} {ratios[1]!s:>8} {ratios[2]!s:>8} {ratios[3]!s:>9} "
              f"{score:>8} {len(lost):>5}  "
              f"{', '.join(wrong) or '-'} / {', '.join(lost) or '-'}")  # fmt: skip
    return figures
