"""Count the characters a package's regular expressions read, to test that a text path is linear.

``count_reads(monkeypatch, package)`` swaps every compiled pattern in the modules of
``package`` for a proxy that adds to one ``Reads`` counter the span each call covers:
from ``pos`` to the end of the match, or to the end of the string (``endpos``) when
nothing matched; ``finditer``, ``findall`` and ``sub`` cover the whole string. A regex
reads at least that span, so a path that searches the same text again on every chunk
shows up as counts that grow with the square of the text. It needs nothing from the
code under test, so it measures an old version just as well.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from types import ModuleType
from typing import Any


class Reads:
    """What the patterns read so far."""

    def __init__(self) -> None:
        self.chars = 0
        """Characters covered by all calls."""
        self.calls = 0
        """Calls made."""


class _Counting:
    """A compiled pattern that counts what it reads into a ``Reads``."""

    def __init__(self, pattern: re.Pattern[str], reads: Reads) -> None:
        self._pattern = pattern
        self._reads = reads

    def _count(self, string: str, pos: int, endpos: int, m: re.Match[str] | None) -> None:
        self._reads.calls += 1
        self._reads.chars += max(1, (m.end() if m else min(endpos, len(string))) - pos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        m = self._pattern.search(string, pos, endpos)
        self._count(string, pos, endpos, m)
        return m

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        m = self._pattern.match(string, pos, endpos)
        self._count(string, pos, pos + 1 if m is None else endpos, m)
        return m

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        self._count(string, pos, endpos, None)
        return self._pattern.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        self._count(string, pos, endpos, None)
        return self._pattern.findall(string, pos, endpos)

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        self._count(string, 0, len(string), None)
        return self._pattern.sub(repl, string, count)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)


def count_reads(monkeypatch: Any, package: ModuleType) -> Reads:
    """Count, for the rest of the test, what every compiled pattern of ``package``'s modules reads."""
    reads = Reads()
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(module, name, _Counting(value, reads))
    return reads
