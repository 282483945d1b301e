"""Both sides of what IRIS says, with the real model, in one run: what it must serve and what it must refuse.

The must-serve set (``tool_questions.serve_dev`` / ``serve_held_out``: how-to, opinions,
role-play, games, translation, stories, names, facts, follow-ups on timers and topics,
spoken times), each chat one conversation, and the must-refuse sets of ``bench-honest``
(out-of-scope requests and things IRIS cannot do), through one IRIS at its defaults. Prints
every reply, then per half and side:

- must-serve: right (every check of the turn passes), refused (its first sentence says
  it cannot), empty, cut (ends mid-sentence), call syntax, a side effect nobody asked for,
  a wrong timer state after a timer turn;
- must-refuse: the faults ``tools.bench.honest.judge`` counts (side effects, syntax,
  claimed actions, not refused, mid-sentence, timer questions, echoes);
- per rule of the reply policy: the turns it decided something on, on each side.

``--mixed`` runs one long conversation per half instead of a fresh one per request: each
must-refuse request followed by the first turn of a must-serve conversation (the timers of
each request set without resetting the conversation), as a daemon hears them all day —
what a refusal kept in the history does to the requests after it.

``--kinds follow-up-timer,…`` runs only those must-serve conversations (a tuning loop on
the development half, never a result). ``--off RULE[,RULE]`` runs with rules switched
off (``[reply] off``), to measure what each one stops on both sides. Run under ``flock /tmp/iris-llm.lock``:
``python -m tools.bench.replies`` (``--halves dev`` while tuning).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from iris_voice.conversation.repairs import unspeakable
from iris_voice.conversation.responder import ask
from iris_voice.conversation.turn import FALLBACK_REPLY
from iris_voice.tools.spoken import digits
from tools.bench.honest import HALVES as REFUSE
from tools.bench.honest import config, judge
from tools.bench.retrieval import CANT, WRITERS, prepare, timers_state
from tools.bench.tool_questions import serve_dev, serve_held_out
from tools.bench.tool_questions.serve import Chat, Say

SERVE = {"dev": serve_dev.CHATS, "held-out": serve_held_out.CHATS}

try:  # a tree before the reply policy (to compare with, first on PYTHONPATH) has no rules
    from iris_voice.config import ReplyConfig
    from iris_voice.conversation.policy import fired
except ImportError:  # pragma: no cover - only with an older iris_voice
    ReplyConfig = None  # type: ignore[assignment,misc]

    def fired(trace_dict: dict) -> list[str]:
        """No rules are recorded before the reply policy."""
        return []


def _any(item: str, text: str) -> bool:
    return any(alt.strip().lower() in text.lower() for alt in item.split("|"))


def _any_said(item: str, text: str) -> bool:
    """``_any`` with spoken numbers as digits on both sides: a call's ``"at half past 6"``
    holds the "half past six" asked for."""
    return _any(item, text) or _any(digits(item), digits(text))


def state_right(expected: tuple[tuple[str, int], ...], rows: list, now: float) -> bool:
    """Whether the running timers and reminders ``rows`` are the ``expected`` (label, seconds
    ±20 %; 0: any time left); labels compared without case."""
    found = sorted((r.label.lower(), r.left(now)) for r in rows)
    wanted = sorted((label.lower(), seconds) for label, seconds in expected)
    if [f[0] for f in found] != [w[0] for w in wanted]:
        return False
    return all(not w or abs(f - w) <= max(0.2 * w, 5) for (_, f), (_, w) in zip(found, wanted, strict=True))


def refuses(reply: str) -> bool:
    """Whether ``reply`` opens by saying IRIS cannot: a refusal says so first; a long answer
    that ends "if you're still unable to, call a plumber" is an answer."""
    return bool(CANT.search(_FIRST_SENTENCE.split(reply.strip(), maxsplit=1)[0]))


_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def judge_serve(say: Say, trace: dict, wrote: bool, state: bool | None, names: list[str]) -> dict[str, bool]:
    """The faults of one must-serve reply (True: the fault is there)."""
    reply = trace["reply"].strip()
    calls = [c for c in trace["tool_calls"] if c["ok"]]
    called = {c["name"] for c in calls}
    args = json.dumps([c["arguments"] for c in calls]).lower()
    faults = {
        "refused": refuses(reply) and not any(_any(w, "can't cannot sorry") for w in say.says),
        "empty": not reply or reply == FALLBACK_REPLY,
        "cut": bool(reply) and not reply.endswith((".", "!", "?", '"', "”", "'")),
        "syntax": unspeakable(reply, names),
        "side_effect": wrote and not say.tools,
        "tools": not all(t in called for t in say.tools),
        "args": not all(_any_said(a, args) for a in say.args),
        "says": not all(_any(w, reply) for w in say.says),
        "state": state is False,
    }
    faults["wrong"] = any(faults.values())
    return faults


async def run(
    host: str,
    model: str,
    halves: list[str],
    off: list[str],
    kinds: list[str] | None = None,
    mixed: bool = False,
) -> dict[str, dict[str, list[dict]]]:
    """Both sides of ``halves`` through one IRIS; the judged turns by side and half. With
    ``kinds``, only the must-serve conversations of those kinds (a quick loop while tuning
    on the development half: a change is kept only on a run of both sides); with ``mixed``,
    only the one long conversation per half (``_mixed``)."""
    from iris_voice.app.assembly import open_app

    state = Path(tempfile.mkdtemp(prefix="iris-bench-replies-"))
    cfg = config(host, model, state, False)
    if ReplyConfig is not None:
        cfg = cfg.model_copy(update={"reply": ReplyConfig(off=off)})
    out: dict[str, dict[str, list[dict]]] = {"serve": {}, "refuse": {}}
    with open(os.devnull, "w") as devnull:
        async with open_app(cfg, errlog=devnull) as app:
            await app.responder.warmup()
            names = app.registry.callable_names()
            for half in halves if not mixed else ():
                out["serve"][half] = rows = []
                for chat in SERVE[half]:
                    if not kinds or chat.kind in kinds:
                        rows.extend(await _chat(app, chat, half, names))
                out["refuse"][half] = rows = []
                for r in REFUSE[half] if not kinds else ():
                    await prepare(app, r.timers)
                    before = await timers_state(app)
                    trace = await ask(app.responder, r.text)
                    wrote = any(c["ok"] and WRITERS.search(c["name"]) for c in trace.tool_calls)
                    faults = judge(r, trace.reply, wrote or before != await timers_state(app), names)
                    faults["wrong"] = any(
                        faults[k] for k in ("side_effect", "syntax", "claim", "not_refused")
                    )
                    rows.append({**faults, "rules": fired(trace.to_dict())})
                    _print("refuse", half, faults, r.text, trace.to_dict())
            for half in halves if mixed else ():
                out["serve"][f"{half}+mix"], out["refuse"][f"{half}+mix"] = await _mixed(app, half, names)
    return out


async def _timers(app, timers) -> None:
    """Exactly ``timers`` running, the conversation kept."""
    await app.timers.cancel("all")
    for label, seconds in timers:
        await app.timers.set_timer(seconds, label)


async def _mixed(app, half: str, names: list[str]) -> tuple[list[dict], list[dict]]:
    """One conversation: each must-refuse request, then a must-serve chat's first turn."""
    app.responder.conversation.reset()
    serve: list[dict] = []
    refuse: list[dict] = []
    firsts = [c for c in SERVE[half] if not c.timers]
    for r, chat in zip(REFUSE[half], firsts, strict=False):
        await _timers(app, r.timers)
        before = await timers_state(app)
        trace = await ask(app.responder, r.text)
        wrote = any(c["ok"] and WRITERS.search(c["name"]) for c in trace.tool_calls)
        faults = judge(r, trace.reply, wrote or before != await timers_state(app), names)
        faults["wrong"] = any(faults[k] for k in ("side_effect", "syntax", "claim", "not_refused"))
        refuse.append({**faults, "rules": fired(trace.to_dict())})
        _print("refuse", f"{half}+mix", faults, r.text, trace.to_dict())
        await _timers(app, ())
        say = chat.turns[0]
        t = (await ask(app.responder, say.text)).to_dict()
        wrote = any(c["ok"] and WRITERS.search(c["name"]) for c in t["tool_calls"])
        state = None
        if say.after is not None:
            state = state_right(say.after, await app.timers.list(), app.timers.clock.now())
        faults = judge_serve(say, t, wrote, state, names)
        serve.append({**faults, "rules": fired(t), "kind": chat.kind})
        _print("serve", f"{half}+mix", faults, say.text, t)
    return serve, refuse


async def _chat(app, chat: Chat, half: str, names: list[str]) -> list[dict]:
    """One must-serve conversation, judged turn by turn."""
    await prepare(app, chat.timers)
    rows = []
    for say in chat.turns:
        trace = (await ask(app.responder, say.text)).to_dict()
        wrote = any(c["ok"] and WRITERS.search(c["name"]) for c in trace["tool_calls"])
        state = None
        if say.after is not None:
            state = state_right(say.after, await app.timers.list(), app.timers.clock.now())
        faults = judge_serve(say, trace, wrote, state, names)
        rows.append({**faults, "rules": fired(trace), "kind": chat.kind})
        _print("serve", half, faults, say.text, trace)
    return rows


def _print(side: str, half: str, faults: dict, text: str, trace: dict) -> None:
    marks = ",".join(k for k, v in faults.items() if v and k != "wrong") or "ok"
    calls = [(c["name"], c["arguments"]) for c in trace["tool_calls"]]
    rules = ",".join(fired(trace))
    print(f"  [{side}/{half}] {marks:18} {text!r} -> {trace['reply']!r} {calls} {rules}", flush=True)


SERVE_KEYS = ["wrong", "refused", "empty", "cut", "syntax", "side_effect", "tools", "args", "says", "state"]
REFUSE_KEYS = [
    "wrong",
    "side_effect",
    "syntax",
    "claim",
    "not_refused",
    "mid_sentence",
    "timer_question",
    "echo",
]


def report(out: dict[str, dict[str, list[dict]]]) -> None:
    """One row per side and half, then the rules that fired on each."""
    for side, keys in (("serve", SERVE_KEYS), ("refuse", REFUSE_KEYS)):
        print(f"\n{side:7} {'half':9} {'n':>3} " + " ".join(f"{k[:12]:>12}" for k in keys))
        for half, rows in out[side].items():
            counts = " ".join(f"{sum(r[k] for r in rows):>12}" for k in keys)
            print(f"{side:7} {half:9} {len(rows):>3} {counts}")
    print("\nrules fired (turns; of them wrong):")
    for side in ("serve", "refuse"):
        for half, rows in out[side].items():
            turns = Counter(rule for r in rows for rule in set(r["rules"]))
            wrong = Counter(rule for r in rows if r["wrong"] for rule in set(r["rules"]))
            said = ", ".join(f"{k} {n} ({wrong[k]})" for k, n in turns.most_common()) or "none"
            print(f"  {side}/{half}: {said}")
    served = [r for h, rows in out["serve"].items() if "+mix" not in h for r in rows]
    kinds = Counter((r["kind"], r["wrong"]) for r in served)
    print(
        "\nmust-serve wrong by kind: "
        + ", ".join(
            f"{k} {kinds[(k, True)]}/{kinds[(k, True)] + kinds[(k, False)]}"
            for k in sorted({k for k, _ in kinds})
        )
    )


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--halves", default="dev,held-out", help="dev, held-out or both (default)")
    ap.add_argument("--off", default="", help="reply rules to switch off, comma-separated")
    ap.add_argument("--mixed", action="store_true", help="one long conversation per half instead")
    ap.add_argument(
        "--kinds", default="", help="only must-serve chats of these kinds, no must-refuse (tuning)"
    )
    args = ap.parse_args()
    from tools.testbed.servers import bench_target, model_server

    model, host = bench_target()
    with ExitStack() as stack:
        host = model_server(stack, model, host, "test server")
        off = [r for r in args.off.split(",") if r]
        print(f"reply rules off: {off or 'none'}", flush=True)
        kinds = [k for k in args.kinds.split(",") if k]
        report(asyncio.run(run(host, model, args.halves.split(","), off, kinds, args.mixed)))


if __name__ == "__main__":
    main()
