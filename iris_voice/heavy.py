"""Heavy third-party libraries, imported one at a time behind one process-wide lock.

Why: the warm-up loads the speech models side by side in worker threads, and each
engine imports its library lazily (so ``iris --help`` does not pay for them). CPython
gives every module its own import lock and, when two threads take them in opposite
orders, raises ``_DeadlockError`` instead of waiting. faster-whisper does exactly that:
one thread imports ``faster_whisper`` (whose ``__init__`` imports
``faster_whisper.feature_extractor``) while another imports
``faster_whisper.feature_extractor`` for Smart Turn's features (which needs its parent
package first). On a cold disk the two overlap and the daemon dies in its warm-up.

Every lazy import of faster-whisper, CTranslate2, onnxruntime, Piper, openWakeWord and
the audio I/O library goes through ``load``: one import of a heavy library at a time,
whatever thread asks, so no two of them can hold each other's module locks.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

_LOCK = threading.RLock()  # re-entrant: a heavy module may import another through ``load``


def load(name: str) -> ModuleType:
    """The module ``name`` (e.g. ``"faster_whisper"``), imported behind the one lock.

    A module that finished importing is returned at once; one that another thread is
    still importing is waited for here, not inside CPython's per-module locks.
    """
    module = sys.modules.get(name)
    if module is not None and not _initializing(module):
        return module
    with _LOCK:
        return importlib.import_module(name)


def _initializing(module: ModuleType) -> bool:
    # CPython marks a module whose body is still running (the import is not finished).
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))
