"""Reasoning written into the reply: ``<think>…</think>`` moved out of what is spoken.

Thinking models (Qwen3, DeepSeek-R1) reason before they answer. IRIS asks for no thinking
(``think: false``), and a current Ollama returns any reasoning in the message's
``thinking`` field; but some versions and templates still write it into ``content`` inside
``<think>`` tags, and a voice assistant must never read its reasoning aloud. The Ollama
adapter passes each content delta through a ``ThinkSplitter``.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


class ThinkSplitter:
    """Splits a streamed reply into its content and its ``<think>`` reasoning.

    A tag may arrive cut between deltas: text that could be the start of one is held until
    the next delta decides. One splitter per reply.
    """

    def __init__(self) -> None:
        self._held = ""
        self._inside = False
        self._after = False  # just past </think>: the blank lines there are not the answer's

    def feed(self, delta: str) -> tuple[str, str]:
        """``delta``'s (content, thinking); a possible partial tag at its end is held back."""
        text, self._held = self._held + delta, ""
        if self._after and not self._inside:
            text = text.lstrip("\n")
            self._after = not text
        content: list[str] = []
        thinking: list[str] = []
        while text:
            tag = CLOSE if self._inside else OPEN
            out = thinking if self._inside else content
            at = text.find(tag)
            if at >= 0:
                out.append(text[:at])
                text = text[at + len(tag) :]
                self._inside = not self._inside
                if not self._inside:
                    text = text.lstrip("\n")
                    self._after = not text
                continue
            keep = _partial_tag(text, tag)
            out.append(text[: len(text) - keep])
            self._held = text[len(text) - keep :]
            break
        return "".join(content), "".join(thinking)

    def flush(self) -> tuple[str, str]:
        """What is still held at the reply's end (an unfinished tag is plain text)."""
        held, self._held = self._held, ""
        return ("", held) if self._inside else (held, "")


def _partial_tag(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could begin ``tag``."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0
