"""The voice latency benchmark's report: per-question paths, stage medians, first audio by
group, the latency goals beside the figures, correctness and wrong fast answers.

Rows are turn traces as tools/bench/voice.py collects them (``name``, ``first_audio_ms``,
``timings_ms``, ``execution_path``, ``reply``); the naive pipeline's rows have the same
``name``/``first_audio_ms``/``reply``.
"""

from __future__ import annotations

from typing import Any

from tools.bench.checks import correct
from tools.bench.stats import p50, p95
from tools.testbed.fixtures import BENCH

STAGES = ("vad_hangover", "stt", "llm_first_token", "first_sentence", "tts_first_audio")
GOAL_MEDIAN_MS = 1000.0
GOAL_P95_MS = 1500.0
GOAL_RATIO = 3.0
NOISE = "(2 cores shared with other agents' jobs: figures are noisy, compare within one run)"


def med(values: list[float | None]) -> float | None:
    """Median, or None for no values."""
    kept = [v for v in values if v is not None]
    return p50(kept, 1)


def group_of(name: str) -> str:
    """The question's group (time, date, timer, calc, reminder, chat)."""
    return BENCH[name][0]


def everyday(name: str) -> bool:
    """Everything but ``chat``: the commands the fast path is for."""
    return group_of(name) != "chat"


def path_of(row: dict[str, Any]) -> str:
    """fast / native / text / boost, or ``direct`` when a tool's sentence was spoken as is."""
    if row.get("error"):
        return "error"
    if row.get("direct_return"):
        return "direct"
    return row.get("execution_path") or "?"


def _pick(rows: list[dict], group: str, key: str = "first_audio_ms") -> list[float]:
    """Values of ``key`` for rows in ``group`` (a BENCH group, ``everyday`` or ``all``)."""

    def wanted(name: str) -> bool:
        return group == "all" or (everyday(name) if group == "everyday" else group_of(name) == group)

    return [r[key] for r in rows if wanted(r["name"]) and r.get(key) is not None]


def right(row: dict[str, Any]) -> bool:
    """``checks.correct`` on a row: the verdict taken when it was answered (a clock
    time or "in ten minutes" is judged against that moment), else judged now."""
    if "correct" in row:
        return bool(row["correct"])
    return correct(row["name"], row["reply"], row.get("pasta_left_s"))


def _ok(flag: bool) -> str:
    return "ok" if flag else "MISS"


def questions(iris: list[dict], naive: list[dict], live: list[dict]) -> None:
    """One line per question: group, path, first audio per mode, correct or not, the reply."""
    by_naive = {r["name"]: r for r in naive}
    by_live = {r["name"]: r for r in live}
    print("\n== Per question (first audio ms; ok = checks.correct)")
    print(f"  {'question':17} {'group':8} {'path':6} {'iris':>7} {'naive':>7} {'daemon':>7}  answer")
    for row in iris or live:
        name = row["name"]
        n, d = by_naive.get(name, {}), by_live.get(name, {})
        verdict = "right" if right(row) else "WRONG"
        if verdict == "WRONG" and path_of(row) == "fast":
            verdict = "WRONG FAST ANSWER"
        naive_ok = "" if not n else f" | naive {'right' if right(n) else 'wrong'}"
        if d and iris:  # the daemon's own verdict and path, beside file mode's
            naive_ok += f" | daemon {'right' if right(d) else 'WRONG'} ({path_of(d)})"
        mine = row.get("first_audio_ms") if iris else None
        print(f"  {name:17} {group_of(name):8} {path_of(row):6} {mine!s:>7} "
              f"{n.get('first_audio_ms')!s:>7} {d.get('first_audio_ms')!s:>7}  {verdict}{naive_ok}: "
              f"{row['reply'][:70]!r}")  # fmt: skip
        if n and right(n) != right(row):
            print(f"  {'':17} naive answered: {n['reply'][:90]!r}")


def stages(iris: list[dict]) -> float | None:
    """Per-stage medians (all / everyday / chat), IRIS's overhead; the hangover's share."""
    print("\n== Per-stage medians, IRIS file mode (ms)      all   everyday   chat")
    for stage in STAGES:
        cols = [med([r["timings_ms"].get(stage) for r in iris if g(r["name"])])
                for g in (lambda n: True, everyday, lambda n: not everyday(n))]  # fmt: skip
        print(f"  {stage:40} {cols[0]!s:>7} {cols[1]!s:>9} {cols[2]!s:>7}")
    overhead = [
        r["first_audio_ms"] - sum(r["timings_ms"].get(k) or 0 for k in
                                  ("vad_hangover", "stt", "first_sentence", "tts_first_audio"))
        for r in iris if r.get("first_audio_ms") is not None
    ]  # fmt: skip
    print(f"  {'IRIS overhead':40} {med(overhead)!s:>7}   (first audio minus hangover + STT + first "
          "sentence + its TTS)")  # fmt: skip
    hang = med(_pick(iris, "everyday", "vad_hangover_ms"))
    first = med(_pick(iris, "everyday"))
    share = round(hang / first, 3) if hang and first else None
    print(f"\n== VAD hangover's share of first audio, everyday: median hangover {hang} ms / median "
          f"first audio {first} ms = {share if share is None else f'{share:.0%}'}")  # fmt: skip
    return share


def first_audio(iris: list[dict], naive: list[dict], live: list[dict]) -> dict[str, Any]:
    """First audio p50/p95 by group; the issue's goals beside them."""
    print(f"\n== First audio (ms): p50 / p95 by group   {NOISE}")
    groups = list(dict.fromkeys(group_of(r["name"]) for r in iris or naive or live))
    out: dict[str, Any] = {}
    for group in [*groups, "everyday", "all"]:
        i, n = _pick(iris, group), _pick(naive, group)
        line = f"  {group:9} n={len(i or n or _pick(live, group)):<3}"
        if iris:
            line += f" iris {p50(i, 1)!s:>7} / {p95(i, 1)!s:>7}"
        if naive:
            line += f"   naive {p50(n, 1)!s:>7} / {p95(n, 1)!s:>7}"
        if live:
            d, s = _pick(live, group), _pick(live, group, "speaker_first_audio_ms")
            line += f"   daemon {p50(d, 1)!s:>7} / {p95(d, 1)!s:>7}"
            line += f"   speaker {p50(s, 1)!s:>7} / {p95(s, 1)!s:>7}"
        print(line)
        out[group] = {"iris_p50": p50(i, 1), "iris_p95": p95(i, 1),
                      "naive_p50": p50(n, 1), "naive_p95": p95(n, 1)}  # fmt: skip
    return out


def goals(iris: list[dict], naive: list[dict], live: list[dict]) -> dict[str, Any]:
    """The latency goals and where this run stands."""
    print("\n== Goals")
    out: dict[str, Any] = {}
    for label, rows in (("IRIS file mode", iris), ("live daemon", live)):
        every = _pick(rows, "everyday")
        if not every:
            continue
        mid, high = p50(every, 1), p95(every, 1)
        print(f"  {label}: everyday first audio median {mid} ms (goal <= {GOAL_MEDIAN_MS:.0f}) "
              f"{_ok(mid <= GOAL_MEDIAN_MS)};  p95 {high} ms (goal <= {GOAL_P95_MS:.0f}) "
              f"{_ok(high <= GOAL_P95_MS)}")  # fmt: skip
        out[label] = {"everyday_p50": mid, "everyday_p95": high}
    if iris and naive:
        # questions both answered (a naive turn that failed on a busy machine has no figure)
        names = {r["name"] for r in naive if r.get("first_audio_ms") is not None} & {
            r["name"] for r in iris if r.get("first_audio_ms") is not None
        }
        a = [r["first_audio_ms"] for r in iris if r["name"] in names]
        b = [r["first_audio_ms"] for r in naive if r["name"] in names]
        ratio, total = med(b) / med(a), sum(b) / sum(a)
        print(f"  naive / IRIS first audio over all {len(names)} questions: {ratio:.2f}x on medians, "
              f"{total:.2f}x on totals (goal >= {GOAL_RATIO:.0f}x) {_ok(ratio >= GOAL_RATIO)}")  # fmt: skip
        out.update(ratio_medians=round(ratio, 2), ratio_totals=round(total, 2))
    for label, rows in (("IRIS file mode", iris), ("naive", naive), ("live daemon", live)):
        if not rows:
            continue
        good = [r for r in rows if right(r)]
        wrong_fast = [r for r in rows if path_of(r) == "fast" and r not in good]
        fast = [r for r in rows if path_of(r) == "fast"]
        line = f"  {label}: correct {len(good)}/{len(rows)}"
        if label != "naive":
            line += (f"; fast path {len(fast)}/{len(rows)}; wrong fast answers {len(wrong_fast)} "
                     f"(goal 0) {_ok(not wrong_fast)}")  # fmt: skip
        print(line)
        for r in wrong_fast:
            print(f"    wrong fast answer: {r['name']}: heard {r.get('transcript')!r} -> {r['reply']!r}")
        out[label + " correct"] = len(good)
        out[label + " wrong_fast"] = [r["name"] for r in wrong_fast]
    missed = [r["name"] for r in iris or live if everyday(r["name"]) and path_of(r) != "fast"]
    print(f"  everyday questions not on the fast path: {', '.join(missed) or 'none'}")
    out["not_fast"] = missed
    return out


def report(iris: list[dict], naive: list[dict], live: list[dict], idle: float | None) -> dict[str, Any]:
    """Print everything; the figures as a dict."""
    for rows in (iris, live):
        for r in rows:  # the hangover, flat, for _pick
            r["vad_hangover_ms"] = (r.get("timings_ms") or {}).get("vad_hangover")
    questions(iris, naive, live)
    figures: dict[str, Any] = {}
    if iris:
        figures["hangover_share"] = stages(iris)
    figures["groups"] = first_audio(iris, naive, live)
    figures.update(goals(iris, naive, live))
    if idle is not None:
        print(f"  idle listening (wake word): {idle:.2f} % of one core (goal <= 5 %)")
        figures["idle_cpu"] = idle
    return figures
