"""Hostile inputs, in one place: what an adversarial pass threw at IRIS.

Plain generators, shared by the standing adversarial tests (``tests/``) and the abuse
benchmark (``python -m tools.bench.abuse``). Each returns the input itself, built on
demand, so a test can scale it (1k vs 16k) to check that its cost grows linearly.
"""

from __future__ import annotations


def dots(n: int = 2000) -> str:
    """A reply of nothing but full stops (no whitespace: no sentence boundary ever)."""
    return "." * n


def exclaim_runs(n: int = 2000) -> str:
    """``!?`` repeated without spaces."""
    return "!?" * (n // 2)


def lowercase_sentences(n: int = 8000) -> str:
    """Sentences that never start with a capital: a splitter that waits for one never cuts."""
    sentence = "this is a sentence that goes on. "
    return (sentence * (n // len(sentence) + 1))[:n]


def brace_blob(n: int = 10_000) -> str:
    """A reply opening with ``{"`` that never closes: it may be a tool call, so it is held."""
    return '{"' + "a" * (n - 2)


def unclosed_tags(n: int = 10_000) -> str:
    """Many ``<tool_call`` openings and nothing that closes them."""
    return ("<tool_call " * (n // 11 + 1))[:n]


def model_replies(scale: int = 1) -> dict[str, str]:
    """The broken model's replies of the abuse benchmark, by name."""
    return {
        "model: 2,000 dots": dots(2000 * scale),
        "model: !? runs": exclaim_runs(2000 * scale),
        "model: 8k lowercase sentences": lowercase_sentences(8000 * scale),
        'model: {" + 10k characters': brace_blob(10_000 * scale),
        "model: unclosed <tool_call tags": unclosed_tags(10_000 * scale),
    }


def deep_json(depth: int) -> bytes:
    """A JSON array nested ``depth`` deep (valid JSON; Python's parser recurses on it)."""
    return b"[" * depth + b"]" * depth


def invalid_utf8_toml() -> bytes:
    """A config file that is not UTF-8."""
    return b'[llm]\nmodel = "qwen\xff\xfe"\n'


def deep_toml(depth: int) -> bytes:
    """A config file with an inline array nested ``depth`` deep."""
    return b"[tools]\ndisabled = " + b"[" * depth + b"]" * depth + b"\n"
