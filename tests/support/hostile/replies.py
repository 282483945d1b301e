"""Hostile model replies: text shapes that once cost the reply's text paths super-linear time.

Each generator returns a reply of exactly ``n`` characters. The sentence splitter met
runs of end punctuation without whitespace (``dots``, ``bangs``), sentences that never
end because the next word is lower-case (``lowercase_sentences``) and words that never
end (``one_word``). The speech filter and ``extract_calls`` met a ``{"`` that never
closes (``json_blob``, ``nested_objects``), objects with markup deep inside
(``nested_with_markup``), an unclosed ``<tool_call>`` block (``open_tool_call``), stray
opening tags (``unclosed_tags``) and an unclosed code fence (``open_fence``). The unit
tests and the ``tools.bench.text_paths`` benchmark stream them with ``chunks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

_WORDS = "the cat sat on a warm mat and then it went to sleep for a while".split()


def _fill(unit: Callable[[int], str], n: int) -> str:
    """Repeat ``unit(i)`` for i = 0, 1, … and cut the result to ``n`` characters."""
    parts: list[str] = []
    size, i = 0, 0
    while size < n:
        parts.append(unit(i))
        size += len(parts[-1])
        i += 1
    return "".join(parts)[:n]


def dots(n: int) -> str:
    """``n`` periods: one run of end punctuation with no whitespace to end it."""
    return "." * n


def bangs(n: int) -> str:
    """``!?!?…``: the same with marks that always end a sentence."""
    return _fill(lambda _i: "!?", n)


def lowercase_sentences(n: int) -> str:
    """Sentences that all start lower-case, so no period ends one ("… mat. then it …")."""
    return _fill(lambda i: " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(7)) + ". ", n)


def one_word(n: int) -> str:
    """A single word of ``n`` letters: no whitespace anywhere to cut at."""
    return _fill(lambda i: _WORDS[i % len(_WORDS)], n)


def json_blob(n: int) -> str:
    """``{"`` and JSON-looking members that never close: a call the filter must wait for."""
    return _fill(lambda i: '{"' if i == 0 else f'k{i}": [{i}, "v", {{"x": {i}}}], "', n)


def nested_objects(n: int) -> str:
    """``{"a": {"a": …``: every level an object that may still become a call."""
    return _fill(lambda _i: '{"a": ', n)


def nested_with_markup(n: int) -> str:
    """``{"a": {"a": … "```" … }}``: objects that close, with markup at the bottom, so that
    the scanner has to look inside every level of them."""
    depth = max(0, (n - 5) // 7)
    return ('{"a": ' * depth + '"```"' + "}" * depth + " " * n)[:n]


def open_tool_call(n: int) -> str:
    """A ``<tool_call>`` block that never closes, full of JSON-looking text."""
    return _fill(lambda i: "<tool_call>" if i == 0 else f'{{"name": "k{i}", "arguments": [', n)


def unclosed_tags(n: int) -> str:
    """Many ``<tool_call`` tags that never get their ``>``, between words."""
    return _fill(lambda i: f"<tool_call {_WORDS[i % len(_WORDS)]} ", n)


def open_fence(n: int) -> str:
    """A json code fence that never closes, holding JSON-looking lines."""
    return _fill(lambda i: "```json\n" if i == 0 else f'{{"k{i}": [{i}, "v"]}},\n', n)


SPLITTER_INPUTS: dict[str, Callable[[int], str]] = {
    "dots": dots,
    "bangs": bangs,
    "lowercase_sentences": lowercase_sentences,
    "one_word": one_word,
}
"""The shapes aimed at the sentence splitter, by name."""

FILTER_INPUTS: dict[str, Callable[[int], str]] = {
    "json_blob": json_blob,
    "nested_objects": nested_objects,
    "nested_with_markup": nested_with_markup,
    "open_tool_call": open_tool_call,
    "unclosed_tags": unclosed_tags,
    "open_fence": open_fence,
}
"""The shapes aimed at the tool-call filter, by name."""


def chunks(text: str, size: int = 3) -> Iterator[str]:
    """``text`` in deltas of ``size`` characters, as a model streams it."""
    for i in range(0, len(text), size):
        yield text[i : i + size]


def model_replies(size: int = 8000) -> dict[str, str]:
    """The broken model's replies of the abuse benchmark, by name (each ``size`` characters)."""
    return {
        f"model: {size:,} dots": dots(size),
        f"model: {size:,} of !?": bangs(size),
        f"model: {size:,} lowercase sentences": lowercase_sentences(size),
        f"model: one {size:,}-letter word": one_word(size),
        f'model: {{" + {size:,} characters': json_blob(size),
        f"model: {size:,} of nested objects": nested_objects(size),
        f"model: {size:,} of unclosed <tool_call": unclosed_tags(size),
        f"model: an open fence of {size:,}": open_fence(size),
    }
