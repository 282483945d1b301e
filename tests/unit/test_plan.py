"""The boost planner's reply format: whole replies and streamed ones."""

from __future__ import annotations

import pytest

from iris_voice.app.assembly import build_app
from iris_voice.config import Config, ToolsConfig
from iris_voice.conversation.plan import (
    Attempt,
    PlanStream,
    parse_plan,
    planner_prefix,
    planner_request,
    tools_text,
)


@pytest.mark.parametrize(
    "reply",
    [
        "SUMMARY: Paris is the capital of France.",
        "summary: Paris is the capital of France.",
        "**SUMMARY:** Paris is the capital of France.",
        "**Summary**: Paris is the capital of France.",
        "## Summary\nParis is the capital of France.",
        "Sure, here you go.\n\nSUMMARY - Paris is the capital of France.",
        "ANALYSIS: No tool is needed.\nSUMMARY: Paris is the capital of France.",
        "GUIDANCE: none\nSUMMARY: Paris is the capital of France.",
        "Good question. Summary: Paris is the capital of France.",
    ],
)
def test_summary_variants(reply):
    plan = parse_plan(reply)
    assert plan.kind == "summary"
    assert plan.summary == "Paris is the capital of France."


@pytest.mark.parametrize(
    ("reply", "analysis"),
    [
        (
            "ANALYSIS: Needs arithmetic.\nGUIDANCE: Call calculator with expression 23*47.",
            "Needs arithmetic.",
        ),
        (
            "**Analysis:** Needs arithmetic.\n\n**Guidance:** Call calculator with expression 23*47.",
            "Needs arithmetic.",
        ),
        (
            "### ANALYSIS\nNeeds arithmetic.\n### GUIDANCE\nCall calculator with expression 23*47.",
            "Needs arithmetic.",
        ),
        ("guidance: Call calculator with expression 23*47.", ""),  # ANALYSIS missing
        (
            "Let me think.\nAnalysis: Needs arithmetic.\n"
            "Guidance: Call calculator with expression 23*47.\nThanks!",
            None,
        ),
    ],
)
def test_guidance_variants(reply, analysis):
    plan = parse_plan(reply)
    assert plan.kind == "guidance"
    assert plan.guidance.startswith("Call calculator with expression 23*47.")
    if analysis is not None:
        assert plan.analysis == analysis


def test_guidance_wins_over_summary_in_a_whole_reply():
    plan = parse_plan("SUMMARY: I will check the time.\nGUIDANCE: call get_current_time")
    assert plan.kind == "guidance" and plan.guidance == "call get_current_time"


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I like turtles.",
        "SUMMARY:",
        "SUMMARY:   \n",
        "In summary: the answer is four.",  # prose, not a header
        "GUIDANCE: none",
        '```json\n{"name": "calculator"}\n```',
    ],
)
def test_anything_else_is_invalid(reply):
    assert parse_plan(reply).kind == "invalid"


def feed_all(stream: PlanStream, text: str, step: int = 1) -> list[tuple[int, str]]:
    """Feed ``text`` in pieces; (characters fed so far, sentence) for each sentence out."""
    out = []
    for i in range(0, len(text), step):
        out += [(i + step, s) for s in stream.feed(text[i : i + step])]
    return out


def test_stream_hands_out_summary_sentences_before_the_reply_ends():
    text = "SUMMARY: Paris is the capital of France. It has about two million people.\n"
    stream = PlanStream()
    got = feed_all(stream, text)
    plan, rest = stream.finish()
    assert [s for _, s in got] + rest == [
        "Paris is the capital of France.",
        "It has about two million people.",
    ]
    first_at = got[0][0]
    assert first_at < text.index("It has") + 2  # out as soon as the next sentence began
    assert plan.kind == "summary"
    assert plan.summary == "Paris is the capital of France. It has about two million people."


def test_stream_flushes_a_last_sentence_without_punctuation_at_the_end():
    stream = PlanStream()
    assert feed_all(stream, "**Summary:** Hello there", step=4) == []
    plan, rest = stream.finish()
    assert rest == ["Hello there"] and plan.kind == "summary"


def test_stream_never_speaks_a_header_split_across_chunks():
    stream = PlanStream()
    said = stream.feed("SUMMARY: Hi there.\nANAL") + stream.feed("YSIS: small talk")
    plan, rest = stream.finish()
    assert said + rest == ["Hi there."]
    assert plan.kind == "summary" and stream.done


def test_stream_stops_at_a_header_after_a_sentence_on_the_same_line():
    stream = PlanStream()
    said = feed_all(stream, "SUMMARY: Paris. ANALYSIS: trivia, no tool.", step=3)
    plan, rest = stream.finish()
    assert [s for _, s in said] + rest == ["Paris."]


def test_stream_summary_turns_into_a_plan_when_guidance_follows_before_anything_was_said():
    stream = PlanStream()
    said = feed_all(stream, "SUMMARY: I will check the time\nGUIDANCE: call get_current_time\n", step=5)
    plan, rest = stream.finish()
    assert said == [] and rest == []
    assert plan.kind == "guidance" and plan.guidance == "call get_current_time"


def test_stream_guidance_none_then_summary_is_said_at_the_end():
    stream = PlanStream()
    assert feed_all(stream, "GUIDANCE: none\nSUMMARY: Hello! Nice to meet you.", step=2) == []
    plan, rest = stream.finish()
    assert plan.kind == "summary" and rest == ["Hello!", "Nice to meet you."]


def test_stream_garbage_is_invalid():
    stream = PlanStream()
    assert feed_all(stream, "The weather is nice today. Summaries are useful.") == []
    plan, rest = stream.finish()
    assert plan.kind == "invalid" and rest == []


def test_a_planner_inventing_the_next_request_is_cut_off():
    reply = "SUMMARY: Shakespeare wrote it.\nRequest: What time is it?\nANALYSIS: x\nGUIDANCE: call the clock"
    assert parse_plan(reply) == parse_plan("SUMMARY: Shakespeare wrote it.")
    stream = PlanStream()
    said = feed_all(stream, reply, step=4)
    plan, rest = stream.finish()
    assert [s for _, s in said] + rest == ["Shakespeare wrote it."] and plan.kind == "summary"


def test_planner_prompt_has_tools_as_text_and_examples_for_present_tools(tmp_path):
    registry = build_app(Config(tools=ToolsConfig(timers_db=str(tmp_path / "t.db")))).registry
    text = tools_text(registry.specs(), "concise")
    assert "calculator" in text and "get_current_time" in text
    assert "<tool_call>" not in text
    prefix = planner_prefix(registry.specs(), "concise")
    assert prefix[0]["role"] == "system" and text in prefix[0]["content"]
    assert [m["role"] for m in prefix[1:]] == ["user", "assistant"] * 4
    assert prefix[2]["content"].startswith("ANALYSIS:") and prefix[4]["content"].startswith("SUMMARY:")
    only_calc = [s for s in registry.specs() if s.name == "calculator"]
    replies = [m["content"] for m in planner_prefix(only_calc, "text")[2::2]]
    assert len(replies) == 3 and not any("get_current_time" in r for r in replies)


def test_planner_request_names_the_loop_and_the_failures():
    assert planner_request("What is 2+2?", 1, 3, []) == "Request: What is 2+2?"
    request = planner_request(
        "What is 2+2?", 2, 3, [Attempt("blah", "it did not start with SUMMARY: or GUIDANCE:")]
    )
    assert request.startswith("Request: What is 2+2?\n(Attempt 2 of 3.")
    assert "'blah'" in request and "did not start with SUMMARY" in request
