"""The voice tests' reading of what a listener wrote: one form for every spelling of a number
or a clock time (tests/support/spoken.py)."""

from __future__ import annotations

import pytest

from tests.support.spoken import clock_times, normalise, share_said


@pytest.mark.parametrize(
    ("said", "times"),
    [
        ("It is 6:02 p.m. in Tokyo.", {(6, 2)}),
        ("It is 6-0-2 p.m. on Wednesday, November 25, 2026 in Tokyo.", {(6, 2)}),
        ("it is 10-03 a.m. on friday, november 27, 2026.", {(10, 3)}),  # a satellite's speaker, heard
        ("it is 602 PM", {(6, 2)}),
        ("it is 6 02 pm", {(6, 2)}),
        ("it is 6.02 P.M.", {(6, 2)}),
        ("It's six oh two p.m.", {(6, 2)}),
        ("it is twelve forty-one PM", {(12, 41)}),
        ("it is 1241 p.m.", {(12, 41)}),
        ("it is ten o'clock", {(10, None)}),
        ("it is 7 pm", {(7, None)}),
        ("it is 11:05 in tokyo", {(11, 5)}),
        ("november 23, 2026 in tokyo", set()),
        ("23 times 47 is 1081", set()),
        ("it is 1081 am", set()),  # no such time
    ],
)
def test_clock_times_in_any_spelling(said, times):
    assert clock_times(said) == times


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Twenty-three times forty seven is one thousand eighty one.", "23 times 47 is 1081."),
        ("23x47 is 1,081", "23 times 47 is 1081"),
        ("one hundred and five", "105"),
        ("two thousand twenty six", "2026"),
        ("in four minutes", "in 4 minutes"),
        ("someone often says ten", "someone often says 10"),
    ],
)
def test_numbers_become_digits(text, expected):
    assert normalise(text) == expected


def test_share_said_counts_words_in_any_spelling():
    assert share_said("It is 2:41 AM in Tokyo.", "it is two forty one a.m. in tokyo") == 1.0
    assert share_said("It will boil in four minutes.", "it will boil in 4 minutes") == 1.0
    assert share_said("It is 2:41 AM in Tokyo.", "it is in tokyo") == pytest.approx(4 / 6)
    assert share_said("", "anything") == 0.0
