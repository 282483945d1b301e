"""bench-replies' judge of a must-serve reply: a refusal says it cannot first."""

from __future__ import annotations

import pytest

from tools.bench.replies import refuses


@pytest.mark.parametrize(
    ("reply", "refused"),
    [
        ("I'm sorry, but I can't assist with that.", True),
        ("Sorry, I can't do that.", True),
        ("As an AI language model, I don't have personal preferences. However, both are fine.", True),
        ("Try a plunger first. If you're still unable to clear it, call a plumber.", False),
        ("Sure! Moon rhymes with spoon.", False),
        ("", False),
    ],
)
def test_a_reply_is_refused_when_its_first_sentence_says_it_cannot(reply, refused) -> None:
    assert refuses(reply) is refused


def _trace(arguments: dict) -> dict:
    call = {"name": "set_reminder", "arguments": arguments, "ok": True}
    return {"reply": "I'll remind you at 6:30 PM.", "tool_calls": [call]}


@pytest.mark.parametrize(
    ("when", "wrong"),
    [("at half past 6", False), ("at half past six", False), ("18:30", False), ("at 7 pm", True)],
)
def test_a_call_holds_the_time_asked_for_in_words_or_digits(when, wrong) -> None:
    from tools.bench.replies import judge_serve
    from tools.bench.tool_questions.serve import Say

    say = Say("Remind me at half past six to start dinner.", tools=("set_reminder",),
              args=("6:30|18:30|half past six|6.30",))  # fmt: skip
    faults = judge_serve(say, _trace({"when": when, "message": "start dinner"}), True, None, [])
    assert faults["args"] is wrong
