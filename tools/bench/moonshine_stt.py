"""Moonshine tiny-en beside Whisper in ``tools/bench/stt_window.py --moonshine``.

Moonshine v1 tiny-en (ONNX Runtime, MIT) ships inside the ``moonshine-voice`` wheel, pinned
in ``requirements/bench-moonshine.txt`` and installed by ``make bench-stt-window`` only: it
is measured, not a dependency of IRIS. Its encoder scales with the audio's length
(Whisper's always sees 30 s), which is why it is a candidate for the decode at a pause.

The package's whole-utterance call (``transcribe_without_streaming``) runs the library's own
voice activity detection and keeps state from one call to the next: on one transcriber, a
clip's transcript changed with the clips before it and earlier words came back in later
transcripts. ``fresh=True`` (the default) loads a new transcriber before each clip, outside
the timed decode, which is the best this engine can do; ``fresh=False`` measures the reuse.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

MODEL = "tiny-en"
SAMPLE_RATE = 16000


class MoonshineBench:
    """An engine for ``stt_window.run_mode``: ``prepare`` (untimed) then ``transcribe_sync``."""

    def __init__(self, fresh: bool = True) -> None:
        import moonshine_voice  # the bench's own requirement (requirements/bench-moonshine.txt)

        self.name = f"moonshine-{MODEL}" + ("" if fresh else " (one transcriber)")
        self.fresh = fresh
        self._mv = moonshine_voice
        self._path = str(moonshine_voice.get_model_path(MODEL))
        self._model: Any = None
        self.failures = 0
        """Decodes the library refused (ONNX Runtime errors on a very short segment)."""

    def prepare(self) -> None:
        """A new transcriber when ``fresh`` (or the first one)."""
        if self.fresh or self._model is None:
            self._model = self._mv.Transcriber(self._path, self._mv.ModelArch.TINY)

    def transcribe_sync(self, audio: np.ndarray) -> str:
        """The transcript of float32 samples at 16 kHz ("" when the library fails)."""
        samples = np.ascontiguousarray(audio, dtype=np.float32)
        # The package copies audio through a Python list (about 20 ms for 5 s, as long as
        # the decode); the C entry point reads the array in place.
        api = self._mv.moonshine_api
        out = ctypes.POINTER(api.TranscriptC)()
        error = self._model._lib.moonshine_transcribe_without_streaming(
            self._model._handle, samples.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            samples.size, SAMPLE_RATE, 0, ctypes.byref(out))  # fmt: skip
        if error != 0:
            self.failures += 1
            return ""
        return " ".join(" ".join(line.text for line in self._model._parse_transcript(out).lines).split())
