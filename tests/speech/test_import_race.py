"""The warm-up's lazy imports cannot deadlock, even on a cold disk.

The warm-up loads Whisper and Smart Turn in two worker threads; both import
faster-whisper lazily (the model class, and the feature extractor for Smart Turn). With
a cold disk, finding ``faster_whisper`` on the path was slow enough for the other thread
to take ``faster_whisper.feature_extractor``'s import lock in between, and CPython raised
``_DeadlockError`` in the daemon's warm-up.

Each check runs in a fresh interpreter (imports happen once per process). A meta-path
finder there stands in for the cold disk: loading a heavy package takes a few tenths of
a second before it appears in ``sys.modules``, the window the deadlock needs, without
touching the page cache. The two
real code paths then start together behind a barrier, the second a moment after the
first, as ``asyncio.gather`` of the warm-ups does.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.speech

RACE = textwrap.dedent(
    """
    import importlib.machinery, sys, threading, time
    import numpy as np

    SLOW = {"faster_whisper", "piper", "onnxruntime", "pyopen_wakeword"}

    class SlowLoader:
        # Creating the module object waits, as reading a cold disk does. This is the
        # window: the importing thread holds the package's lock, but the package is
        # not in sys.modules yet (and the global import lock is free).
        def __init__(self, loader):
            self.loader = loader

        def create_module(self, spec):
            time.sleep(0.4)
            return self.loader.create_module(spec)

        def exec_module(self, module):
            self.loader.exec_module(module)

        def __getattr__(self, name):
            return getattr(self.loader, name)

    class ColdDisk:
        def find_spec(self, name, path=None, target=None):
            if name not in SLOW:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                spec.loader = SlowLoader(spec.loader)
            return spec

    sys.meta_path.insert(0, ColdDisk())

    from iris_voice.config import SttConfig
    from iris_voice.speech import turn
    from iris_voice.speech.stt import FasterWhisperTranscriber

    stt = FasterWhisperTranscriber(SttConfig())
    barrier = threading.Barrier(2)
    errors = []

    def whisper():
        barrier.wait()
        try:
            stt.transcribe_sync(np.zeros(16000, dtype=np.float32))
        except BaseException as exc:
            errors.append(repr(exc))

    def smart_turn_features():
        barrier.wait()
        time.sleep(DELAY)
        try:
            turn.log_mel(np.zeros(16000, dtype=np.float32))
        except BaseException as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=whisper), threading.Thread(target=smart_turn_features)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    print("ERRORS", errors)
    sys.exit(1 if errors or any(t.is_alive() for t in threads) else 0)
    """
)


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.3])
def test_whisper_and_smart_turn_imports_race_without_deadlock(delay: float) -> None:
    """Whisper's model import and Smart Turn's feature import, started together in two
    threads of a fresh interpreter, both finish (no ``_DeadlockError``, no hang)."""
    proc = subprocess.run(
        [sys.executable, "-c", f"DELAY = {delay}\n" + RACE],
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert "Deadlock" not in out, out[-3000:]
    assert proc.returncode == 0, out[-3000:]
    assert "ERRORS []" in proc.stdout
