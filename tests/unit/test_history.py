"""The conversation's bounds: trimmed rarely and in one step, so that between trims every
turn only appends to what the model server has cached."""

from __future__ import annotations

import random

from iris_voice.conversation.history import Bounds, Conversation, Message, estimated_tokens


def exchange(i: int, words: int = 6) -> list[Message]:
    """A question and its answer of about ``words`` words each."""
    return [
        {"role": "user", "content": f"question {i} " + "word " * words},
        {"role": "assistant", "content": f"answer {i} " + "word " * words},
    ]


def fast_turn(i: int) -> tuple[list[Message], str]:
    """A turn the fast path answered: the call, its result, and the result's sentence open."""
    call = {"function": {"name": "get_current_time", "arguments": {"timezone": "UTC"}}}
    return [
        {"role": "user", "content": f"what time is it {i}"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": f"It is {i} o'clock.", "tool_name": "get_current_time"},
    ], f"It is {i} o'clock."


def total(conversation: Conversation) -> float:
    return sum(estimated_tokens(t) for t in conversation.turns)


def is_prefix(a: list[Message], b: list[Message]) -> bool:
    return b[: len(a)] == a


def test_the_turn_bound_trims_in_one_step_down_to_the_low_water_mark():
    c = Conversation(Bounds(turns=6, tokens=10**6, keep=1 / 3))
    lengths = []
    for i in range(14):
        c.add(exchange(i))
        lengths.append(len(c))
    # six turns grow, the seventh drops five at once (two left), then they grow again
    assert lengths == [1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 2, 3, 4]
    assert c.trims == 2
    assert [t[0]["content"].split()[1] for t in c.turns] == ["10", "11", "12", "13"]


def test_keep_one_is_the_old_policy_one_turn_dropped_per_question():
    c = Conversation(Bounds(turns=6, tokens=10**6, keep=1.0))
    before = None
    for i in range(10):
        c.add(exchange(i))
        if i >= 6:
            assert len(c) == 6 and c.turns[0][0]["content"].startswith(f"question {i - 5} ")
            assert not is_prefix(before, c.messages())  # the start moved: the cache breaks
        before = c.messages()
    assert c.trims == 4


def test_between_trims_each_turns_messages_extend_the_last_ones():
    rng = random.Random(7)
    c = Conversation(Bounds(turns=12, tokens=1500, keep=1 / 3))
    before: list[Message] = []
    moved = 0
    for i in range(40):
        if rng.random() < 0.3:
            turn, reply = fast_turn(i)
            c.add(turn, open_reply=reply)
        else:
            turn = exchange(i, words=rng.choice([2, 10, 40, 120]))
            c.add(turn)
        now = c.messages()
        if not is_prefix(before, now):
            moved += 1
        before = now
        assert c.turns[-1] is turn  # the newest turn always stays
        assert len(c) <= 12 and (len(c) == 1 or total(c) <= 1500)
    # every break of the prefix is a trim, and trims are few: most turns only append
    assert moved == c.trims
    assert 1 <= c.trims <= 40 // 4


def test_a_trim_for_the_token_budget_leaves_at_most_a_third_of_it():
    c = Conversation(Bounds(turns=100, tokens=1000, keep=1 / 3))
    trimmed_to = []
    for i in range(30):
        trims = c.trims
        c.add(exchange(i, words=20))  # ~70 estimated tokens a turn
        assert total(c) <= 1000
        if c.trims > trims:
            trimmed_to.append(total(c))
    assert trimmed_to and all(t <= 1000 / 3 for t in trimmed_to)
    assert len(c) < 30


def test_a_single_turn_over_the_budget_is_still_kept():
    c = Conversation(Bounds(turns=6, tokens=100, keep=1 / 3))
    c.add(exchange(0))
    huge = exchange(1, words=500)
    c.add(huge)
    assert c.turns == [huge]
    c.add(exchange(2))  # the huge turn goes, the small one stays alone
    assert len(c) == 1 and c.turns[0][0]["content"].startswith("question 2 ")


def test_no_turns_keeps_nothing_and_a_bound_of_one_keeps_the_last():
    none = Conversation(Bounds(turns=0))
    none.add(exchange(0))
    assert none.messages() == []
    one = Conversation(Bounds(turns=1, keep=1 / 3))
    for i in range(3):
        one.add(exchange(i))
    assert one.turns == [exchange(2)]


def test_an_open_reply_is_closed_by_the_next_turn_even_across_a_trim():
    c = Conversation(Bounds(turns=3, tokens=10**6, keep=1 / 3))
    c.add(exchange(0))
    c.add(exchange(1))
    turn, reply = fast_turn(2)
    c.add(turn, open_reply=reply)
    assert c.messages()[-1]["role"] == "tool"  # open while it is the last turn
    c.add(exchange(3))  # past the bound: one turn kept, the newest
    assert c.turns == [exchange(3)]
    again, reply = fast_turn(4)
    c.add(again, open_reply=reply)
    c.add(exchange(5))
    assert [m["role"] for m in c.turns[-2]] == ["user", "assistant", "tool", "assistant"]
    assert c.turns[-2][-1] == {"role": "assistant", "content": reply}


def test_amend_last_and_reset_after_trims():
    c = Conversation(Bounds(turns=4, tokens=10**6, keep=1 / 2))
    for i in range(5):
        c.add(exchange(i))
    assert len(c) == 2
    version = c.version
    c.amend_last("answer 4, cut")
    assert c.turns[-1][-1] == {"role": "assistant", "content": "answer 4, cut"} and c.version > version
    c.amend_last("")  # nothing heard: the turn is forgotten
    assert len(c) == 1 and c.turns[0][0]["content"].startswith("question 3 ")
    c.reset()
    assert c.messages() == [] and c.version > version


def test_the_idle_reset_still_starts_afresh():
    now = [0.0]
    c = Conversation(Bounds(idle_reset_s=60), clock=lambda: now[0])
    c.add(exchange(0))
    now[0] = 30.0
    c.begin_turn()
    assert len(c) == 1
    now[0] = 100.0
    c.begin_turn()
    assert len(c) == 0


async def test_after_a_trim_the_idle_warm_up_sends_exactly_the_next_turns_prefix():
    from iris_voice.config import LlmConfig
    from iris_voice.conversation.responder import ask
    from tests.support.fakes import ScriptedBackend, builtin_registry, chat_assistant

    backend = ScriptedBackend(*[f"Answer {i}." for i in range(8)])
    assistant = chat_assistant(backend, builtin_registry(), LlmConfig(history_turns=3))
    for i in range(8):
        await ask(assistant, f"Question {i}?")
        assistant.idle()
        await assistant.warmer.settle()
        if i < 7:
            warm = backend.warmups[-1]
            assert warm["messages"][1:-1] == assistant.conversation.messages()
    assert assistant.conversation.trims == 2  # at questions 3 and 6: [3], then [6]
    # each turn's request is the last warm-up's, up to the question: same system prompt,
    # tools and history, so only the question is left to evaluate
    for warm, turn in zip(backend.warmups[:-1], backend.requests[1:], strict=True):
        assert warm["messages"][:-1] == turn["messages"][:-1]
        assert warm["tools"] == turn["tools"] and warm["tools"]
