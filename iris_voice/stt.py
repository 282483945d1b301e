"""Speech to text: the ``Transcriber`` Protocol the pipeline sees, and its adapters.

The pipeline hands over one utterance as float32 mono samples at 16 kHz and gets text
back. Adapters run the whole decode — model call and the consumption of any lazy
result — in a worker thread, one lock per model instance.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

SAMPLE_RATE = 16000
"""Every Transcriber takes 16 kHz mono audio."""


class Transcriber(Protocol):
    """Turns one utterance into text."""

    name: str
    """Model name or path, for logs and ``iris status``."""

    async def transcribe(self, audio: np.ndarray) -> str:
        """Text of ``audio`` (float32 mono, 16 kHz, -1..1); "" when nothing was said."""
        ...

    async def warmup(self) -> None:
        """Load the model and run it once, so the first real utterance is fast."""
        ...
