"""The lever benchmark's report (tools/bench/levers.py): first audio by group and
configuration, the goals beside the figures, correctness, timers set twice, speculation.

Rows are the live daemon's turn traces with ``name``, ``group`` (``everyday``, ``chat``,
``after-fast-path``, ``after-announcement``, ``first-after-start``, or ``(fast-path turn)``
for the turns that lead up to a question after the fast path), ``first_audio_ms`` and
``correct``; the naive pipeline's rows have ``name`` and ``first_audio_ms``.
"""

from __future__ import annotations

from typing import Any

from tools.bench.report import NOISE
from tools.bench.stats import p50, p95

GROUPS = ("everyday", "chat", "after-fast-path", "after-announcement", "first-after-start")


def _values(rows: list[dict], group: str, key: str = "first_audio_ms") -> list[float]:
    wanted = {"all": {"everyday", "chat"}}.get(group, {group})
    return [r[key] for r in rows if r.get("group") in wanted and r.get(key) is not None]


def _med(values: list[float]) -> float | None:
    return p50(values, 1)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def history_cost(rows: list[dict]) -> float | None:
    """Median first audio of chat questions asked after turns the model never saw (fast
    path, an announcement, a restart), over the same questions with an empty history."""
    empty = {r["name"]: r["first_audio_ms"] for r in rows if r.get("group") == "chat"}
    pairs = [
        (r["first_audio_ms"], empty[r["name"]])
        for r in rows
        if r.get("group") in ("after-fast-path", "after-announcement", "first-after-start")
        and r.get("first_audio_ms") is not None
        and empty.get(r["name"]) is not None
    ]
    if not pairs:
        return None
    return _ratio(_med([a for a, _ in pairs]), _med([b for _, b in pairs]))


def timers_set_twice(rows: list[dict]) -> list[str]:
    """Turns that called set_timer (or set_reminder) more than once."""
    out = []
    for r in rows:
        calls = [c["name"] for c in r.get("tool_calls") or [] if c.get("ok")]
        if calls.count("set_timer") > 1 or calls.count("set_reminder") > 1:
            out.append(r["name"])
    return out


def report(results: list[dict[str, Any]], naive: list[dict[str, Any]]) -> dict[str, Any]:
    """Print the tables; the figures as a dict."""
    print(f"\n== First audio, live daemon (ms): p50 / p95 by group   {NOISE}")
    head = f"  {'configuration':14}" + "".join(f"{g:>22}" for g in (*GROUPS, "all"))
    print(head)
    naive_all = _med([r["first_audio_ms"] for r in naive if r.get("first_audio_ms") is not None])
    naive_by = {r["name"]: r.get("first_audio_ms") for r in naive}
    figures: dict[str, Any] = {"naive_p50": naive_all}
    for res in results:
        rows = res["rows"]
        cells = []
        fig: dict[str, Any] = {}
        for g in (*GROUPS, "all"):
            v = _values(rows, g)
            mid, high = p50(v, 1), p95(v, 1)
            fig[g] = {"p50": mid, "p95": high, "n": len(v)}
            cells.append(f"{mid!s:>9} / {high!s:>7} n{len(v):<2}" if v else f"{'-':>22}")
        print(f"  {res['config']:14}" + "".join(f"{c:>22}" for c in cells))
        chat_names = {r["name"] for r in rows if r.get("group") == "chat"}
        naive_chat = _med([v for n, v in naive_by.items() if n in chat_names and v is not None])
        fig["ratio_all"] = _ratio(naive_all, fig["all"]["p50"])
        fig["ratio_chat"] = _ratio(naive_chat, fig["chat"]["p50"])
        fig["history_cost"] = history_cost(rows)
        asked = [r for r in rows if r.get("group") != "(fast-path turn)"]
        fig["correct"] = f"{sum(bool(r.get('correct')) for r in asked)}/{len(asked)}"
        fig["wrong"] = [r["name"] for r in asked if not r.get("correct")]
        fig["set_twice"] = timers_set_twice(rows)
        fig["speculation"] = res.get("speculation")
        ends = [(r.get("timings_ms") or {}).get("vad_hangover") for r in asked]
        fig["end_of_turn_ms"] = _med([e for e in ends if e is not None])
        figures[res["config"]] = fig
    print(f"\n== Per configuration: naive/IRIS on medians (all, chat), history cost, correctness "
          f"(naive p50 over all: {naive_all} ms)")  # fmt: skip
    print(f"  {'configuration':14} {'naive/all':>9} {'naive/chat':>10} {'history':>8} {'end ms':>7} "
          f"{'correct':>8}  set twice / speculation (started, adopted, dropped) / wrong")  # fmt: skip
    for res in results:
        f = figures[res["config"]]
        spec = f["speculation"] or {}
        print(f"  {res['config']:14} {f['ratio_all']!s:>9} {f['ratio_chat']!s:>10} {f['history_cost']!s:>8} "
              f"{f['end_of_turn_ms']!s:>7} {f['correct']:>8}  {len(f['set_twice'])} / "
              f"({spec.get('started')}, {spec.get('adopted')}, {spec.get('dropped')}) / "
              f"{', '.join(f['wrong']) or '-'}")  # fmt: skip
    if "all" in figures:
        f = figures["all"]

        def ok(value: float | None, goal: float, low: bool = True) -> str:
            if value is None:
                return "n/a"
            return "ok" if (value <= goal if low else value >= goal) else "MISS"

        print("\n== Goals, every lever on")
        chat = f["chat"]["p50"]
        print(f"  chat first audio p50 {chat} ms (goal <= 1000) {ok(chat, 1000)}; naive/IRIS on "
              f"chat {f['ratio_chat']} (goal >= 1.8) {ok(f['ratio_chat'], 1.8, False)}")  # fmt: skip
        print(f"  everyday p50 {f['everyday']['p50']} ms (goal <= 600) {ok(f['everyday']['p50'], 600)}; "
              f"p95 {f['everyday']['p95']} ms (goal <= 900) {ok(f['everyday']['p95'], 900)}")  # fmt: skip
        print(f"  naive/IRIS over all on medians {f['ratio_all']} (goal >= 3) {ok(f['ratio_all'], 3, False)}")
        print(f"  after turns the model never saw / empty history: {f['history_cost']} "
              f"(goal <= 1.2) {ok(f['history_cost'], 1.2)}")  # fmt: skip
        print(f"  correct {f['correct']}; timers set twice: {len(f['set_twice'])} (goal 0)")
    return figures
