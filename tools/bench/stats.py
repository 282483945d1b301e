"""The benchmarks' one percentile and one word error rate, so every published p50/p95 and
WER is computed alike.

Percentiles: linear interpolation between the closest ranks (Hyndman & Fan type 7): the
default of ``numpy.percentile``, ``statistics.quantiles(method="inclusive")`` and
spreadsheets' PERCENTILE. Before this module the benchmarks used four definitions; this is
the one most of them used (``iris_voice.app.commands.percentile`` behind ``iris status``
and the voice, lever and Whisper-window reports, the hub benchmark, and every
``statistics.median``, which is this p50), and it is the only one of them whose p50 is the
ordinary median. Nearest-rank definitions always return a measured value but jump between
samples on the small runs benchmarks make (5-30 values), so a p95 of 10 values is either
the 9th or the 10th value depending on the rounding rule; interpolation moves smoothly.

Word error rate: both texts normalized alike (lower case; ``%`` read as "percent";
numbers written in digits spelled out, "1,081" and "1081" both as "one thousand eighty
one"; punctuation and apostrophes dropped), then the word-level Levenshtein distance
(substitutions + insertions + deletions) over the reference's word count.
``word_errors`` gives those two counts so a benchmark can pool them over many clips
(sum of errors / sum of words), which weighs each word equally rather than each clip.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

__all__ = ["edits", "normalize", "p50", "p95", "percentile", "pooled_wer", "wer", "word_errors"]


def percentile(values: Iterable[float], q: float, ndigits: int | None = None) -> float | None:
    """The ``q``-th percentile (``q`` in 0..100) of ``values`` by linear interpolation
    between the closest ranks: with the values sorted as x[0..n-1], the position
    ``h = (n - 1) * q / 100`` and the result ``x[floor(h)] + (h - floor(h)) *
    (x[floor(h) + 1] - x[floor(h)])``. So p0 is the minimum, p100 the maximum and p50 the
    median; for 1..10, p50 is 5.5 and p95 is 9.55. None for no values; rounded to
    ``ndigits`` when given. ValueError for ``q`` outside 0..100 or a NaN value."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be within 0..100, not {q!r}")
    ordered = sorted(values)
    if not ordered:
        return None
    if any(math.isnan(v) for v in ordered):
        raise ValueError("percentile of NaN values")
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    value = ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
    return value if ndigits is None else round(value, ndigits)


def p50(values: Iterable[float], ndigits: int | None = None) -> float | None:
    """The median: ``percentile(values, 50, ndigits)``; None for no values."""
    return percentile(values, 50, ndigits)


def p95(values: Iterable[float], ndigits: int | None = None) -> float | None:
    """``percentile(values, 95, ndigits)``; None for no values."""
    return percentile(values, 95, ndigits)


_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((1_000_000_000, "billion"), (1_000_000, "million"), (1000, "thousand"), (100, "hundred"))


def _number(n: int) -> str:
    """``n`` (>= 0) in words as a speech recognizer's reference would spell it."""
    for size, name in _SCALES:
        if n >= size:
            rest = n % size
            return f"{_number(n // size)} {name}" + (f" {_number(rest)}" if rest else "")
    if n < 20:
        return _ONES[n]
    return _TENS[n // 10] + (f" {_ONES[n % 10]}" if n % 10 else "")


def normalize(text: str) -> list[str]:
    """``text``'s words as the WER compares them: lower case, ``%`` as "percent", digits
    spelled out (thousands separators joined first: "1,081" is 1081), apostrophes dropped
    ("what's" is "whats"), anything but letters a word break."""
    text = text.lower().replace("%", " percent")
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    text = re.sub(r"\d+", lambda m: f" {_number(int(m.group()))} ", text)
    return re.findall(r"[a-z]+", text.replace("'", "").replace("\u2019", ""))


def edits(ref: list[str], hyp: list[str]) -> int:
    """Word-level Levenshtein distance: the fewest substitutions, insertions and deletions
    that turn the word list ``ref`` into ``hyp``."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(word errors, reference words) between two texts, both ``normalize``d: the counts a
    pooled WER sums over clips."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    return edits(ref, hyp), len(ref)


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate of ``hypothesis`` against ``reference``: ``word_errors`` as a
    fraction. 0.0 is a perfect transcript; it exceeds 1.0 when the hypothesis adds more
    words than the reference has. An empty reference gives 0.0 for an empty hypothesis and
    1.0 otherwise."""
    errors, words = word_errors(reference, hypothesis)
    if not words:
        return float(errors > 0)
    return errors / words


def pooled_wer(counts: Iterable[tuple[int, int]]) -> float | None:
    """The WER of many clips together from their ``word_errors`` counts: all errors over
    all reference words, so a long clip weighs more than a short one. None for no words."""
    errors = words = 0
    for e, n in counts:
        errors, words = errors + e, words + n
    return errors / words if words else None
