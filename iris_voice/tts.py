"""Text to speech: the ``Synthesizer`` Protocol the pipeline sees, and its adapters.

Speech is streamed: ``stream(text)`` yields int16 mono chunks as the engine produces
them, each produced in a worker thread, so the first chunk plays while later ones are
still being synthesized.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import numpy as np


class Synthesizer(Protocol):
    """Turns text into audio."""

    name: str
    """Voice name or path, for logs and ``iris status``."""
    sample_rate: int
    """Rate of every chunk ``stream`` yields (Piper medium voices: 22050)."""

    def stream(self, text: str) -> AsyncIterator[np.ndarray]:
        """Speak ``text``: int16 mono chunks at ``sample_rate``, as they are ready."""
        ...

    async def warmup(self) -> None:
        """Load the voice and synthesize once, so the first reply is fast."""
        ...
