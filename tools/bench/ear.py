"""A day's use, heard from the room: a 30-turn spoken conversation with the live daemon.

IRIS is fast in a demo of one question and must stay so after thirty. A fresh daemon
(``iris run``) per configuration hears one conversation on virtual PipeWire devices:
everyday commands (time, timers, calculator) and questions for the model, with follow-ups
("And in Paris?"), in two voices (Piper and espeak-ng), the questions ``--gap-s`` seconds
apart (seeded random gaps). One recording outside IRIS holds, on one clock, what was
played into the microphone (channel 0) and what reached the speaker (channel 1): the
latency heard in the room is from the end of the question's audio to the first answer
audio, found by energy in that recording (tools/bench/ear_report.py). Beside it, IRIS's
own figures from its turn trace: first audio, end-of-turn decision (``vad_hangover``),
decision to transcript (``stt``) and the prompt tokens the model server evaluated
(``prompt_eval_count`` summed over rounds), against what the turn itself adds (the
question, and the tool calls and results of its rounds, in the served model's template).
The naive sequential pipeline (tools/bench/naive_pipeline.py) answers the same questions
on the same server, each on its own (it keeps no history), for the ratio.

Configurations: ``after`` (IRIS's defaults), ``before`` (the levers off, as IRIS was) and
each lever alone on top of ``before``. A lever whose config key does not exist in this
checkout is left out (and said so).

    python -m tools.bench.ear [--configs before,after] [--turns N] [--gap-s 10,15] [--naive-turns N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from iris_voice.config import Config, LlmConfig, ToolsConfig
from tools.bench.checks import correct, hours_now
from tools.bench.ear_fixtures import CONVERSATION, ensure_ear_fixtures
from tools.bench.ear_report import report, room_latencies

LEVERS: dict[str, tuple[str, str, Any]] = {
    "recheck": ("audio", "end_of_turn_recheck_ms", 0),
    "window": ("stt", "window", "full"),
    "pause": ("stt", "incremental_pause_ms", 150),
    "phrase": ("wake", "keep_phrase", False),
}
"""Lever → (section, key, its value before the lever): ``before`` sets them all. The history's
trimming in steps (``Bounds.keep``) has no config key, so ``before`` cannot trim one turn at a
time; ``llm.history_turns`` keeps its (new) default."""
CANDIDATES: dict[str, tuple[str, str, Any]] = {"cut": ("wake", "keep_phrase", False)}
"""Candidate → (section, key, value) set on top of the defaults: a lever measured before it
becomes one, or a default taken back on its own (``cut``: the question's recording starts at
the end of the wake phrase, as before ``wake.keep_phrase``). ``pause`` (the words at a pause
decoded after 96 ms of silence, not 150) was measured here as ``pause96``, then made the
default."""
RATE = 16000
LOST_S = 240.0
"""A question with no turn this long after it is lost. Generous: on two cores shared with other
jobs a turn took over 60 s, and calling it lost let its answer be taken for the next question's."""


def present(section: str, key: str) -> bool:
    """Whether ``[section] key`` exists in this checkout's config."""
    return key in type(getattr(Config(), section)).model_fields


def config_for(name: str) -> dict[str, dict[str, Any]]:
    """The config sections of configuration ``name`` (``after``, ``before``, a lever or a
    candidate). The late cue ("One moment.") is off in every one but ``cue``: the room's
    latency is the answer's onset, and a cue would be taken for it."""
    sections: dict[str, dict[str, Any]] = {}
    if present("tts", "late_cue_s"):  # (the test bed's daemon has it off unless told)
        sections["tts"] = {"late_cue_s": Config().tts.late_cue_s if name == "cue" else 0}
    if name in ("after", "cue"):
        return sections
    if name in CANDIDATES:
        section, key, value = CANDIDATES[name]
        sections.setdefault(section, {})[key] = value
        return sections
    for lever, (section, key, old) in LEVERS.items():
        if present(section, key) and lever != name:
            sections.setdefault(section, {})[key] = old
    return sections


def judge(check: str, reply: str, pasta_left_s: float | None) -> bool:
    """``check`` is a benchmark question's name (tools/bench/checks.py), ``zone:<tz>`` (the
    hour there now) or ``re:<pattern>`` (searched in the lower-cased reply)."""
    text = reply.lower()
    if check.startswith("re:"):
        return bool(re.search(check[3:], text))
    if check.startswith("zone:"):
        said = {int(h) for h in re.findall(r"\b(\d{1,2})(?::\d{2}|\s*[ap]\.?m)", text)}
        return bool(said & hours_now(check[5:]))
    return correct(check, reply, pasta_left_s)


class RoomRecording:
    """One stereo recording of the room: the microphone feed's monitor on the left, the
    speaker's monitor on the right, linked into one null sink so both share its clock.
    (A helper here rather than in tools/testbed/audiobed.py: its ``record_speaker`` is mono.)"""

    SINK = "ear_room"

    def __init__(self, bed: Any, path: Path) -> None:
        from tools.testbed.audiobed import MIC_FEED, SPEAKER
        from tools.testbed.recording import SpeakerRecording

        self.path = path
        bed.pactl("load-module", "module-null-sink", f"sink_name={self.SINK}", "channels=2",
                  "channel_map=front-left,front-right")  # fmt: skip
        for out, into in ((f"{MIC_FEED}:monitor_MONO", "FL"), (f"{SPEAKER}:monitor_MONO", "FR")):
            for _attempt in range(40):  # the new sink's ports appear a moment after it (later when busy)
                done = subprocess.run(["pw-link", out, f"{self.SINK}:playback_{into}"], env=bed.child_env(),
                                      capture_output=True, timeout=10)  # fmt: skip
                if done.returncode == 0:
                    break
                time.sleep(0.25)
            else:
                raise RuntimeError(f"pw-link {out} -> {self.SINK}: {done.stderr.decode(errors='replace')}")
        proc = subprocess.Popen(
            ["parec", "-d", f"{self.SINK}.monitor", "--raw", f"--rate={RATE}", "--channels=2",
             "--format=s16le", "--latency-msec=10"],
            env=bed.child_env(), stdout=subprocess.PIPE, bufsize=0,
        )  # fmt: skip
        # Interleaved samples at twice the rate: SpeakerRecording's clock then counts frames.
        self.rec = SpeakerRecording(proc, 2 * RATE, None)
        if not self.rec.ready.wait(60):
            self.rec.stop()
            raise RuntimeError("parec delivered no audio of the room within 60 s")

    def frame_at(self, t: float) -> int:
        """The frame recorded at ``time.monotonic()`` ``t`` (to within a chunk)."""
        return round((t - self.rec.wall_time(0)) * RATE)

    def stop(self) -> np.ndarray:
        """End the recording; frames × 2 channels (int16), also written to ``path``."""
        import wave

        samples = self.rec.stop()
        stereo = samples[: len(samples) // 2 * 2].reshape(-1, 2)
        with wave.open(str(self.path), "wb") as w:
            w.setnchannels(2)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(stereo.tobytes())
        return stereo


def converse(name: str, server_url: str, turns: list, gaps: list[float], workdir: Path) -> dict[str, Any]:
    """One configuration: a fresh daemon hears the conversation; a row per turn."""
    from iris_voice.timers.service import TimerService
    from iris_voice.timers.store import TimerStore
    from tools.bench.timer_state import pasta_left
    from tools.testbed.audiobed import VirtualAudio
    from tools.testbed.voicebed import LiveDaemon

    workdir.mkdir(parents=True, exist_ok=True)
    db = str(workdir / "timers.db")
    config: dict[str, dict[str, Any]] = {
        "llm": {"temperature": 0.0},
        "tools": {"timezone": "UTC", "timers_db": db},
    }
    for section, keys in config_for(name).items():
        config.setdefault(section, {}).update(keys)
    rows: list[dict[str, Any]] = []
    plays: list[float] = []
    with VirtualAudio() as bed, LiveDaemon(bed, server_url, workdir, config) as iris:
        time.sleep(2.0)  # READY: models loaded, prompt cached; the user starts talking
        room = RoomRecording(bed, workdir / "room.wav")
        service = TimerService(TimerStore(db), lambda e: None)
        try:
            for i, ((wav, group, check, _end), gap) in enumerate(zip(turns, gaps, strict=True), 1):
                left = asyncio.run(pasta_left(service))
                count = iris.status()["turn_count"]
                plays.append(time.monotonic())
                bed.play_into_mic(wav)
                row: dict[str, Any] = {"turn": i, "name": wav.stem, "group": group, "lost": False}
                try:
                    t = iris.wait_turn(after=count, timeout=LOST_S)
                except TimeoutError:  # heard as nothing: a lost turn, counted; the talk goes on
                    row.update(lost=True, correct=False, reply=f"(no turn within {LOST_S:.0f} s)")
                else:
                    timings = t.get("timings_ms") or {}
                    row.update(
                        first_audio_ms=t.get("first_audio_ms"), end_of_turn_ms=timings.get("vad_hangover"),
                        transcript_ms=timings.get("stt"), evaluated=(t.get("tokens") or {}).get("prompt", 0),
                        rounds=t.get("rounds", 0), tool_calls=t.get("tool_calls") or [],
                        text=t.get("text", ""), transcript=t.get("transcript", ""), reply=t.get("reply", ""),
                        extra_turns=iris.status()["turn_count"] - count - 1,
                    )  # fmt: skip
                    row["correct"] = judge(check, row["reply"], left)
                rows.append(row)
                print(f"  [{name}] {i:>2} {group:8} {wav.stem:24} own {row.get('first_audio_ms')!s:>7} ms "
                      f"eot {row.get('end_of_turn_ms')!s:>6} eval {row.get('evaluated')!s:>5}  "
                      f"{'ok' if row['correct'] else 'WRONG'} {row['reply'][:48]!r}", flush=True)  # fmt: skip
                time.sleep(max(1.0, plays[-1] + gap - time.monotonic()))
            iris.request("timers", action="cancel", which="all")
            time.sleep(1.0)
        finally:
            service.store.close()
            stereo = room.stop()
        starts = [room.frame_at(t) for t in plays]
    windows = list(zip(starts, [*starts[1:], len(stereo)], strict=True))
    for row, heard in zip(rows, room_latencies(stereo, RATE, windows), strict=True):
        row["room_ms"] = heard
    return {"config": name, "sections": config_for(name), "rows": rows}


async def naive_rows(server_url: str, turns: list, workdir: Path, rows: list[dict[str, Any]]) -> None:
    """The naive pipeline on the same questions, each on its own; prompt tokens counted.
    Rows are appended to ``rows`` as they come (an interrupted run keeps them)."""
    import httpx
    import ollama

    from iris_voice.app.assembly import build_app
    from iris_voice.app.filemode import FileTurns
    from tools.bench.naive_pipeline import NaivePipeline
    from tools.bench.timer_state import pasta_left
    from tools.bench.voice import endpoint

    llm = LlmConfig(host=server_url, temperature=0.0)
    cfg = Config(llm=llm, tools=ToolsConfig(timezone="UTC", timers_db=str(workdir / "naive-timers.db")))
    files = FileTurns(cfg)
    await files.warmup()
    app = build_app(files.cfg)
    naive = NaivePipeline(files.cfg, files.engines.stt, files.engines.tts, app.registry)
    counts: list[int] = []
    chat = naive.client.chat

    async def counted(*args: Any, **kwargs: Any) -> Any:
        resp = await chat(*args, **kwargs)
        counts.append(resp.prompt_eval_count or 0)
        return resp

    naive.client.chat = counted  # prompt_eval_count, which the pipeline itself drops
    for i, (wav, group, check, _end) in enumerate(turns, 1):
        utt = await endpoint(files.cfg, files.engines, wav)
        left, before = await pasta_left(app.timers), len(counts)
        try:
            row = await naive.turn(utt.audio, round(utt.hangover_s * 1000, 1))
        except (httpx.HTTPError, ollama.ResponseError) as exc:  # a busy machine: counted as lost, go on
            row = {"reply": f"(failed: {exc!r})", "first_audio_ms": None, "lost": True,
                   "timings_ms": {"vad_hangover": None, "stt": None}}  # fmt: skip
        timings = row["timings_ms"]
        row.setdefault("lost", False)
        row.update(turn=i, group=group, evaluated=sum(counts[before:]),
                   end_of_turn_ms=timings["vad_hangover"], transcript_ms=timings["stt"])  # fmt: skip
        row["correct"] = judge(check, row["reply"], left)
        rows.append(row)
        verdict = "ok" if row["correct"] else "WRONG"
        print(f"  [naive] {i:>2} {group:8} {wav.stem:24} {row['first_audio_ms']!s:>7} ms eval "
              f"{row['evaluated']:>5}  {verdict} {row['reply'][:48]!r}", flush=True)  # fmt: skip
    await app.timers.cancel("all")


def count_own(results: list[dict[str, Any]]) -> None:
    """Set each model turn's ``own`` tokens: what its question, tool calls and tool results
    add in the served model's chat template (the first round after a reference question,
    the second after the first), as a cache holding the history would leave to evaluate.
    An estimate: later rounds of a turn with more than two are not counted."""
    from llama_cpp import Llama

    from tools.testbed.fetch_models import assemble
    from tools.testbed.ollama_proto import ChatTemplate

    llm = Llama(str(assemble()), vocab_only=True, verbose=False)
    template = ChatTemplate(llm.metadata["tokenizer.chat_template"])

    def toks(messages: list[dict[str, Any]]) -> list[int]:
        return llm.tokenize(template.render(messages).encode(), add_bos=False, special=True)

    def added(now: list[int], ref: list[int]) -> int:
        same = next(
            (i for i, (a, b) in enumerate(zip(now, ref, strict=False)) if a != b), min(len(now), len(ref))
        )
        return len(now) - same

    system = {"role": "system", "content": "You are IRIS."}
    reference = toks([system, {"role": "user", "content": "Hi"}])
    for res in results:
        for row in res["rows"]:
            if not row.get("rounds"):
                continue
            first = [system, {"role": "user", "content": row["text"]}]
            own = added(toks(first), reference)
            calls = row["tool_calls"]
            if row["rounds"] > 1 and calls:
                second = [*first, {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]},
                    *({"role": "tool", "content": str(c["result"])} for c in calls)]  # fmt: skip
                own += added(toks(second), toks(first))
            row["own"] = own


def main() -> int:
    """Command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = ", ".join([*LEVERS, *CANDIDATES])
    p.add_argument("--configs", default="before,after", help=f"of after, before, cue, {names}")
    p.add_argument("--turns", type=int, default=len(CONVERSATION), help="the conversation's first N turns")
    p.add_argument("--gap-s", default="10,15", help="A,B: seconds from one question's start to the next's")
    p.add_argument("--seed", type=int, default=21, help="seed of the gaps")
    p.add_argument("--naive-turns", type=int, default=len(CONVERSATION),
                   help="the naive pipeline answers the first N questions (0: leave it out)")  # fmt: skip
    p.add_argument("--json", help="also write every row to this file")
    p.add_argument("--workdir", help="keep configs, logs and room recordings here (default: temporary)")
    args = p.parse_args()
    configs = args.configs.split(",")
    if unknown := set(configs) - {"after", "before", "cue", *LEVERS, *CANDIDATES}:
        p.error(f"unknown configuration: {sorted(unknown)}")
    lo, hi = (float(x) for x in args.gap_s.split(","))
    rng = random.Random(args.seed)
    gaps = [rng.uniform(lo, hi) for _ in range(args.turns)]
    absent = [f"{s}.{k}" for s, k, _ in LEVERS.values() if not present(s, k)]
    print(f"levers left out (no such key in this checkout): {', '.join(absent) or 'none'}")
    turns = ensure_ear_fixtures()[: args.turns]
    from tools.testbed.servers import start_server

    results, naive = [], []
    with start_server() as server, tempfile.TemporaryDirectory(prefix="iris-ear-") as scratch:
        tmp = Path(args.workdir or scratch)
        for name in configs:
            print(f"== configuration {name}: {config_for(name) or 'defaults'}", flush=True)
            results.append(converse(name, server.url, turns, gaps, tmp / name))
        if args.naive_turns:  # after the daemons: Ctrl-C here still prints the report
            print("== the naive pipeline", flush=True)
            try:
                asyncio.run(naive_rows(server.url, turns[: args.naive_turns], tmp, naive))
            except KeyboardInterrupt:
                print(f"(naive pipeline interrupted after {len(naive)} turns)")
    count_own(results)
    figures = report(results, naive)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "naive": naive, "figures": figures},
                                              indent=1, default=str))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
