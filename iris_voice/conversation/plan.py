"""The boost planner's language: its prompt, and a tolerant parser of its replies.

The planner must answer ``SUMMARY: <answer>`` or ``ANALYSIS: <…>`` + ``GUIDANCE: <…>``.
Models decorate this (``**Summary:**``, ``## GUIDANCE``, lower case, prose before it), so
a section header is a label at the start of a line (or after a sentence), with optional
markdown marks around it, ended by a colon, a dash or the end of the line.

``PlanStream`` reads the reply while it streams and hands out SUMMARY sentences as soon
as each is complete, so speech starts before the planner has finished. A summary is
committed once its first sentence has been handed out; before that, a GUIDANCE header
that follows it turns the reply into a plan. ``parse_plan`` reads a whole reply with
the same rules (without the commit, GUIDANCE wins over SUMMARY).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from iris_voice.llm.sentences import SentenceSplitter
from iris_voice.llm.textcalls import strip_markup
from iris_voice.tools.registry import ToolSpec
from iris_voice.tools.render import SYSTEM_TOOL_INSTRUCTIONS, render

_LABELS = ("summary", "analysis", "guidance", "request")  # "Request:": the model plays on
_HEADER = re.compile(
    r"(?:^|(?<=[.!?])[ \t]+)[ \t>#*_-]*(summary|analysis|guidance|request)"
    r"(?:[*_]*[ \t]*[:：][*_]*|[*_]*[ \t]*[-–—][ \t]|[*_#]*[ \t]*(?=\n))[ \t]*",
    re.I | re.M,
)
# A GUIDANCE that says there is nothing to do is no plan ("none", "N/A", "no tools needed").
_NOTHING = re.compile(r"^\W*(none|n/?a|nothing|no tools?( (are |is )?(needed|required))?)\W*$", re.I)

Kind = Literal["summary", "guidance", "invalid"]


@dataclass(frozen=True)
class Plan:
    """What one planner reply says."""

    kind: Kind
    """``summary`` (answer directly), ``guidance`` (call tools) or ``invalid``."""
    summary: str = ""
    """The direct answer, markdown removed."""
    analysis: str = ""
    """The planner's reading of the request (may be empty)."""
    guidance: str = ""
    """Which tools to call, with which arguments."""


def _clean(text: str) -> str:
    """Markdown marks and surrounding blank space removed, lines joined."""
    text = strip_markup(text).replace("**", "").replace("__", "").replace("`", "")
    return " ".join(text.split())


def sections(text: str) -> list[tuple[str, str]]:
    """(label, body) for every header in ``text``, in order; prose before the first is dropped."""
    heads = list(_HEADER.finditer(text))
    out = []
    for i, m in enumerate(heads):
        if m.group(1).lower() == "request":
            break  # a small planner going on to invent the next request: the reply is over
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((m.group(1).lower(), _clean(text[m.end() : end])))
    return out


def parse_plan(text: str) -> Plan:
    """Read a whole planner reply; anything without a usable section is ``invalid``."""
    found = sections(text)
    first = {}
    for label, body in found:
        if body and not (label == "guidance" and _NOTHING.match(body)):
            first.setdefault(label, body)
    if "guidance" in first:
        return Plan("guidance", analysis=first.get("analysis", ""), guidance=first["guidance"])
    if "summary" in first:
        return Plan("summary", summary=first["summary"])
    return Plan("invalid")


_PARTIAL = re.compile(r"[ \t>#*_-]*([A-Za-z]*)[*_]*[ \t]*")
_SENTENCE_GAP = re.compile(r"[.!?][ \t]+")


def _could_be_header(piece: str) -> bool:
    """Whether unfinished text at the end of the stream may still grow into a header."""
    m = _PARTIAL.fullmatch(piece)
    return bool(m) and len(piece) <= 24 and any(lab.startswith(m.group(1).lower()) for lab in _LABELS)


def _hold_from(text: str, start: int) -> int:
    """Where the possibly-a-header tail of ``text`` begins (``len(text)`` if there is none).

    A line break ends a sentence, so the break itself is held while the next line may
    still become a header: "SUMMARY: I will check.\nGUIDANCE: …" is a plan, not speech.
    """
    nl = text.rfind("\n")
    if nl >= start and _could_be_header(text[nl + 1 :]):
        while nl > start and text[nl - 1] in " \t\n":
            nl -= 1
        return nl
    for m in _SENTENCE_GAP.finditer(text, max(nl + 1, start)):
        if m.end() < len(text) and _could_be_header(text[m.end() :]):
            return m.end()
    return len(text)


class PlanStream:
    """Incremental reader of a planner reply: ``feed`` deltas, get summary sentences back."""

    def __init__(self) -> None:
        self.text = ""
        """Everything received so far."""
        self.spoken: list[str] = []
        """Summary sentences handed out (non-empty = the reply is committed to a summary)."""
        self._start: int | None = None  # where the summary body begins in ``text``
        self._fed = 0  # how much of ``text`` went into the splitter
        self._ended = False  # the summary is closed (or the reply turned out to be a plan)
        self._splitter = SentenceSplitter()

    @property
    def committed(self) -> bool:
        """True once a summary sentence was handed out: the reply is a summary."""
        return bool(self.spoken)

    @property
    def done(self) -> bool:
        """True when nothing later in the reply can change what is spoken."""
        return self._ended and self.committed

    def feed(self, delta: str) -> list[str]:
        """Add streamed text; return summary sentences it completed."""
        self.text += delta
        if self._ended:
            return []
        if self._start is None:
            m = next((h for h in _HEADER.finditer(self.text) if h.group(1).lower() != "analysis"), None)
            if m is None:
                return []
            if m.group(1).lower() != "summary":
                self._ended = True  # a plan (or "GUIDANCE: none" + SUMMARY): read at the end
                return []
            self._start = self._fed = m.end()
        later = _HEADER.search(self.text, self._start)  # ^ still means a line start here
        if later is None:
            end = max(_hold_from(self.text, self._start), self._fed)
            out = self._say(self.text[self._fed : end])
            self._fed = max(self._fed, end)
            return out
        self._ended = True
        if not self.spoken and later.group(1).lower() == "guidance":
            return []  # nothing said yet: the reply is a plan after all
        out = self._say(self.text[self._fed : later.start()]) + self._say_rest()
        self._fed = later.start()
        return out

    def _say(self, piece: str) -> list[str]:
        out = [s for s in (_clean(x) for x in self._splitter.feed(piece)) if s]
        self.spoken.extend(out)
        return out

    def _say_rest(self) -> list[str]:
        tail = self._splitter.flush()
        out = [_clean(tail)] if tail and _clean(tail) else []
        self.spoken.extend(out)
        return out

    def finish(self) -> tuple[Plan, list[str]]:
        """The reply ended: the plan, and any summary sentences not yet handed out."""
        if self._start is not None and not self._ended:
            out = self._say(self.text[self._fed :]) + self._say_rest()
            self._ended = True
        else:
            out = []
        if self.committed:
            return Plan("summary", summary=" ".join(self.spoken)), out
        plan = parse_plan(self.text)
        if plan.kind == "summary":  # e.g. after "GUIDANCE: none": nothing streamed, say it now
            out = [s for s in (_clean(x) for x in _split(plan.summary)) if s]
            self.spoken.extend(out)
        return plan, out


def _split(text: str) -> list[str]:
    s = SentenceSplitter()
    out = s.feed(text)
    tail = s.flush()
    return out + ([tail] if tail else [])


# -- prompts ---------------------------------------------------------------------------------

PLANNER_SYSTEM = """\
You are the planner of IRIS, a voice assistant. You cannot call tools yourself: a small \
local model calls them, following your guidance. Its tools:

{tools}

Reply in one of two formats, and nothing else:
- A request that a tool above answers (the current time or date, arithmetic, timers, \
reminders) must never be answered by you: you do not know the time, and the tools are \
exact. Reply:
ANALYSIS: <what the user needs and which tool gives it>
GUIDANCE: <the tool to call and its exact arguments>
- Any other request (general knowledge, conversation, jokes): answer it yourself. Reply:
SUMMARY: <the answer: one or two short spoken sentences>"""

# Worked examples, as earlier turns of the planner's chat: a 1.5B planner mixed both
# formats in every reply when they were written into the system prompt, and kept them
# apart 9 times out of 9 as turns. Tool examples only for tools that are there.
_TOOL_SHOTS = {
    "get_current_time": (
        "What time is it in Rome?",
        "ANALYSIS: The current time needs a tool.\n"
        'GUIDANCE: Call get_current_time with timezone "Europe/Rome".',
    ),
    "calculator": (
        "What is 12 times 9?",
        'ANALYSIS: Arithmetic needs the calculator.\nGUIDANCE: Call calculator with expression "12*9".',
    ),
}
_ANSWER_SHOTS = (
    ("Who painted the Mona Lisa?", "SUMMARY: Leonardo da Vinci painted the Mona Lisa."),
    ("Tell me a fun fact about owls.", "SUMMARY: Owls can turn their heads about 270 degrees."),
)


def planner_prefix(specs: list[ToolSpec], fmt: str) -> list[dict[str, str]]:
    """The planner's constant messages: rules with the tools as text, then examples.

    Constant, so an Ollama or llama.cpp planner reuses its prompt cache across requests.
    """
    tools = tools_text(specs, fmt) if specs else "(no tools)"
    names = {s.name for s in specs}
    tool_shots = [shot for name, shot in _TOOL_SHOTS.items() if name in names]
    shots = [x for pair in zip(tool_shots, _ANSWER_SHOTS, strict=False) for x in pair]
    shots += tool_shots[len(_ANSWER_SHOTS) :] + list(_ANSWER_SHOTS[len(tool_shots) :])
    out = [{"role": "system", "content": PLANNER_SYSTEM.format(tools=tools)}]
    for request, reply in shots:
        out += [{"role": "user", "content": f"Request: {request}"}, {"role": "assistant", "content": reply}]
    return out


def tools_text(specs: list[ToolSpec], fmt: str) -> str:
    """The tools as a manifest for a model that cannot call them (no call syntax)."""
    text = render(specs, fmt)
    text = text if isinstance(text, str) else ""
    return text.removesuffix(SYSTEM_TOOL_INSTRUCTIONS[fmt]).rstrip()


@dataclass(frozen=True)
class Attempt:
    """A failed planner loop, told back to the planner in the next one."""

    reply: str
    """What the planner said (cut short)."""
    problem: str
    """Why it failed."""


def planner_request(text: str, loop: int, max_loops: int, attempts: list[Attempt]) -> str:
    """The user message of planner loop ``loop`` (1-based).

    Loop 1 is the bare request, shaped like the examples; later loops add the loop
    number and what went wrong before.
    """
    lines = [f"Request: {text}"]
    if loop > 1 or attempts:
        lines.append(f"(Attempt {loop} of {max_loops}. Earlier attempts failed:")
        for i, a in enumerate(attempts, 1):
            lines.append(f"{i}. You replied: {a.reply!r}. Problem: {a.problem}")
        lines.append("Reply again, in one of the two formats.)")
    return "\n".join(lines)


def guidance_message(plan: Plan) -> dict[str, str]:
    """The per-turn message that directs the executor.

    It follows the user's message, so the cached prompt prefix (system prompt, tools,
    history) is untouched. A second user message, rather than a late system message:
    Qwen2.5-1.5B calls the tool after it, but sometimes reads a late system message aloud.
    """
    analysis = f"{plan.analysis} " if plan.analysis else ""
    return {"role": "user", "content": f"Hint from a planner: {analysis}{plan.guidance}"}


def short(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters, for feedback and traces."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
