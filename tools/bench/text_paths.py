"""CPU time of a streamed reply's text paths on hostile replies, here and at another revision.

Each hostile reply of ``tests/support/hostile/replies.py`` is streamed in 3-character deltas (as
the scripted backend streams) through the sentence splitter, through the tool-call speech
filter, and through both in a row as the chat loop chains them; ``extract_calls`` and
``strip_markup`` read it whole. Printed: CPU seconds per reply, size and path.

``--against REV`` also runs the same measurements on ``iris_voice`` as it is at git
revision ``REV`` (unpacked into a scratch folder and run in a child process), side by
side. A path that takes more than ``--budget`` seconds at one size is not run at the
larger sizes.

    python -m tools.bench.text_paths --sizes 2000,8000 --against main
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from io import BytesIO
from pathlib import Path

from iris_voice.llm.sentences import SentenceSplitter
from iris_voice.llm.textcalls import SpeakableFilter, extract_calls, strip_markup
from tests.support.hostile import replies as hostile

ROOT = Path(__file__).resolve().parents[2]
KNOWN = {"calculator", "get_current_time", "set_timer"}
INPUTS = {**hostile.SPLITTER_INPUTS, **hostile.FILTER_INPUTS}


def _splitter(text: str) -> None:
    s = SentenceSplitter()
    for delta in hostile.chunks(text):
        s.feed(delta)
    s.flush()


def _filter(text: str) -> None:
    f = SpeakableFilter(KNOWN)
    for delta in hostile.chunks(text):
        f.feed(delta)
    f.flush()


def _chat(text: str) -> None:
    f, s = SpeakableFilter(KNOWN), SentenceSplitter()
    for delta in hostile.chunks(text):
        s.feed(f.feed(delta))
    s.feed(f.flush())
    s.flush()


def _whole(text: str) -> None:
    strip_markup(extract_calls(text, KNOWN)[1])


PATHS: dict[str, Callable[[str], None]] = {
    "splitter": _splitter,
    "filter": _filter,
    "chat": _chat,
    "extract": _whole,
}
"""What a reply goes through, by name."""


def measure(sizes: list[int], budget: float) -> dict[str, float | None]:
    """CPU seconds per ``input/size/path``; None where a smaller size went over ``budget``."""
    out: dict[str, float | None] = {}
    for name, make in INPUTS.items():
        for path, run in PATHS.items():
            over = False
            for n in sizes:
                key = f"{name}/{n}/{path}"
                if over:
                    out[key] = None
                    continue
                text = make(n)
                start = time.process_time()
                run(text)
                out[key] = time.process_time() - start
                over = out[key] > budget
    return out


def measure_at(rev: str, sizes: list[int], budget: float) -> dict[str, float | None]:
    """The same measurements on ``iris_voice`` at git revision ``rev``, in a child process."""
    archive = subprocess.run(
        ["git", "archive", rev, "iris_voice"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(ROOT)])}
        args = ["--sizes", ",".join(map(str, sizes)), "--budget", str(budget), "--json"]
        child = subprocess.run(
            [sys.executable, "-m", "tools.bench.text_paths", *args],
            cwd=tmp,  # so that the revision's iris_voice is the one imported
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    return json.loads(child.stdout)


def _cell(value: float | None) -> str:
    return "> budget" if value is None else f"{value:.4f}"


def main() -> None:
    """Parse the arguments, measure, print a table (or JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,16000", help="reply lengths, comma-separated")
    parser.add_argument("--against", metavar="REV", help="also measure iris_voice at this git revision")
    parser.add_argument("--budget", type=float, default=30.0, help="CPU s before larger sizes are skipped")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    now = measure(sizes, args.budget)
    if args.json:
        print(json.dumps(now))
        return
    old = measure_at(args.against, sizes, args.budget) if args.against else None
    head = f"{'reply':<22}{'chars':>7}  {'path':<9}{'CPU s':>10}"
    print(head + (f"{'at ' + args.against:>14}" if old else ""))
    for key, value in now.items():
        name, n, path = key.split("/")
        row = f"{name:<22}{n:>7}  {path:<9}{_cell(value):>10}"
        print(row + (f"{_cell(old.get(key)):>14}" if old else ""))


if __name__ == "__main__":
    main()
