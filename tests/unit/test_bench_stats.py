"""The benchmarks' one percentile and one word error rate (tools/bench/stats.py)."""

from __future__ import annotations

import statistics

import pytest

from tools.bench.stats import edits, normalize, p50, p95, percentile, pooled_wer, wer, word_errors

ONE_TO_TEN = list(range(1, 11))


def test_percentile_is_linear_interpolation_between_closest_ranks():
    assert p50(ONE_TO_TEN) == 5.5
    assert p95(ONE_TO_TEN) == pytest.approx(9.55)
    assert percentile(ONE_TO_TEN, 90) == pytest.approx(9.1)
    assert percentile(ONE_TO_TEN, 0) == 1
    assert percentile(ONE_TO_TEN, 100) == 10
    assert percentile([10, 20], 25) == 12.5


def test_percentile_matches_numpy_and_statistics_inclusive():
    values = [3.2, 1.0, 7.5, 4.4, 9.9, 2.1, 6.0]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for q in (1, 25, 50, 75, 95, 99):
        assert percentile(values, q) == pytest.approx(cuts[q - 1])
    assert p50(values) == statistics.median(values)
    assert p50([4, 1, 3, 2]) == statistics.median([4, 1, 3, 2]) == 2.5


def test_percentile_order_and_iterables_do_not_matter():
    assert p95(reversed(ONE_TO_TEN)) == p95(ONE_TO_TEN)
    assert p50(x for x in (3, 1, 2)) == 2


def test_percentile_single_value_and_empty():
    assert p50([7.0]) == 7.0
    assert p95([7.0]) == 7.0
    assert percentile([7.0], 0) == 7.0
    assert percentile([], 50) is None
    assert p50([]) is None
    assert p95(iter(())) is None


def test_percentile_rounds_when_asked():
    assert p95(ONE_TO_TEN, 1) == 9.6
    assert p50([1.04, 1.06], 1) == 1.1
    assert p50([], 1) is None


def test_percentile_rejects_out_of_range_q_and_nan():
    with pytest.raises(ValueError):
        percentile(ONE_TO_TEN, 101)
    with pytest.raises(ValueError):
        percentile(ONE_TO_TEN, -1)
    with pytest.raises(ValueError):
        percentile([1.0, float("nan")], 50)


def test_normalize_case_punctuation_apostrophes_numbers():
    assert normalize("What's the time in New York?") == ["whats", "the", "time", "in", "new", "york"]
    assert normalize("WHAT’S up, Doc!") == ["whats", "up", "doc"]
    assert normalize("15% of 80") == ["fifteen", "percent", "of", "eighty"]
    assert normalize("set a 10-minute timer") == ["set", "a", "ten", "minute", "timer"]
    assert normalize("105 and 120") == ["one", "hundred", "five", "and", "one", "hundred", "twenty"]
    assert normalize("1,081") == normalize("1081") == ["one", "thousand", "eighty", "one"]
    assert normalize("1, 2, 3") == ["one", "two", "three"]
    assert normalize("") == []


def test_wer_perfect_and_case_punctuation_ignored():
    assert wer("What time is it in Tokyo?", "what time is it in tokyo") == 0.0
    assert wer("Set a timer for ten minutes.", "set a timer for 10 minutes") == 0.0
    assert wer("what's the date", "whats the date") == 0.0


def test_wer_substitution_insertion_deletion():
    ref = "set a timer for ten minutes"  # six words
    assert word_errors(ref, "set a timer for two minutes") == (1, 6)  # substitution
    assert word_errors(ref, "please set a timer for ten minutes") == (1, 6)  # insertion
    assert word_errors(ref, "set timer for ten minutes") == (1, 6)  # deletion
    assert word_errors(ref, "") == (6, 6)  # all missed
    assert word_errors(ref, "set the timer ten minutes now") == (3, 6)
    assert wer(ref, "set a timer for two minutes") == pytest.approx(1 / 6)
    assert wer(ref, "set timer for ten minutes") == pytest.approx(1 / 6)


def test_wer_is_a_float_and_can_exceed_one_with_insertions():
    rate = wer("hello", "oh hello there you")
    assert isinstance(rate, float)
    assert rate == 3.0


def test_wer_empty_reference():
    assert wer("", "") == 0.0
    assert wer("", "something heard") == 1.0
    assert word_errors("", "something heard") == (2, 0)


def test_edits_is_word_levenshtein():
    assert edits([], []) == 0
    assert edits(["a", "b", "c"], ["a", "c"]) == 1
    assert edits(["a", "b"], ["b", "a"]) == 2
    assert edits(["a"], ["x", "y", "z"]) == 3


def test_pooled_wer_weighs_words_not_clips():
    counts = [word_errors("one two three four five six seven eight nine ten", "one two three four five"),
              word_errors("yes", "no")]  # fmt: skip
    assert counts == [(5, 10), (1, 1)]
    assert pooled_wer(counts) == pytest.approx(6 / 11)  # not the clips' mean, (0.5 + 1) / 2
    assert pooled_wer(iter(counts)) == pytest.approx(6 / 11)
    assert pooled_wer([]) is None
    assert pooled_wer([(0, 0)]) is None
