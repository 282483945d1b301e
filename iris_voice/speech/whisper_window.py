"""Whisper on a right-sized window: encode a few seconds, not thirty.

Whisper's encoder always sees a 30 s window in faster-whisper (``pad_or_trim`` to 3,000
feature frames), so a 2 s question pays for 30 s of encoder. CTranslate2 accepts fewer
frames: here the features of the audio are zero-padded (as faster-whisper pads them)
to ``pad_s`` past its end, encoded, and decoded greedily with the same prompt tokens,
suppressed tokens and text assembly as ``WhisperModel.transcribe``.

A window Whisper was never trained on can make the decoder loop ("What time is it?
What time is it? …"). So every short decode is checked, and the full 30 s window
(``transcribe``, the caller's ``full``) decides instead when it looks wrong:

- ``repeat``: a phrase repeats back to back (``repetition``), the loop's signature;
- ``overlong``: more tokens than ``TOKENS_PER_S`` allows for the audio's length;
- ``empty``: no text (silence or not, the full window's own no-speech rule decides);
- ``unsure``: what makes faster-whisper itself retry at a higher temperature (mean
  log-probability below -1, or text that compresses like a loop), so the full path's
  own fallback stays in charge of those.

A false alarm only costs one full decode; a missed loop would reach the user, so the
detector errs on the side of alarms. If the full window repeats too, its text is
trimmed to the first occurrence (``trim_repetition``).
"""

from __future__ import annotations

import logging
import math
import re
import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

TOKENS_PER_S = 8.0
"""Most tokens a second of speech yields (fast speech with numbers is ~5): more is a loop."""
TOKENS_SLACK = 6
"""Tokens allowed on top of ``TOKENS_PER_S`` (punctuation, a short clip's one long word)."""
LOG_PROB_THRESHOLD = -1.0
"""faster-whisper's ``log_prob_threshold``: below it, ``transcribe`` retries hotter."""
COMPRESSION_RATIO_THRESHOLD = 2.4
"""faster-whisper's ``compression_ratio_threshold``: above it, text is "too repetitive"."""
FRAMES_PER_S = 100
"""Feature frames per second (hop of 160 samples at 16 kHz)."""
FULL_FRAMES = 3000
"""The 30 s window the model was trained on."""

_WORD = re.compile(r"[a-z0-9']+")


def _words(text: str) -> list[tuple[str, int]]:
    """Normalised words of ``text`` (lower case, no punctuation) and where each one ends."""
    return [(m.group(), m.end()) for m in _WORD.finditer(text.lower())]


def _loop(words: list[str]) -> tuple[int, int] | None:
    """The first back-to-back repetition in ``words``: (start, period), else None.

    Any phrase said twice in a row counts, even one word ("Alexa? Alexa?"): a command
    rarely repeats itself, and a false alarm costs only a full-window decode. The last
    copy may be cut short when it is three or more words (a decode stopped by its length
    limit): one whole copy and all but one word of the next ("one by one" is no loop).
    """
    n = len(words)
    best: tuple[int, int] | None = None
    for period in range(1, n // 2 + 1):
        need = period if period < 3 else period - 1  # matching words after the first copy
        run = 0
        for i in range(period, n):
            run = run + 1 if words[i] == words[i - period] else 0
            if run >= need:
                start = i - run - period + 1
                if best is None or start < best[0]:
                    best = (start, period)
                break
    return best


def repetition(text: str) -> bool:
    """True when ``text`` repeats a phrase back to back, as a looping decoder does."""
    return _loop([w for w, _ in _words(text)]) is not None


def trim_repetition(text: str) -> str:
    """``text`` up to the end of the first copy of a repeated phrase (unchanged without one)."""
    found = _words(text)
    loop = _loop([w for w, _ in found])
    if loop is None:
        return text
    start, period = loop
    end = found[start + period - 1][1]
    # Keep the punctuation that closed the first copy ("What time is it?").
    while end < len(text) and text[end] in ".?!,":
        end += 1
    return text[:end].strip()


def compression_ratio(text: str) -> float:
    """Bytes of ``text`` over bytes compressed, as faster-whisper measures loops."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def token_budget(samples: int, rate: int = 16000) -> int:
    """Most tokens a decode of ``samples`` of audio may produce before it counts as a loop."""
    return math.ceil(samples / rate * TOKENS_PER_S) + TOKENS_SLACK


class ShortWindow:
    """Decodes on a window ``pad_s`` longer than the audio, with the full window as fallback.

    ``model`` is a loaded ``faster_whisper.WhisperModel``; one instance per model, called
    with the model's lock held. ``counts`` tallies short decodes and each fallback reason.
    """

    def __init__(self, model: Any, pad_s: float = 6.0, beam_size: int = 1, language: str = "en") -> None:
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        self.model = model
        self.pad_frames = round(pad_s * FRAMES_PER_S)
        self.beam_size = beam_size
        multilingual = model.model.is_multilingual
        self.tokenizer = Tokenizer(
            model.hf_tokenizer, multilingual, task="transcribe", language=language or "en"
        )
        # Without a language a multilingual model detects it on the full window first.
        self.usable = bool(language) or not multilingual
        # transcribe()'s default suppress_tokens=[-1]: non-speech symbols and special tokens.
        self.suppress = list(get_suppressed_tokens(self.tokenizer, [-1]))
        self.counts: Counter[str] = Counter()
        """"short" (decodes kept), "fallback" (total) and one key per fallback reason."""
        self.last: str | None = None
        """Why the latest decode fell back to the full window (None: the short one was kept)."""

    def fits(self, samples: int) -> bool:
        """Whether audio of ``samples`` fits a short window at all (else: the full window)."""
        return self.usable and samples // 160 + self.pad_frames < FULL_FRAMES

    def prompt_tokens(self, prompt: str, lead: str = "") -> list[int]:
        """The decoder prompt, built as faster-whisper's ``get_prompt`` builds it (``lead``:
        its ``prefix``, the words the audio starts with)."""
        tokens: list[int] = []
        if prompt.strip():
            previous = self.tokenizer.encode(" " + prompt.strip())
            tokens = [self.tokenizer.sot_prev, *previous[-(self.model.max_length // 2 - 1) :]]
        forced = self.tokenizer.encode(" " + lead.strip()) if lead.strip() else []
        return [*tokens, *self.tokenizer.sot_sequence, self.tokenizer.no_timestamps, *forced]

    def encode(self, audio: np.ndarray) -> Any:
        """The encoder output of ``audio`` plus ``pad_s`` of zero features."""
        import ctranslate2

        features = self.model.feature_extractor(audio)
        content = features.shape[-1] - 1  # as generate_segments: the last frame is padding
        frames = content + self.pad_frames
        frames += frames % 2  # the encoder's convolution halves the frames
        window = np.zeros((features.shape[0], frames), dtype=np.float32)
        window[:, :content] = features[:, :content]
        return self.model.model.encode(ctranslate2.StorageView.from_array(window[None]))

    def decode_short(self, audio: np.ndarray, prompt: str = "", lead: str = "") -> tuple[str, str | None]:
        """The short window's text and what looks wrong with it (None: nothing)."""
        prompt_ids = self.prompt_tokens(prompt, lead)
        budget = token_budget(audio.size)  # (the result holds the lead's tokens too: so does the audio)
        # CTranslate2 stops Whisper well before max_length; twice the room (capped at the
        # model's 448) lets a loop run past the budget, where it is seen.
        max_length = min(self.model.max_length, 2 * (len(prompt_ids) + budget) + 2)
        result = self.model.model.generate(
            self.encode(audio),
            [prompt_ids],
            beam_size=self.beam_size,
            max_length=max_length,
            return_scores=True,
            suppress_blank=True,
            suppress_tokens=self.suppress,
        )[0]
        ids = result.sequences_ids[0]
        text = " ".join(self.tokenizer.decode(ids).split())
        return text, self.verdict(text, ids, result.scores[0], budget)

    @staticmethod
    def verdict(text: str, ids: list[int], score: float, budget: int) -> str | None:
        """Why a short decode should not be trusted (a fallback reason), or None."""
        if len(ids) > budget:
            return "overlong"
        if not text:
            return "empty"
        if repetition(text):
            return "repeat"
        # faster-whisper's own test (length_penalty 1): the sum of log-probs over len + 1.
        if score * len(ids) / (len(ids) + 1) < LOG_PROB_THRESHOLD:
            return "unsure"
        if compression_ratio(text) > COMPRESSION_RATIO_THRESHOLD:
            return "unsure"
        return None

    def decode(
        self, audio: np.ndarray, prompt: str, full: Callable[[np.ndarray, str, str], str], lead: str = ""
    ) -> str:
        """The text of ``audio``: the short window's when it looks right, else ``full``'s."""
        self.last = None
        if not self.fits(audio.size):
            return full(audio, prompt, lead)
        text, reason = self.decode_short(audio, prompt, lead)
        if reason is None:
            self.counts["short"] += 1
            return text
        self.last = reason
        self.counts["fallback"] += 1
        self.counts[reason] += 1
        log.debug("short-window decode %s (%r): decoding the full 30 s window", reason, text[:80])
        text = full(audio, prompt, lead)
        if repetition(text):
            self.counts["trimmed"] += 1
            log.debug("the full window repeats too, trimmed: %r", text[:80])
            text = trim_repetition(text)
        return text
