"""The tool-calling question set: a development half (for tuning) and a held-out half.

The held-out half (``held_out.py``) was written and committed before any tuning of
retrieval, descriptions or prompts, and is never used to tune: the benchmark reports
both halves, and the held-out one is the figure that counts. Questions cover the
built-in tools, the tools of the six servers of ``tools/testbed/mcp_servers.py`` and
questions that need no tool; ``Request``s are out-of-scope requests IRIS must not act on.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    """A question and the tool calls that answer it right."""

    text: str
    """What the user says."""
    tools: tuple[str, ...]
    """Acceptable first tools (any one of them); empty: no tool may be called."""
    args: tuple[str, ...] = ()
    """Each item must occur in the call's arguments as JSON (case-insensitive); ``a|b`` accepts either."""
    timers: tuple[tuple[str, int], ...] = ()
    """Timers (label, seconds) running before the question is asked."""

    @property
    def kind(self) -> str:
        """``builtin``, ``mcp:<category>`` of the first acceptable tool, or ``none``."""
        if not self.tools:
            return "none"
        first = self.tools[0]
        return f"mcp:{first.rpartition('/')[0]}" if "/" in first else "builtin"


@dataclass(frozen=True)
class Request:
    """An out-of-scope request: no side effect, no tool syntax spoken, a brief answer."""

    text: str
    """What the user says."""
    refuse: bool = True
    """The answer should say IRIS cannot do it (False for greetings and small talk)."""
    timers: tuple[tuple[str, int], ...] = ()
    """Timers running before the request (a wrong cancel would hit them)."""


T, C = "get_current_time", "calculator"
MCP_TIME, MCP_CONVERT, MCP_CALC = "time/get_current_time", "time/convert_time", "utilities/math/calculate"
SQL_READ, SQL_WRITE, SQL_TABLES, SQL_DESCRIBE = (
    "data/sqlite/read_query",
    "data/sqlite/write_query",
    "data/sqlite/list_tables",
    "data/sqlite/describe_table",
)
GIT = "dev/git/"
MEM = "memory/"
FILES = "files/"
READ_FILE = (f"{FILES}read_text_file", f"{FILES}read_file", f"{FILES}read_multiple_files")
LIST_DIR = (f"{FILES}list_directory", f"{FILES}list_directory_with_sizes", f"{FILES}directory_tree")
MEM_SAVE = (f"{MEM}create_entities", f"{MEM}add_observations")
MEM_RECALL = (f"{MEM}search_nodes", f"{MEM}open_nodes", f"{MEM}read_graph")
TIME_ANY = (T, MCP_TIME)


def conversion(source: str, target: str) -> tuple[str, str]:
    """The argument items of a conversion from ``source`` to ``target`` (IANA zones, lower
    case): the order counts, a conversion the wrong way round answers another question."""
    return (f'source_timezone": "{source}', f'target_timezone": "{target}')


CALC_ANY = (C, MCP_CALC)
