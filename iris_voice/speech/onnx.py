"""One ONNX Runtime session for a small speech model (Silero VAD, Smart Turn).

Both models run on the CPU beside faster-whisper, which has the other core, so their
sessions are built the same way: the caller's intra-op thread count, one inter-op thread,
only onnxruntime's errors logged and only the CPU provider. One builder keeps the two
from drifting apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iris_voice import heavy
from iris_voice.errors import Code, SpeechError


def onnx_session(path: Path, *, threads: int, what: str) -> Any:
    """An ``onnxruntime.InferenceSession`` on the CPU for the model file ``path``.

    ``threads`` is the intra-op thread count. ``what`` names the model in the error
    (``"cannot load {what} {path}: …"``). onnxruntime is imported through
    ``heavy.load``, so the warm-up threads never import it side by side.

    Raises ``SpeechError(Code.MODEL_INVALID)`` when onnxruntime cannot load the file.
    """
    onnxruntime = heavy.load("onnxruntime")

    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"], sess_options=opts)
    except Exception as exc:  # onnxruntime raises its own exception types
        raise SpeechError(Code.MODEL_INVALID, f"cannot load {what} {path}: {exc}") from exc
