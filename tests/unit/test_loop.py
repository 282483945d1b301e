"""The single-stage tool loop, against a scripted backend (the real model: test_model_turns.py)."""

from __future__ import annotations

import pytest

from iris_voice.config import LlmConfig
from iris_voice.conversation.history import ToolMode, tool_turn_messages
from iris_voice.conversation.repairs import (
    ACT_NOTE,
    FAILED,
    LIMIT_NOTE,
    NO_TOOL_NOTE,
    NOT_DONE,
    NOTHING_FOUND,
)
from iris_voice.conversation.responder import ask
from iris_voice.conversation.turn import FALLBACK_REPLY
from iris_voice.errors import LlmError
from iris_voice.events import EventBus, SentenceReady, ToolCalled, TurnFinished
from iris_voice.tools.registry import CANNOT, ToolRegistry, ToolResult
from tests.support.fakes import ScriptedBackend, chat_assistant


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def registry() -> ToolRegistry:
    r = ToolRegistry()
    r.add_function(multiply)
    return r


def make(*replies, **cfg):
    backend = ScriptedBackend(*replies, no_tools=cfg.pop("no_tools", False))
    bus = EventBus()
    events = []
    bus.subscribe(events.append)
    loop = chat_assistant(backend, registry(), LlmConfig(**cfg), publish=bus.publish)
    return loop, backend, events


def record_fast(loop, text: str, result: ToolResult) -> None:
    """Write a turn as the fast path does: the call, its result, and the result's sentence open."""
    turn = [{"role": "user", "content": text}, *tool_turn_messages(ToolMode.NATIVE, "", [result])]
    loop.conversation.add(turn, open_reply=result.result)


async def test_plain_answer_streams_sentences_without_tools_called():
    loop, backend, events = make("Hello there. I am IRIS, your assistant.")
    got = [s async for s in loop.sentences("hi")]
    assert got == ["Hello there.", "I am IRIS, your assistant."]
    assert [type(e).__name__ for e in events] == [
        "TurnStarted",
        "SentenceReady",
        "SentenceReady",
        "TurnFinished",
    ]
    assert backend.requests[0]["tools"][0]["function"]["name"] == "multiply"


async def test_structured_call_runs_tool_and_feeds_result_back():
    loop, backend, events = make([("multiply", {"a": "23", "b": 47})], "23 times 47 is 1081.")
    trace = await ask(loop, "What is 23 times 47?")
    assert trace.reply == "23 times 47 is 1081."
    assert trace.rounds == 2 and trace.execution_path == "native"
    assert trace.tool_calls[0]["name"] == "multiply" and trace.tool_calls[0]["result"] == "1081"
    assert trace.tool_calls[0]["arguments"] == {"a": 23, "b": 47}
    second = backend.requests[1]["messages"]
    assert second[-2]["tool_calls"] == [{"function": {"name": "multiply", "arguments": {"a": 23, "b": 47}}}]
    assert second[-1] == {"role": "tool", "content": "1081", "tool_name": "multiply"}
    assert any(isinstance(e, ToolCalled) and e.ok for e in events)
    d = trace.to_dict()
    assert set(d) >= {"text", "reply", "tool_calls", "execution_path", "rounds", "tokens", "timings_ms"}
    assert d["tokens"] == {"prompt": 20, "completion": 10}


async def test_call_leaked_into_content_is_recovered_and_never_spoken():
    leaked = 'Sure.\n```json\n{"name": "multiply", "arguments": {"a": 2, "b": 3}}\n```'
    loop, _, events = make(leaked, "Two times three is 6.")
    got = [s async for s in loop.sentences("2 times 3?")]
    assert got == ["Sure.", "Two times three is 6."]
    spoken = " ".join(e.text for e in events if isinstance(e, SentenceReady))
    assert "multiply" not in spoken and "{" not in spoken


async def test_bad_arguments_go_back_to_the_model_as_error():
    loop, backend, _ = make([("multiply", {"a": "x", "b": 1})], [("multiply", {"a": 1, "b": 1})], "It is 1.")
    trace = await ask(loop, "1 times 1")
    assert [c["ok"] for c in trace.tool_calls] == [False, True]
    err = backend.requests[1]["messages"][-1]["content"]
    assert err.startswith("Error: invalid arguments for multiply: a:")


async def test_call_limit_then_final_answer_without_tools():
    calls = [[("multiply", {"a": i, "b": 1})] for i in range(5)]
    loop, backend, _ = make(*calls[:2], "Done.", max_tool_calls=2)
    trace = await ask(loop, "loop forever")
    assert len(trace.tool_calls) == 2 and trace.reply == "Done."
    assert backend.requests[2]["tools"] == backend.requests[0]["tools"]  # the cached prefix stays
    assert backend.requests[2]["messages"][-1]["content"] == LIMIT_NOTE


async def test_silence_after_failed_calls_asks_once_more_without_tools():
    # A knowledge question the model sent to a tool: the error went back, the model said
    # nothing; it gets one round without tools for its own answer instead of "can't".
    loop, backend, _ = make([("multiply", {"a": "x", "b": 1})], "", "A spider has eight legs.")
    trace = await ask(loop, "how many legs does a spider have")
    assert trace.reply == "A spider has eight legs." and len(backend.requests) == 3
    assert backend.requests[2]["tools"] == backend.requests[0]["tools"]  # the cached prefix stays
    assert backend.requests[2]["messages"][-1]["content"] == NO_TOOL_NOTE


async def test_silence_after_a_call_that_worked_speaks_its_result_without_another_round():
    loop, backend, _ = make([("multiply", {"a": 2, "b": 3})], "")
    trace = await ask(loop, "2 times 3")
    assert trace.reply == "6" and len(backend.requests) == 2


async def test_a_call_to_an_unknown_tool_is_no_crash_and_ends_the_turn_with_cannot():
    # A tool nobody has is an action IRIS cannot take: said at once, no second round.
    loop, backend, _ = make([("launch_rocket", {})], "I cannot do that.")
    trace = await ask(loop, "launch")
    assert trace.reply == CANNOT and trace.extra["unknown_tools"] == ["launch_rocket"]
    assert len(backend.requests) == 1 and trace.tool_calls == []


async def test_an_unknown_tool_beside_a_known_one_is_an_error_result_the_model_reads():
    loop, backend, _ = make([("launch_rocket", {}), ("multiply", {"a": 2, "b": 3})], "It is 6.")
    trace = await ask(loop, "launch and multiply")
    assert trace.tool_calls[0]["ok"] is False and trace.tool_calls[1]["ok"] is True
    assert any(
        "unknown tool 'launch_rocket'" in m.get("content", "") for m in backend.requests[1]["messages"]
    )


async def test_auto_mode_switches_to_text_when_model_has_no_tools():
    text_call = '<tool_call>{"name": "multiply", "arguments": {"a": 6, "b": 7}}</tool_call>'
    loop, backend, _ = make(text_call, "Six times seven is 42.", no_tools=True)
    trace = await ask(loop, "6 times 7")
    assert trace.execution_path == "text" and trace.reply == "Six times seven is 42."
    assert trace.tool_calls[0]["result"] == "42"
    system = backend.requests[1]["messages"][0]["content"]
    assert "<tools>" in system and "multiply" in system
    assert "<tool_response>" in backend.requests[2]["messages"][-1]["content"]


async def test_native_mode_does_not_fall_back():
    loop, _, _ = make("x", no_tools=True, tool_mode="native")
    with pytest.raises(LlmError) as err:
        await ask(loop, "hi")
    assert err.value.code == "llm-no-tools"


async def test_prefix_is_stable_and_history_is_kept():
    loop, backend, _ = make("First answer.", "Second answer.")
    await ask(loop, "one")
    await ask(loop, "two")
    a, b = backend.requests
    assert a["messages"][0] == b["messages"][0] and a["tools"] == b["tools"]
    assert [m["content"] for m in b["messages"][1:]] == ["one", "First answer.", "two"]


async def test_history_bounded_and_reset_when_idle():
    now = [0.0]
    backend = ScriptedBackend(*[f"Answer {i}." for i in range(6)])
    loop = chat_assistant(
        backend, registry(), LlmConfig(history_turns=2, history_idle_reset_s=60), clock=lambda: now[0]
    )
    for i in range(4):
        await ask(loop, f"q{i}")
    assert len(loop.conversation.turns) == 2
    # q2 went past two turns: the oldest were dropped in one step, down to q2 alone
    assert [m["content"] for m in backend.requests[3]["messages"][1:]] == ["q2", "Answer 2.", "q3"]
    now[0] = 1000.0
    await ask(loop, "after lunch")
    assert [m["content"] for m in backend.requests[4]["messages"][1:]] == ["after lunch"]


async def test_interrupted_turn_keeps_only_what_was_spoken():
    loop, _, events = make("One. Two. Three.")
    gen = loop.sentences("count")
    assert await gen.__anext__() == "One."
    await gen.aclose()
    assert loop.conversation.turns[-1][-1] == {"role": "assistant", "content": "One."}
    assert not any(isinstance(e, TurnFinished) for e in events)


async def test_empty_reply_falls_back_to_a_sentence():
    loop, _, _ = make("")
    assert (await ask(loop, "...")).reply == FALLBACK_REPLY


async def test_server_error_propagates_and_turn_is_forgotten():
    loop, _, _ = make(LlmError("llm-unreachable", "cannot reach"))
    with pytest.raises(LlmError):
        await ask(loop, "hello")
    assert loop.conversation.turns == []


async def test_repeated_identical_call_is_not_run_again():
    call = [("multiply", {"a": 23, "b": 47})]
    loop, backend, _ = make(call, call, "It is 1081.")
    trace = await ask(loop, "23 times 47")
    assert len(trace.tool_calls) == 1 and trace.reply == "It is 1081."
    assert backend.requests[2]["tools"] == backend.requests[0]["tools"]  # the cached prefix stays
    assert backend.requests[2]["messages"][-1]["content"] == LIMIT_NOTE


async def test_tools_tag_wrapper_is_a_call_and_never_spoken():
    wrapped = '<tools>\n{"name": "multiply", "arguments": {"a": 2, "b": 5}}\n</tools>'
    loop, _, _ = make(wrapped, "<tools>\n\n</tools>\n")
    trace = await ask(loop, "2 times 5")
    assert trace.tool_calls[0]["result"] == "10"
    assert trace.reply == "10"  # nothing speakable came back: the tool's own result is spoken


async def test_repeated_call_after_an_answer_ends_the_turn_without_saying_it_twice():
    call = [("multiply", {"a": 23, "b": 47})]
    repeat = 'The result is `1081`.\n```json\n{"name": "multiply", "arguments": {"a": 23, "b": 47}}\n```'
    loop, backend, _ = make(call, repeat)
    trace = await ask(loop, "23 times 47")
    assert trace.reply == "The result is 1081."
    assert len(backend.requests) == 2 and len(trace.tool_calls) == 1


async def test_a_sentence_repeated_verbatim_is_spoken_once():
    loop, _, _ = make("It is 1081. It is 1081. Anything else?")
    assert (await ask(loop, "23 times 47")).reply == "It is 1081. Anything else?"


async def test_a_copied_call_lead_in_is_not_spoken():
    from iris_voice.tools.registry import CALL_LEAD_IN

    # a small model wrote the browse listing's lead-in in front of its answer
    loop, _, _ = make(f"{CALL_LEAD_IN} The time in Paris is 5 PM.")
    got = [s async for s in loop.sentences("what time is it in Paris?")]
    assert got == ["The time in Paris is 5 PM."]


async def test_a_turn_ending_with_a_tool_result_gets_its_reply_once_another_follows():
    loop, backend, _ = make("Sure.", "Fine.")
    first = ToolResult(
        name="multiply", arguments={"a": 2, "b": 3}, ok=True, result="2 times 3 is 6.", duration_ms=1.0
    )
    record_fast(loop, "2 times 3", first)
    await ask(loop, "and a joke?")
    # while it was the last turn, the fast-path turn ended with its tool result
    assert backend.requests[0]["messages"][-2]["role"] == "tool"
    await ask(loop, "thanks")
    closed = loop.conversation.turns[0]
    assert closed[-1] == {"role": "assistant", "content": "2 times 3 is 6."}
    assert [m["role"] for m in backend.requests[1]["messages"][1:4]] == ["user", "assistant", "tool"]


async def test_a_cut_off_fast_path_turn_keeps_what_was_heard():
    loop, _, _ = make("Sure.")
    said = ToolResult(
        name="multiply",
        arguments={"a": 2, "b": 3},
        ok=True,
        result="2 times 3 is 6. Anything else?",
        duration_ms=1.0,
    )
    record_fast(loop, "2 times 3", said)
    loop.conversation.amend_last("2 times 3 is 6.")
    await ask(loop, "thanks")
    assert loop.conversation.turns[0][-1] == {"role": "assistant", "content": "2 times 3 is 6."}
    record_fast(loop, "2 times 3", said)
    loop.conversation.amend_last("")
    # nothing heard: that turn is forgotten
    assert [t[0]["content"] for t in loop.conversation.turns] == ["2 times 3", "thanks"]


def cancel_timer(label: str) -> str:
    """Cancel the timer with this label."""
    cancelled.append(label)
    return f"Cancelled the {label} timer."


cancelled: list[str] = []


def timer_loop(*replies):
    cancelled.clear()
    backend = ScriptedBackend(*replies)
    r = registry()
    r.add_function(cancel_timer)
    return chat_assistant(backend, r, LlmConfig()), backend


async def test_a_timer_action_claimed_without_its_call_gets_one_more_round_to_call_it():
    # Whisper heard "Cancel the pasta timer" as "cancelled the pasta timer."; the model said
    # it was done and called nothing. Not said: the model is told and calls the tool.
    call = [("cancel_timer", {"label": "pasta"})]
    loop, backend = timer_loop("The pasta timer has been cancelled.", call, "Done, it is cancelled.")
    trace = await ask(loop, "cancelled the pasta timer.")
    assert cancelled == ["pasta"] and trace.reply == "Done, it is cancelled."
    assert "has been cancelled" not in trace.reply and trace.extra["urged"]
    second = backend.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "The pasta timer has been cancelled."}
    assert second[-1]["content"] == ACT_NOTE and backend.requests[1]["tools"]


async def test_a_timer_action_claimed_twice_without_a_call_is_said_not_done():
    loop, backend = timer_loop("I've cancelled your pasta timer.", "The pasta timer is cancelled.")
    trace = await ask(loop, "Cancel the pasta timer.")
    assert cancelled == [] and trace.reply == NOT_DONE and len(backend.requests) == 2


async def test_words_about_timers_that_claim_nothing_are_spoken_at_once():
    loop, backend = timer_loop("Your pasta timer has three minutes left.")
    trace = await ask(loop, "Cancel the pasta timer?")  # (a question about it, answered in words)
    assert trace.reply == "Your pasta timer has three minutes left." and len(backend.requests) == 1
    loop, backend = timer_loop("Your pasta timer has been set for eight minutes.")
    trace = await ask(loop, "thanks a lot")  # no timer action asked: no claim checked
    assert trace.reply == "Your pasta timer has been set for eight minutes." and len(backend.requests) == 1


def graph_registry() -> ToolRegistry:
    r = ToolRegistry()

    def search_nodes(query: str) -> str:
        """Search the knowledge graph."""
        return '{"entities": [{"name": "Alice", "observations": ["likes tennis"]}], "relations": []}'

    r.add_function(search_nodes)
    return r


async def test_a_result_no_listener_could_take_in_and_no_words_after_it_asks_once_for_the_answer():
    # The tool did its part; the model fell silent after it. The result (JSON) cannot be
    # read out: one round without tools for the answer, not "I can't do that".
    backend = ScriptedBackend([("search_nodes", {"query": "Alice"})], "", "Alice likes tennis.")
    loop = chat_assistant(backend, graph_registry(), LlmConfig())
    trace = await ask(loop, "What do you remember about Alice?")
    assert trace.reply == "Alice likes tennis." and len(backend.requests) == 3
    assert backend.requests[2]["tools"] == backend.requests[0]["tools"]  # the cached prefix stays
    assert backend.requests[2]["messages"][-1]["content"] == LIMIT_NOTE


async def test_a_result_that_is_the_answer_needs_no_further_round():
    loop, backend, _ = make([("multiply", {"a": 23, "b": 47})], "")
    trace = await ask(loop, "What is 23 times 47?")
    assert "1081" in trace.reply and len(backend.requests) == 2


async def test_a_round_for_words_keeps_the_tools_and_runs_no_call_it_writes():
    # The calls are used up; the model is asked for words with the same tools listed (the
    # server's cached prefix stays) and calls again: that call is not run.
    call = [("multiply", {"a": 2, "b": 3})]
    loop, backend, _ = make(call, [("multiply", {"a": 4, "b": 5})], max_tool_calls=1)
    trace = await ask(loop, "2 times 3")
    assert [c["arguments"] for c in trace.tool_calls] == [{"a": 2, "b": 3}]
    assert backend.requests[1]["tools"] == backend.requests[0]["tools"]
    assert backend.requests[1]["messages"][-1]["content"] == LIMIT_NOTE
    assert "6" in trace.reply  # the result that was taken is the answer


async def test_an_empty_result_is_never_said_as_brackets():
    r = ToolRegistry()

    def find_rows(table: str) -> str:
        """Find rows of a table."""
        return "[]"

    r.add_function(find_rows)
    # silent after the result: nothing found is said as such, with no round to explain it
    # (asked to explain an empty result, the model made up a price)
    backend = ScriptedBackend([("find_rows", {"table": "tea"})], "")
    trace = await ask(chat_assistant(backend, r, LlmConfig()), "How much does tea cost?")
    assert trace.reply == NOTHING_FOUND and len(backend.requests) == 2


async def test_a_failure_written_as_a_result_is_never_the_answer():
    r = ToolRegistry()

    def write_query(query: str) -> str:
        """Run an SQL statement that changes the database."""
        return "Database error: no such table: apples"  # a server's failure, as ordinary text

    r.add_function(write_query)
    # silent after the failure: "Database error: …" was said as the answer to "set the stock"
    backend = ScriptedBackend([("write_query", {"query": "UPDATE apples SET stock = 100"})], "")
    trace = await ask(chat_assistant(backend, r, LlmConfig()), "Set the stock of apples to 100.")
    assert trace.reply == FAILED and "error" not in trace.reply.lower()


async def test_a_first_clause_with_nothing_after_it_gets_a_closing_sentence():
    loop, _, _ = make("To describe the products table of the shop database,")
    trace = await ask(loop, "Describe the products table.")
    assert trace.reply == f"To describe the products table of the shop database, {CANNOT}"


async def test_a_note_of_irises_said_back_is_never_spoken():
    # A failed call, one more round for words, and the model says the note's first sentence
    # back ("The tools could not help."): that is no answer, IRIS says it cannot.
    loop, backend, _ = make([("multiply", {"a": "x", "b": 1})], "", "The tools could not help.")
    trace = await ask(loop, "Book a hotel room in Paris.")
    assert backend.requests[2]["messages"][-1]["content"] == NO_TOOL_NOTE
    assert trace.reply == CANNOT
