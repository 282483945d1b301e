"""Speech on real voices: IRIS's file mode over the human recordings.

Every human clip of kind command, question or other in ``manifest.json`` of
``../shared/testdata/human-speech`` (relative to the repository; ``--human DIR`` to
override) goes through ``FileTurns``, the code ``iris ask --wav`` runs: IRIS's own
Silero VAD and endpointer, then the configured Whisper model. A clip the endpointer
drops has no transcript and counts as all words missed. Printed per clip: the expected
words, the transcript, the word error rate; then the pooled WER (edits / reference words).

Words are compared normalized (``tools.bench.stats.normalize``): lower case, punctuation
and apostrophes dropped, digits spelled out ("10" = "ten"); a wake word said before the
command ("alexa …", "hi esp …") is part of the expected text, as it was said.

The time, date and timer questions among the clips are then checked end to end as
answered in the same run, on the fast path (no language model): "what time is it" must
name the current hour, "what's the date" today's date, "set a timer for ten minutes" must
leave a 10-minute timer in a temporary timers database.

    .venv/bin/python -m tools.bench.rooms_speech [--human DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from iris_voice.app.filemode import FileTurns
from iris_voice.config import load
from tools.bench.stats import normalize, pooled_wer, wer, word_errors

HUMAN = Path(__file__).resolve().parents[3] / "shared" / "testdata" / "human-speech"
KINDS = ("command", "question", "other")
UNREACHABLE_LLM = "http://127.0.0.1:9"
"""Where the language model is said to be: nowhere. The clips are about hearing; the ones
the fast path answers need no model, and the others fail at once instead of waiting."""


def check_answer(
    expected: str, turns: list[dict[str, Any]], timers: list[Any], span: tuple[datetime, datetime]
) -> str | None:
    """For a time, date or timer question, "ok" or what was wrong; None for other clips.
    ``span``: the local time before and after the clip ran (either hour or date is right)."""
    said = normalize(expected)
    reply = " ".join(t.get("reply", "") for t in turns)
    fast = any(t.get("execution_path") == "fast" for t in turns)
    if said[:3] == ["what", "time", "is"]:
        hours = {int(h) for h in re.findall(r"\b(\d{1,2}):\d\d\b", reply)}
        ok = hours & {h for t in span for h in (t.hour, t.hour % 12 or 12)}
        return "ok" if ok and fast else f"wrong: {reply!r} (now {span[1]:%H:%M}, fast={fast})"
    if "date" in said:
        ok = any(f"{t:%B} {t.day}, {t.year}" in reply for t in span)
        return "ok" if ok and fast else f"wrong: {reply!r} (today {span[1]:%B %d %Y}, fast={fast})"
    if "timer" in said:
        lengths = [round(t.left(span[1].timestamp())) for t in timers]
        ok = any(590 <= s <= 600 for s in lengths)
        return "ok" if ok and fast else f"wrong: {reply!r}, timers left {lengths} s (fast={fast})"
    return None


async def run(human: Path, config: str | None) -> dict[str, Any]:
    """Every clip through file mode; per-clip figures and the totals."""
    clips = [c for c in json.loads((human / "manifest.json").read_text()) if c.get("kind") in KINDS]
    cfg, _ = load(config)
    with tempfile.TemporaryDirectory(prefix="iris-rooms-speech-") as tmp:
        tools_cfg = cfg.tools.model_copy(update={"timers_db": str(Path(tmp) / "timers.db")})
        llm = cfg.llm.model_copy(update={"host": UNREACHABLE_LLM, "warmup": False})
        # No MCP servers: the time, date and timer answers are the built-in tools' fast path.
        mcp = cfg.mcp.model_copy(update={"servers": []})
        cfg = cfg.model_copy(update={"tools": tools_cfg, "llm": llm, "mcp": mcp})
        rows = []
        async with FileTurns(cfg) as ft:
            await ft.warmup()
            service = ft.timers  # its clock and time zone are the time tool's (tools.timezone)
            for clip in clips:
                before = datetime.fromtimestamp(service.clock.now(), service.tz)
                turns = await ft.run(human / clip["file"])
                heard = " ".join(t["transcript"] for t in turns)
                e, n = word_errors(clip["text"], heard)
                timers = await service.list()
                after = datetime.fromtimestamp(service.clock.now(), service.tz)
                answer = check_answer(clip["text"], turns, timers, (before, after))
                for t in timers:  # each clip starts with no timers
                    await service.cancel(str(t.id))
                rows.append({"file": clip["file"], "kind": clip["kind"], "expected": clip["text"],
                             "transcript": heard, "turns": len(turns), "edits": e, "words": n,
                             "wer": round(wer(clip["text"], heard), 3), "answer": answer})  # fmt: skip
    pooled = pooled_wer((r["edits"], r["words"]) for r in rows)
    answers = [r["answer"] for r in rows if r["answer"] is not None]
    return {
        "stt_model": cfg.stt.model,
        "clips": rows,
        "wer": None if pooled is None else round(pooled, 3),
        "dropped": sum(1 for r in rows if r["turns"] == 0),
        "answers_ok": sum(1 for a in answers if a == "ok"),
        "answers": len(answers),
    }


def report(result: dict[str, Any]) -> str:
    """The table printed by default."""
    lines = [f"Speech on real voices: file mode (IRIS's VAD + Whisper {result['stt_model']})", ""]
    lines.append(f"{'clip':42} {'expected':44} {'transcript':44} {'WER':>5}  answer")
    for r in result["clips"]:
        heard = r["transcript"] if r["turns"] else "(no speech found)"
        answer = r["answer"] or ""
        lines.append(f"{r['file'][:42]:42} {r['expected'][:44]:44} {heard[:44]:44} {r['wer']:5.2f}  {answer}")
    n, dropped = len(result["clips"]), result["dropped"]
    lines.append("")
    lines.append(f"overall WER {result['wer']:.3f} over {n} clips; dropped (no speech found): {dropped}")
    ok, asked = result["answers_ok"], result["answers"]
    lines.append(f"time/date/timer questions answered right on the fast path: {ok}/{asked}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when it ran (the figures are the result), 2 without the clips."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--human", type=Path, default=HUMAN, help=f"the human recordings (default {HUMAN})")
    ap.add_argument("--config", help="IRIS config file (default: the usual search)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if not (args.human / "manifest.json").is_file():
        print(
            f"no human recordings at {args.human} (manifest.json missing): pass --human DIR", file=sys.stderr
        )
        return 2
    logging.basicConfig(level=logging.ERROR)
    result = asyncio.run(run(args.human, args.config))
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
