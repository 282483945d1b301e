"""Tests for recovering tool calls written as text, and for the streaming speech filter."""

from __future__ import annotations

import json
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import iris_voice.llm
from iris_voice.llm.textcalls import HOLD_LIMIT, SpeakableFilter, TextCall, extract_calls, strip_markup
from tests.support.hostile import replies as hostile
from tests.support.regex_reads import count_reads

KNOWN = {"calculator", "get_current_time", "set_timer"}
CALC = '{"name": "calculator", "arguments": {"expression": "23*47"}}'


def calls_of(text: str) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in extract_calls(text, KNOWN)[0]]


def stream(
    text: str, sizes: list[int] | None = None, known=KNOWN, limit: int = HOLD_LIMIT
) -> tuple[str, SpeakableFilter]:
    """Feed ``text`` in chunks of the given sizes (one char each by default)."""
    filt = SpeakableFilter(known, hold_limit=limit)
    out, pos = [], 0
    for size in sizes or [1] * len(text):
        out.append(filt.feed(text[pos : pos + size]))
        pos += size
    out.append(filt.feed(text[pos:]))
    out.append(filt.flush())
    return "".join(out), filt


# --- the shapes a small model writes ---------------------------------------------------


def test_tool_call_tags():
    calls, rest = extract_calls(f"Sure, let me work that out. <tool_call>{CALC}</tool_call>", KNOWN)
    assert calls == [TextCall("calculator", {"expression": "23*47"}, (28, 28 + 11 + len(CALC) + 12))]
    assert rest == "Sure, let me work that out."


def test_tool_call_tags_with_json_on_following_lines():
    text = '<tool_call>\n{"name": "set_timer",\n "arguments": {"duration": 300}}\n</tool_call>\nTimer set.'
    calls, rest = extract_calls(text, KNOWN)
    assert [(c.name, c.arguments) for c in calls] == [("set_timer", {"duration": 300})]
    assert rest == "Timer set."


def test_unterminated_tool_call_at_end_still_counts():
    calls, rest = extract_calls(f"One moment.\n<tool_call>\n{CALC}\n", KNOWN)
    assert [c.name for c in calls] == ["calculator"]
    assert rest == "One moment."


@pytest.mark.parametrize("lang", ["json", "", "tool_call", "JSON"])
def test_fenced_call(lang):
    text = f"Let me check.\n```{lang}\n{CALC}\n```\nDone."
    calls, rest = extract_calls(text, KNOWN)
    assert [(c.name, c.arguments) for c in calls] == [("calculator", {"expression": "23*47"})]
    assert rest == "Let me check.\n\nDone."


def test_fenced_list_of_calls():
    body = json.dumps([{"name": "get_current_time", "arguments": {}}, json.loads(CALC)])
    assert calls_of(f"```json\n{body}\n```") == [
        ("get_current_time", {}),
        ("calculator", {"expression": "23*47"}),
    ]


def test_bare_object_in_prose():
    calls, rest = extract_calls(f"I will call {CALC} now.", KNOWN)
    assert [c.name for c in calls] == ["calculator"]
    assert rest == "I will call now."
    assert calls[0].span == (12, 12 + len(CALC))


def test_openai_wrapper_with_string_arguments_and_prefix():
    obj = {
        "type": "function",
        "function": {"name": "functions.set_timer", "arguments": json.dumps({"duration": 60})},
    }
    assert calls_of(json.dumps(obj)) == [("set_timer", {"duration": 60})]


def test_a_name_under_a_made_up_path_is_the_one_known_tool_of_its_last_part():
    # copied from the shape of the MCP tools shown: data/sqlite/read_query
    text = '{"name": "data/functions/set_timer", "arguments": {"duration": "3 minutes"}}'
    assert calls_of(text) == [("set_timer", {"duration": "3 minutes"})]
    hidden = KNOWN | {"data/sqlite/read_query"}
    calls, _ = extract_calls('{"name": "sqlite.read_query", "arguments": {"query": "SELECT 1"}}', hidden)
    assert [(c.name, c.arguments) for c in calls] == [("data/sqlite/read_query", {"query": "SELECT 1"})]
    # no known tool of that name, or two: not a call
    assert calls_of('{"name": "home/open_garage_door", "arguments": {}}') == []
    two = KNOWN | {"time/now", "other/now"}
    assert extract_calls('{"name": "x/now", "arguments": {}}', two)[0] == []


def test_parameters_key_and_missing_arguments():
    text = '{"name": "set_timer", "parameters": {"duration": 5}} '
    text += '<tool_call>{"name": "get_current_time"}</tool_call>'
    assert calls_of(text) == [("set_timer", {"duration": 5}), ("get_current_time", {})]


def test_multiple_calls_in_one_text_keep_order():
    text = (
        "First <tool_call>" + CALC + "</tool_call> then "
        '```json\n{"name": "get_current_time", "arguments": {"timezone": "UTC"}}\n``` and '
        '{"name": "set_timer", "arguments": {"duration": 9}} done'
    )
    calls, rest = extract_calls(text, KNOWN)
    assert [c.name for c in calls] == ["calculator", "get_current_time", "set_timer"]
    assert [c.span[0] for c in calls] == sorted(c.span[0] for c in calls)
    assert rest == "First then and done"


# --- what must not count -----------------------------------------------------------------


def test_unknown_names_are_left_alone():
    text = 'Try {"name": "launch_rocket", "arguments": {}} maybe.'
    assert extract_calls(text, KNOWN) == ([], text)


def test_unknown_name_inside_tags_is_not_spoken():
    calls, rest = extract_calls('Ok. <tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>', KNOWN)
    assert calls == [] and rest == "Ok."


def test_data_object_is_not_a_call():
    text = 'The record is {"name": "Bob", "age": 3}.'
    assert extract_calls(text, KNOWN | {"Bob"}) == ([], text)
    assert extract_calls(text, KNOWN) == ([], text)


def test_prose_mentioning_name():
    text = 'My "name" is IRIS and I take {"arguments"} seriously.'
    assert extract_calls(text, KNOWN) == ([], text)


def test_braces_inside_strings_and_nested_arguments():
    args = {"expression": '{}}{ "quoted" }', "meta": {"deep": [{"x": "}"}], "n": 1}}
    text = 'x {"name": "calc}"} ' + json.dumps({"name": "calculator", "arguments": args}) + " y"
    calls, rest = extract_calls(text, KNOWN)
    assert [(c.name, c.arguments) for c in calls] == [("calculator", args)]
    assert rest == 'x {"name": "calc}"} y'


def test_truncated_json_is_kept_as_text():
    text = 'Here: {"name": "calculator", "arguments": {"expression": "1+'
    assert extract_calls(text, KNOWN) == ([], text)


def test_malformed_json_in_tags_is_removed_without_a_call():
    calls, rest = extract_calls("Hello <tool_call>{name: calculator, oops}</tool_call> world", KNOWN)
    assert calls == [] and rest == "Hello world"


def test_undecodable_string_arguments_are_not_a_call():
    assert calls_of('{"name": "calculator", "arguments": "{not json"}') == []


def test_other_code_fences_stay():
    text = 'Example:\n```python\nprint({"name": "calculator", "arguments": {}})\n```\nThat is all.'
    assert extract_calls(text, KNOWN) == ([], text)
    # Newlines on both sides of a removed marker make a paragraph break: a pause in speech.
    assert strip_markup(text) == 'Example:\n\nprint({"name": "calculator", "arguments": {}})\n\nThat is all.'


def test_unicode():
    call = '{"name": "set_timer", "arguments": {"label": "thé 🍵", "duration": 3}}'
    text = f"Voilà ☕ <tool_call>{call}</tool_call> ✓"
    calls, rest = extract_calls(text, KNOWN)
    assert calls[0].arguments == {"label": "thé 🍵", "duration": 3}
    assert rest == "Voilà ☕ ✓"


def test_strip_markup():
    assert strip_markup("a </tool_call> b <tool_call> c") == "a b c"
    assert strip_markup("```bash\nls\n```\nok") == "ls\n\nok"
    assert strip_markup("plain text, `inline` code") == "plain text, `inline` code"


@pytest.mark.parametrize(
    "text",
    [
        ("The quick brown fox jumps. " * 40 + CALC + " ") * 100,
        '{"name": "a", "b": ' * 5000 + "1" + "}" * 5000,
        '{"{"' * 25000,
        "<" * 100_000,
        "[{" * 50_000,
        '{"name": "x ' * 8000,
        "<tool_call>" * 9000,
    ],
    ids=["prose", "deep", "alternating", "angles", "brackets", "unterminated", "tags"],
)
def test_huge_input_is_fast(text):
    assert len(text) >= 95_000
    start = time.perf_counter()
    calls, _ = extract_calls(text, KNOWN)
    # A scan that goes back over the text (quadratic) takes minutes on 100k characters; the
    # bound is generous so that a loaded machine never fails it (a few ms when quiet).
    assert time.perf_counter() - start < 10
    assert len(calls) == (100 if text.startswith("The quick") else 0)


# --- properties ----------------------------------------------------------------------------


@given(st.text())
def test_random_text_never_raises(text):
    calls, rest = extract_calls(text, KNOWN)
    assert isinstance(rest, str) and all(c.name in KNOWN for c in calls)
    strip_markup(text)
    stream(text)


@given(st.text(alphabet=st.characters(blacklist_characters="{<`")))
def test_text_without_markup_is_unchanged(text):
    assert extract_calls(text, KNOWN) == ([], text)
    assert stream(text)[0] == text


PIECES = [
    "Hello there. ",
    "It is 5 o'clock.\n",
    "\n\n",
    "  ",
    "3 < 4 and x > 2. ",
    "Use `ls` here. ",
    "[1, 2] ",
    "{curly} ",
    "The name is Bob. ",
    "Ünïcødé ☕ ",
    "<tool_call>" + CALC + "</tool_call>",
    "<tool_call>\n" + CALC + "\n</tool_call>\n",
    "```json\n" + CALC + "\n```",
    "```\n" + CALC + "\n```\n",
    CALC,
    '{"function": {"name": "set_timer", "arguments": "{\\"duration\\": 4}"}}',
    '[{"name": "get_current_time", "arguments": {}}]',
    '{"name": "unknown_tool", "arguments": {"a": 1}}',
    '{"name": "Bob", "age": 3}',
    "<tool_call>{broken</tool_call>",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8), st.randoms(use_true_random=False))
def test_streaming_matches_extract(pieces, rnd):
    text = "".join(pieces)
    calls, rest = extract_calls(text, KNOWN)
    sizes = [rnd.randint(1, 12) for _ in range(len(text))]
    spoken, filt = stream(text, sizes)
    assert spoken == rest
    assert filt.calls == calls
    assert "<tool_call" not in spoken and "```" not in spoken


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet='{}[]":, \n<>/`\\abnmetol_cjsfu', max_size=120),
    st.randoms(use_true_random=False),
)
def test_streaming_matches_extract_on_adversarial_text(text, rnd):
    known = KNOWN | {"a", "name"}
    calls, rest = extract_calls(text, known)
    spoken, filt = stream(text, [rnd.randint(1, 5) for _ in range(len(text))], known)
    assert spoken == strip_markup(rest)
    assert filt.calls == calls
    assert "<tool_call" not in spoken.lower() and "```" not in spoken


# --- the streaming filter ------------------------------------------------------------------


def test_filter_speaks_prose_before_the_call_is_complete():
    filt = SpeakableFilter(KNOWN)
    assert filt.feed("The answer is coming. ") == "The answer is coming."
    assert filt.feed('<tool_call>{"name": "calcu') == ""
    assert filt.feed('lator", "arguments": {"expression": "1+1"}}</tool_call>') == ""
    assert filt.feed(" Done.") == " Done."
    assert filt.flush() == ""
    assert [c.name for c in filt.calls] == ["calculator"]


def test_filter_releases_braces_that_are_not_calls():
    filt = SpeakableFilter(KNOWN)
    assert filt.feed("Sets are written {") == "Sets are written"
    assert filt.feed('"a": 1} like this.') == ' {"a": 1} like this.'


def test_filter_holds_a_partial_tag_and_fence():
    filt = SpeakableFilter(KNOWN)
    assert filt.feed("Hi <tool") == "Hi"
    assert filt.feed("box> and ``") == " <toolbox> and"
    assert filt.feed("` ok") == ""
    assert filt.flush() == " ok"


def test_filter_chunkings_of_a_real_reply():
    reply = "Let me check.\n```json\n" + CALC + "\n```\nIt is done."
    expected = extract_calls(reply, KNOWN)[1]
    for seed in range(30):
        rnd = random.Random(seed)
        assert stream(reply, [rnd.randint(1, 7) for _ in reply])[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        '```"a"``````',  # a closing fence followed by the start of another
        "Hi <tool_call x>" + CALC + "</tool_call >  there",
        "a <tool_callz b </tool_call",
        "[" + CALC + '] and {"name": 1} ``',
        '```json\n{"name": "unknown"}\n```\n' + CALC,
    ],
)
def test_filter_agrees_at_every_split_point(text):
    calls, rest = extract_calls(text, KNOWN)
    for cut in range(len(text) + 1):
        spoken, filt = stream(text, [cut, len(text)])
        assert spoken == strip_markup(rest), cut
        assert filt.calls == calls
    assert stream(text)[0] == strip_markup(rest)


# --- the hold limit: what the filter holds back, and what that costs ----------------------


def test_a_blob_that_never_closes_is_spoken_once_past_the_hold_limit():
    text = hostile.json_blob(3 * HOLD_LIMIT)
    filt = SpeakableFilter(KNOWN)
    spoken, fed = "", 0
    for delta in hostile.chunks(text):
        spoken += filt.feed(delta)
        fed += len(delta)
        assert fed - len(spoken) <= HOLD_LIMIT + 3  # never more held back than the limit
    assert spoken + filt.flush() == strip_markup(extract_calls(text, KNOWN)[1]) == text


@pytest.mark.parametrize("name", sorted(hostile.FILTER_INPUTS))
def test_hostile_replies_say_what_the_whole_reply_says(name):
    text = hostile.FILTER_INPUTS[name](3 * HOLD_LIMIT)
    assert stream(text, [3] * len(text))[0] == strip_markup(extract_calls(text, KNOWN)[1])


def test_a_call_longer_than_the_hold_limit_is_spoken_not_held():
    # The documented difference: the whole reply still holds a call, the stream had
    # long released it as text.
    call = json.dumps({"name": "calculator", "arguments": {"expression": "1+" * HOLD_LIMIT + "1"}})
    text = f"Sure. {call} Done."
    calls, rest = extract_calls(text, KNOWN)
    assert [c.name for c in calls] == ["calculator"] and rest == "Sure. Done."
    spoken, filt = stream(text, [3] * len(text))
    assert spoken == text and filt.calls == []


def test_a_tag_block_longer_than_the_hold_limit_is_dropped_without_its_calls():
    text = "Ok. <tool_call>" + CALC + " " * HOLD_LIMIT + "</tool_call> Done."
    calls, rest = extract_calls(text, KNOWN)
    assert [c.name for c in calls] == ["calculator"] and rest == "Ok. Done."
    spoken, filt = stream(text, [3] * len(text))
    assert spoken == "Ok. Done." and filt.calls == []


def test_a_fence_longer_than_the_hold_limit_is_spoken_as_it_comes():
    code = "x = 1\n" * HOLD_LIMIT
    text = "Here:\n```python\n" + code + "```\nDone. " + CALC + " Bye."
    filt = SpeakableFilter(KNOWN)
    out = [filt.feed(delta) for delta in hostile.chunks(text)]
    assert "x = 1" in "".join(out[: 2 * HOLD_LIMIT // 3])  # its code spoken before it closed
    spoken = "".join(out) + filt.flush()
    assert spoken == strip_markup(extract_calls(text, KNOWN)[1])
    assert [c.name for c in filt.calls] == ["calculator"]


LIMIT_PIECES = [*PIECES, "{", "}", "]", '"a": ', "```", "<tool_call>", " " * 7]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(LIMIT_PIECES), max_size=12),
    st.randoms(use_true_random=False),
    st.sampled_from([6, 20, 60]),
)
def test_past_the_hold_limit_any_chunking_says_the_same(pieces, rnd, limit):
    text = "".join(pieces)
    whole, whole_filt = stream(text, [len(text)], limit=limit)
    spoken, filt = stream(text, [rnd.randint(1, 9) for _ in text], limit=limit)
    assert spoken == whole
    assert filt.calls == whole_filt.calls
    assert "<tool_call" not in spoken.lower() and "```" not in spoken


def test_a_fence_cut_at_the_limit_inside_the_second_of_two_tags_ends_before_that_tag():
    # Found by the property test above: the limit (60) fell inside the second "<tool_call>"
    # of two in a row, and the fence ended there, leaving "ool_call>{broken" to be spoken.
    pieces = ["```", "It is 5 o'clock.\n", "\n\n", "Ünïcødé ☕ ", '"a": ', '"a": ', '"a": ', "<tool_call>"]
    text = "".join([*pieces, "<tool_call>{broken</tool_call>"])
    for sizes in ([len(text)], None, [7] * len(text)):
        spoken, _ = stream(text, sizes, limit=60)
        assert "tool_call" not in spoken and "broken" not in spoken, spoken
        assert "5 o'clock" in spoken


@pytest.mark.parametrize("name", sorted(hostile.SPLITTER_INPUTS | hostile.FILTER_INPUTS))
def test_a_stream_costs_linear_time(name, monkeypatch):
    reads = count_reads(monkeypatch, iris_voice.llm)
    bound = 15  # characters read per character of the reply, at most
    make = {**hostile.SPLITTER_INPUTS, **hostile.FILTER_INPUTS}[name]

    def cost(n: int) -> int:
        before, text, filt = reads.chars, make(n), SpeakableFilter(KNOWN)
        for delta in hostile.chunks(text):
            filt.feed(delta)
            if reads.chars - before > bound * n:
                return reads.chars - before  # a quadratic filter fails now, not in minutes
        filt.flush()
        strip_markup(extract_calls(text, KNOWN)[1])
        return reads.chars - before

    small, large = cost(1000), cost(16000)
    assert large <= bound * 16000 and large <= 20 * small  # 16 times the text, not 256 times the work


@pytest.mark.parametrize(
    "text",
    [
        '{"a": ' * 4000 + '"```"' + "}" * 4000,
        '{"name": ' * 4000 + '"<tool_call>"' + "}" * 4000,
        '{"name" ' * 4000 + "}" * 4000,
        '{"name": "calculator", "x": "```", "y": ' * 2000 + "1" + "}" * 2000,
    ],
    ids=["markup", "name-markup", "invalid", "call-like"],
)
def test_nested_objects_with_markup_cost_linear_time(text, monkeypatch):
    # Markup inside a data object makes the scanner look inside it: every level once.
    reads = count_reads(monkeypatch, iris_voice.llm)
    extract_calls(text, KNOWN)
    assert reads.chars <= 10 * len(text)
