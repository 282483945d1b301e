"""Results said without a second model round: what a round's tool answers say for themselves.

A second round reads the calls and their results again to phrase them (seconds on two
cores). It is skipped when every call of the round succeeded and each result can be said
as it is:

- a built-in tool's own sentence (direct return: "Pasta timer set for 8 minutes.");
- a short answer of a tool that changes nothing ("price: 4.5", ``Tool.say``), or a lookup
  that found nothing, when it is the turn's first ("I found nothing for that.");
- what a tool that changes something shows it did ("Saved: Bob, likes chess.",
  ``saying.say_done``), when the request asked for exactly one change. "Remember that
  Bob likes chess" is done once the fact is stored; the small model's second round only
  stored it again in other words ("plays chess") and then said so, ten seconds later.
  "Create a branch and switch to it" asks two changes: the model goes on after the first.
"""

from __future__ import annotations

from iris_voice.conversation.honest import orders_action
from iris_voice.conversation.toolpick import asks_change, changes_asked, writes
from iris_voice.llm.sentences import split_sentences
from iris_voice.tools.mcp.saying import found_nothing, say_done, say_known_about
from iris_voice.tools.registry import NOTHING_FOUND, ToolRegistry, ToolResult, spoken


def said_results(
    registry: ToolRegistry, request: str, results: list[ToolResult], asked: int, first: bool = True
) -> list[str] | None:
    """What to say for the round's ``results`` when all of the ``asked`` calls ran,
    succeeded and can be said without the model (one text per result, the changes'
    together); else None. ``first``: no tool answered earlier in the turn — only then is a
    lookup that found nothing said so (``NOTHING_FOUND``; after an earlier answer the model
    knows more than this one result), and only as the round's one call, for a request
    that asks to be told rather than for an action; beside other answers in the round it
    is passed over ("recall what you know about Anna": the whole memory, and nothing
    under "Anna" alone)."""
    if not 0 < len(results) == asked:
        return None
    one_change = asks_change(request) and changes_asked(request) == 1
    # "Open the garage door." may run memory's open_nodes and find nothing: what was asked
    # is an action IRIS cannot do, not a lookup (the model says so); so is a round with
    # another answer beside the empty one.
    lookup = first and asked == 1 and not orders_action(request)
    said: list[str] = []
    changes: list[str] = []  # the results of tools that changed something, said as one
    for r in results:
        tool = registry.get(r.name)
        if not r.ok or tool is None:
            return None
        if r.direct:
            said.append(r.said or spoken(r.result))
        elif not writes(tool):
            if r.said:
                said.append(r.said)
            elif tool.say is not None and found_nothing(r.result):
                if lookup:
                    # Asked "what do you remember about Alice?", the model explained an empty
                    # answer with a memory of its own ("a young girl who loved dolls").
                    said.append(NOTHING_FOUND)
                elif asked == 1:
                    return None
                # else passed over: beside the round's other answers it adds nothing
            elif tool.say is not None and (known := say_known_about(r.result, request)):
                # The whole memory, read for "what do you know about Anna?": what it holds
                # of Anna (the model read it and asked again with open_nodes).
                said.append(known)
            else:
                return None
        elif tool.say is not None and one_change:  # ``Tool.say`` set: ``mcp.say_results``
            changes.append(r.result)
        else:
            return None
    if changes:
        done = say_done(*changes)
        if done is None:
            return None
        said.append(done)
    return said or None  # every answer passed over: the model says what was found


def direct_sentences(said: list[str], first_clause_words: int = 0) -> list[str]:
    """The sentences of results said without a model round (the first maybe a clause:
    ``SentenceSplitter``)."""
    return split_sentences(" ".join(said), first_clause_words)
