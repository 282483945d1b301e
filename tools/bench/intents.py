"""Speed of the local intent matcher: build time and match time per sentence (medians).

Matches everyday commands (which the fast path answers) and near misses (which go to
the model) many times each, after one warm-up match, and prints the median, p95 and
worst match time of each group and of all sentences. No model is needed.
"""

from __future__ import annotations

import argparse
import time

from iris_voice.conversation.fastpath import IntentMatcher
from iris_voice.tools.builtin import declared_registry
from tools.bench.stats import p50, p95

COMMANDS = [
    "what time is it", "What time is it in Tokyo?", "what's the time in new york right now",
    "what's the date", "what day is it today", "set a pasta timer for eight minutes",
    "set a timer for an hour and a half", "start a 5 minute timer for the eggs",
    "add two minutes to the pasta timer", "take 30 seconds off the timer", "pause the pasta timer",
    "resume the timer", "how long is left on the pasta timer", "cancel all timers",
    "what is twenty three times forty seven", "square root of 144", "what is 15% of 80?",
    "remind me to call mom in two hours", "remind me at 7 pm to take out the trash",
    "remind me to put the cake in the oven in ten minutes",
    "how many ounces in a pound", "what is 20 degrees celsius in fahrenheit", "what day is christmas",
    "how many days until halloween",
]  # fmt: skip
NEAR_MISSES = [
    "what time did the movie start", "set the table", "how long is the Nile",
    "what's the time complexity of quicksort", "remind me what we talked about",
    "what time is it in the movie", "what is 2 times 3 times 4", "tell me a joke about cats",
    "could you explain how a timer interrupt works on a microcontroller",
    "what is the capital of France", "how many people live in tokyo", "when is my birthday",
]  # fmt: skip


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20, help="matches per sentence")
    args = ap.parse_args()
    t0 = time.perf_counter()
    matcher = IntentMatcher(declared_registry().intents())  # what the built-in tools declare
    build_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    matcher.match("what time is it in Tokyo")
    first_ms = (time.perf_counter() - t0) * 1000
    print(f"templates loaded and compiled in {build_ms:.0f} ms; first match {first_ms:.0f} ms")
    every: list[float] = []
    for name, sentences, fast in (("commands", COMMANDS, True), ("near misses", NEAR_MISSES, False)):
        per_sentence, wrong = [], []
        for text in sentences:
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                found = matcher.match(text)
                times.append((time.perf_counter() - t0) * 1000)
            if (found is not None) != fast:
                wrong.append(text)
            per_sentence.append(p50(times))
        every += per_sentence
        print(
            f"{name:12} {len(sentences):3d} sentences: median {p50(per_sentence):.2f} ms, "
            f"p95 {p95(per_sentence):.2f} ms, max {max(per_sentence):.2f} ms"
            + (f"; NOT AS EXPECTED: {wrong}" if wrong else "")
        )
    print(f"{'all':12} {len(every):3d} sentences: median {p50(every):.2f} ms")


if __name__ == "__main__":
    main()
