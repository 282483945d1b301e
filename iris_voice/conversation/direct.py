"""Results said without a second model round: what a round's tool answers say for themselves.

A second round reads the calls and their results again to phrase them (seconds on two
cores). It is skipped when every call of the round succeeded and each result can be said
as it is:

- a built-in tool's own sentence (direct return: "Pasta timer set for 8 minutes.");
- a short answer of a tool that changes nothing ("price: 4.5", ``Tool.say``);
- what a tool that changes something shows it did ("Saved: Bob, likes chess.",
  ``saying.say_done``), when the request asked for exactly one change. "Remember that
  Bob likes chess" is done once the fact is stored; the small model's second round only
  stored it again in other words ("plays chess") and then said so, ten seconds later.
  "Create a branch and switch to it" asks two changes: the model goes on after the first.
"""

from __future__ import annotations

from dataclasses import replace

from iris_voice.conversation.toolpick import asks_change, changes_asked, writes
from iris_voice.llm.sentences import split_sentences
from iris_voice.tools.mcp.saying import say_done
from iris_voice.tools.registry import ToolRegistry, ToolResult, spoken


def said_results(
    registry: ToolRegistry, request: str, results: list[ToolResult], asked: int
) -> list[ToolResult] | None:
    """The round's ``results`` with what each says (``ToolResult.said``) when all of the
    ``asked`` calls ran, succeeded and can be said without the model; else None."""
    if not 0 < len(results) == asked:
        return None
    one_change = asks_change(request) and changes_asked(request) == 1
    out = []
    for r in results:
        tool = registry.get(r.name)
        if not r.ok or tool is None:
            return None
        if r.direct:
            out.append(r)
        elif not writes(tool):
            if not r.said:
                return None
            out.append(r)
        # ``Tool.say`` set: the tool's results may be said (``mcp.say_results``)
        elif tool.say is not None and one_change and (done := say_done(r.result)):
            out.append(replace(r, said=done))
        else:
            return None
    return out


def direct_sentences(results: list[ToolResult], first_clause_words: int = 0) -> list[str]:
    """The sentences of results said without a model round (the first maybe a clause:
    ``SentenceSplitter``)."""
    text = " ".join(r.said or spoken(r.result) for r in results)
    return split_sentences(text, first_clause_words)
