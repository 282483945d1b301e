"""Honest words: a reply never claims an action no tool performed.

A small model answers requests IRIS cannot serve as if it could: "Open the garage door."
→ "Iris will open the garage door.", "Play some jazz in the kitchen." → "I can play some
jazz in the kitchen.", "Unlock the back door." echoed back as the answer. No tool ran, so
every one of those is untrue. ``ClaimGuard`` holds back a sentence that claims an action
on the world (IRIS doing, having done or being able to do something only a device, a phone
or a shop could) or repeats the request, together with whatever follows it in the same
model round:

- the round goes on to call a tool: the held sentences were an announcement ("I'll set a
  timer.") and are spoken, then the call runs;
- the round ends without a call: they were untrue and ``CANNOT`` is said instead.

Sentences that claim nothing are spoken at once, so ordinary answers lose no time. Once a
tool has acted in a turn, the guard stands aside: the model is speaking about a result.

IRIS's own actions are claimed falsely too: asked to cancel a timer, a small model may say
"The pasta timer has been cancelled." and call nothing. Those claims (``claims_own``) are
held only when the request asks for such an action; a round that ends without a call
leaves them ``undone``: not said, and the tool loop asks the model once more to act.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from iris_voice.tools.lexicon import CHANGE_VERBS, asks_change, in_conversation, opens_with
from iris_voice.tools.registry import CANNOT

# Verbs that act on the world beyond IRIS's tools: devices, media, calls and messages,
# shops and bookings, movement. Verbs IRIS's own tools use ("set", "start", "add") are not
# here: "I can set timers" is true.
_VERBS = (
    "open close shut lock unlock turn switch dim brighten raise lower increase decrease "
    "play stream call phone dial text message send email e-mail post tweet book reserve order "
    "buy purchase pay transfer deliver brew cook bake move drive walk navigate fly steer "
    "water vacuum clean feed arm disarm heat cool warm activate deactivate"
).split()
_IRREGULAR = {"shut": ["shut"], "send": ["sent"], "buy": ["bought"], "pay": ["paid"],
              "drive": ["drove", "driven"], "fly": ["flew", "flown", "flies"]}  # fmt: skip


def _forms(verb: str) -> list[str]:
    """``verb``'s forms as a reply writes them: open, opens, opened, opening."""
    stem = verb[:-1] if verb.endswith("e") else verb
    double = verb + verb[-1] if re.fullmatch(r"[^aeiou]*[aeiou][bdglmnpt]", verb) else verb
    forms = {verb, verb + "s", verb + "es", stem + "ed", stem + "ing", double + "ed", double + "ing"}
    return sorted(forms | set(_IRREGULAR.get(verb, [])), key=len, reverse=True)


_ACT = (
    "(?:"
    + "|".join(f for v in _VERBS for f in _forms(v))
    + r"|go(?:ing)?\s+(?:forward|back|backwards|left|right|straight|home))"
)
_ACTING = "(?:" + "|".join(f for v in _VERBS for f in _forms(v) if f.endswith("ing")) + ")"
_FIRST_PERSON = (
    r"(?:i|iris|we)(?:\s+(?:will|shall|can|could|am|have|just|now|already|would)|'(?:ll|m|ve|d))"
    r"(?:\s+(?:going to|about to|now|just|go ahead and|also))*"
)
_CLAIM = re.compile(rf"\b{_FIRST_PERSON}\s+(?:be\s+)?{_ACT}\b", re.IGNORECASE)
"""IRIS says it does, did, will or can do something on the world."""
_GERUND = re.compile(
    r"^(?:(?:ok(?:ay)?|sure|alright|all right|certainly|of course|right away|done)[,.!]?\s+)?"
    rf"{_ACTING}\b",
    re.IGNORECASE,
)
"""A reply that starts doing it: "Sure, turning the heating up."."""
_FINITE = re.compile(
    r"\b(?:is|are|was|were|takes?|can|will|requires?|helps?|means|has|have|makes?|should|needs?)\b",
    re.IGNORECASE,
)
"""A sentence with one of these is about the activity ("Cooking pasta takes ten minutes.")."""
_STATE = re.compile(
    r"\b(?:is|are) now\s+(?:open|closed|shut|locked|unlocked|on|off|playing|calling|set)\b"
    r"|\b(?:has|have) (?:now )?been\s+(?:opened|closed|shut|locked|unlocked|ordered|booked|sent|paid|"
    r"set|changed|adjusted|increased|decreased|raised|lowered|dimmed|started|stopped|placed|"
    r"turned (?:on|off|up|down)|switched (?:on|off))\b"
    # "on the way from A to B" is a route, not a delivery
    r"|\b(?:is|are) (?:now )?on (?:its|their|the) way\b(?!\s+(?:from|to|between|back|there)\b)",
    re.IGNORECASE,
)
"""A claim that the world changed: "The garage door is now open.", "The volume has been set
to 100%." (only ever checked while no tool has acted in the turn)."""
_BEEN = r"\b(?:is|are|was|were|has been|have been|'s been|'s|'re)\s+(?:now\s+|just\s+|already\s+)?"


def _participles(verb: str) -> list[str]:
    """The forms of ``verb`` that say it is done: unlocked, shut, sent, turned (on)…"""
    return [f for f in _forms(verb) if f.endswith("ed") or f in _IRREGULAR.get(verb, [verb])]


def said_done(sentence: str, request: str) -> bool:
    """True when ``request`` opens with a verb of action and ``sentence`` says its object is
    in that state now ("Unlock the back door." → "The back door is unlocked."): what the
    request asked for, said done while no tool acted. "Is the door locked?" asks nothing."""
    m = _ORDER.match(request)
    verb = m.group(0).split()[-1].lower().strip(",.!?") if m else ""
    if verb not in _VERBS:
        return False
    done = "|".join(_participles(verb))
    return bool(re.search(rf"{_BEEN}(?:{done})\b", sentence, re.IGNORECASE))


_NEGATED = re.compile(r"\b(?:not|n't|cannot|unable|never|no way|sorry)\b", re.IGNORECASE)
_WORDS = re.compile(r"[a-z0-9']+")
_SMALL = set(
    "a an the my your our to for in on of at with and or please now i i'll i'm i've iris will "
    "can could would you me it this that some up down off sure okay ok right away".split()
)
"""Words that add nothing of their own to an echo."""
_ORDER = opens_with([*_VERBS, "set", "start", "make", "put", "get", "add", "go", "book"])
"""A request for an action: it opens with its verb."""
_LIVE_QUESTION = re.compile(
    r"^\W*(?:will|is|are|does|do|has|have)\s+(?:it|there|the|my|our)\b"
    r"(?=.*\b(?:today|tonight|tomorrow|now|currently|at the moment|outside"
    r"|this (?:morning|afternoon|evening|week|weekend))\b)",
    re.IGNORECASE,
)
"""A yes-or-no question about the world as it is now or will be ("Will it rain today?"):
no tool of IRIS's knows; its own words said back as a statement are a guess."""


def orders_action(request: str) -> bool:
    """Whether ``request`` asks for an action, opening with its verb ("Open the garage
    door."), rather than to be told something."""
    return bool(_ORDER.match(request))


_OWN_NOUN = r"(?:timers?|reminders?|alarms?)"
# What the timer tools do, said as done (``set_timer`` … ``resume_timer``, ``adjust_timer``).
_OWN_DONE = (
    r"(?:cancel+ed|set|started|created|added|removed|deleted|stopped|scheduled|saved"
    r"|paused|resumed|restarted|adjusted|extended|changed|updated)"
)
_OWN = re.compile(rf"\b{_OWN_NOUN}\b", re.IGNORECASE)
_OWN_CLAIM = re.compile(
    rf"\b{_OWN_NOUN}\b[^.!?]*?\b(?:has|have) (?:now |just |already )?been {_OWN_DONE}\b"
    rf"|\b(?:i|iris)(?:'ve|'ll| have| will| just)?\s+(?:just |now |already )?{_OWN_DONE}\b"
    rf"[^.!?]*?\b{_OWN_NOUN}\b"
    rf"|\b{_OWN_NOUN}(?:\s+[\"“'][^\"”']{{1,30}}[\"”'])? (?:is |are )?(?:now )?{_OWN_DONE}\b",
    re.IGNORECASE,
)
"""IRIS says it did (or will do) what only its timer tools do: "The pasta timer has been
cancelled.", "I've set a timer for 8 minutes.", "Timer set."."""


_OWN_ORDER = re.compile(
    r"^(?=.*\b(?:remind|timers?|reminders?|alarms?)\b)"
    r"(?=.*\b(?:set|start|cancel+(?:ed)?|stop|delete|remove|add|create|make|remind|schedule|put|clear"
    r"|pause|resume|restart|adjust|extend|change)\b)",
    re.IGNORECASE,
)
"""A request for one of IRIS's timer actions (misheard forms too: "cancelled the timer")."""


def claims_own(sentence: str, request: str) -> bool:
    """True when ``request`` asks for a change — a timer or reminder action, or any request
    that opens with a verb of changing ("cancel it" names no timer) — and ``sentence`` says
    a timer action was done (which only a call can make true). "Your pasta timer has 3
    minutes left." is no claim; nor is a timer recalled for "thanks a lot"."""
    text = " ".join(sentence.replace("’", "'").split())
    asked = bool(_OWN_ORDER.search(request)) or asks_change(request)
    return asked and not _NEGATED.search(text) and bool(_OWN_CLAIM.search(text))


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def echoes(sentence: str, request: str) -> bool:
    """True when ``sentence`` repeats a request for an action as its answer ("Unlock the
    back door." → "Unlock the back door."), or a question about the world now as its own
    answer ("Will it rain today?" → "It will rain today."): the request opens with a verb of
    action or is such a question, and the sentence brings no word of its own beyond small
    ones while covering most of it — or is short and only repeats part of it ("Text my
    brother that I'm on my way." → "I'm on my way.")."""
    asked = [w for w in _words(request) if w not in _SMALL]
    if not asked or not (_ORDER.match(request) or _LIVE_QUESTION.match(request)):
        return False
    said = [w for w in _words(sentence) if w not in _SMALL]
    covers = len(set(said)) >= 0.7 * len(set(asked)) or _repeats_part(sentence, request)
    return bool(said) and all(w in asked for w in said) and covers


ECHO_WORDS = 6
"""A reply this short that says back a run of the request's words repeats it."""


def _repeats_part(sentence: str, request: str, run: int = 3) -> bool:
    """Whether the short ``sentence`` holds ``run`` consecutive words of ``request`` ("I'm on
    my way" of "Text my brother that I'm on my way"; not "Okay, Sam." of "Call me Sam")."""
    said, asked = _words(sentence), " " + " ".join(_words(request)) + " "
    spans = (" " + " ".join(said[i : i + run]) + " " for i in range(len(said) - run + 1))
    return len(said) <= ECHO_WORDS and any(span in asked for span in spans)


def recital(text: str, descriptions: tuple[str, ...]) -> tuple[float, str]:
    """How much of one tool's description ``text`` says back, when every word of its own
    is that description's, and which description (0.0 and "" when it says anything else):
    "To list timers and reminders," is 0.33 of list_timers' description, the whole
    sentence 1.0."""
    said = {w for w in _words(text) if w not in _SMALL}
    best: tuple[float, str] = (0.0, "")
    for description in descriptions:
        words = {w for w in _words(description) if w not in _SMALL}
        if len(words) >= 3 and said and said <= words:
            best = max(best, (len(said) / len(words), description))
    return best


def topic_words(descriptions: list[str]) -> tuple[frozenset[str], ...]:
    """What the shown tools' servers are about, as their configured descriptions name it
    before a colon ("the shop database: products, prices…" → {shop, database}), for
    ``guesses``. A description without a subject before a colon names none."""
    subjects = []
    for description in descriptions:
        head, colon, _ = description.partition(":")
        words = frozenset(w for w in _words(head) if w not in _SMALL)
        if colon and 0 < len(words) <= 4:
            subjects.append(words)
    return tuple(subjects)


def guesses(sentence: str, topic: tuple[frozenset[str], ...]) -> bool:
    """True when ``sentence`` speaks of what a shown tool's server holds ("The shop database
    contains the following tables: products, customers, orders.") before any tool has
    answered: whatever it states there is a guess."""
    said = set(_words(sentence))
    return any(len(subject & said) >= min(2, len(subject)) for subject in topic)


RECITED = 0.7
"""Share of a description said back that makes a reply a recital of the tool."""


def recites(sentence: str, descriptions: tuple[str, ...]) -> bool:
    """True when ``sentence`` is a tool's description said back ("How long is left on the
    pasta timer?" → "To list timers and reminders, or how long one has left."): the model
    read out the tool it should have called."""
    return recital(sentence, descriptions)[0] >= RECITED


def claims(sentence: str, request: str = "") -> bool:
    """True when ``sentence`` claims an action no tool of the turn performed: IRIS doing,
    having done or able to do something on the world, the world changed, or the request
    itself repeated as the answer or said done. A refusal ("I can't open doors") claims nothing."""
    text = " ".join(sentence.replace("’", "'").split())
    if _NEGATED.search(text) or in_conversation(text):
        return False
    if _CLAIM.search(text):
        return True
    if _STATE.search(text) and not _OWN.search(text):  # (a timer's state is ``claims_own``'s)
        return True
    if _GERUND.search(text) and not _FINITE.search(text):
        return True
    return bool(request) and (echoes(text, request) or said_done(text, request))


_CLAIM_ANY = re.compile(rf"\b{_FIRST_PERSON}\s+(?:be\s+)?[a-z]+", re.IGNORECASE)
_GERUND_ANY = re.compile(
    r"^(?:(?:ok(?:ay)?|sure|alright|all right|certainly|of course)[,.!]?\s+)?"
    r"(?!(?:some|no|any|every)?thing\b|morning\b|evening\b)[a-z]{2,}ing\b",
    re.IGNORECASE,
)
_COMMAND = opens_with([*_VERBS, *CHANGE_VERBS])


def claims_any(sentence: str) -> bool:
    """True when ``sentence`` speaks of IRIS doing anything ("I will rewind the film.",
    "Starting the mower.", "Set the oven to 200 degrees.", "Reminder set."): what a
    reply says after the model reached for a tool the request was not about, whose intent
    was to act (``ClaimGuard.strict``). Refusals and the conversational senses are not."""
    text = " ".join(sentence.replace("’", "'").split())
    if _NEGATED.search(text) or in_conversation(text):
        return False
    return bool(
        _CLAIM_ANY.search(text) or _GERUND_ANY.search(text) or _COMMAND.match(text) or _OWN_CLAIM.search(text)
    )


@dataclass
class ClaimGuard:
    """One model round's sentences, with those from the first claim on held back.

    ``feed`` returns what may be spoken now; ``settle`` what to say when the round ends
    (the held sentences when the round calls a tool, ``CANNOT`` when it does not).
    """

    request: str
    """The user's words (for ``echoes``)."""
    active: bool = True
    """False once a tool has acted in the turn: the model speaks about its result."""
    world: bool = True
    """Judge claims of actions on the world, recitals and guesses (the ``claims`` rule)."""
    own_actions: bool = True
    """Judge claims of IRIS's own timer actions (the ``own_claims`` rule)."""
    strict: bool = False
    """Any action IRIS speaks of doing is a claim (``claims_any``): the model reached for a
    tool the request was not about, and its words after it claim the action in any verb."""
    dropped: list[str] = field(default_factory=list)
    """Recitals and guesses not said because a call followed them (for the trace)."""
    held: list[str] = field(default_factory=list)
    """Sentences held back since the first claim."""
    refused: list[str] = field(default_factory=list)
    """The sentences replaced by ``CANNOT`` (for the log and the trace)."""
    undone: list[str] = field(default_factory=list)
    """Held sentences claiming a timer action no call performed: not said (the loop asks
    the model to act)."""
    own: bool = False
    """The first held sentence claims one of IRIS's own actions (or recites a tool)."""
    descriptions: tuple[str, ...] = ()
    """The shown tools' descriptions (for ``recites``)."""
    recital: bool = False
    """The first held sentence recites a tool's description: never said, call or not."""
    topic: tuple[frozenset[str], ...] = ()
    """What the shown tools' servers hold (``topic_words``); empty once a tool answered."""
    guess: bool = False
    """The first held sentence speaks of what a server holds before it answered: dropped
    when the round calls a tool (the result answers), said when it does not."""
    recited: str = ""
    """The description said back (to find the tool it describes)."""
    maybe: list[str] = field(default_factory=list)
    """Pieces that so far only say back words of a tool's description (a first clause,
    "To list timers and reminders,"): held until what follows shows a recital or not."""

    def feed(self, sentence: str) -> list[str]:
        """The sentences that may be spoken now (none while a claim is held)."""
        if not self.active or not (self.world or self.own_actions):
            return [sentence]
        if not self.held and self.world:
            share, description = recital(" ".join([*self.maybe, sentence]), self.descriptions)
            if share >= RECITED:
                self.own = self.recital = True
                self.recited = description
                self.held, self.maybe = [*self.maybe, sentence], []
                return []
            if share > 0 and len({w for w in _words(sentence) if w not in _SMALL}) >= 2:
                self.maybe.append(sentence)  # the description's words so far: wait for more
                return []
        released, self.maybe = self.maybe, []
        return released + self._judge(sentence)

    def _judge(self, sentence: str) -> list[str]:
        if not self.held and self.own_actions and claims_own(sentence, self.request):
            self.own = True
        elif not self.held and self.world and guesses(sentence, self.topic):
            self.guess = True
        claimed = self.world and (claims(sentence, self.request) or (self.strict and claims_any(sentence)))
        if self.held or self.own or self.guess or claimed:
            self.held.append(sentence)
            return []
        return [sentence]

    def settle(self, called: bool) -> list[str]:
        """At the round's end: the held sentences if the round called a tool, else ``CANNOT``
        instead of them (nothing when nothing was held, or ``undone`` for a timer action
        claimed or a tool recited; a recital is not said even when the call follows, a
        guess not when a call follows and as it was when none does)."""
        pending, self.maybe = self.maybe, []
        # A description begun and never finished was no recital: judged as any sentence.
        said = [s for piece in pending for s in self._judge(piece)]
        held, self.held = self.held, []
        if not held or called:
            if self.recital or self.guess:
                self.dropped = held
                return said
            return said + held
        if self.own:
            self.undone = held
            return said
        if self.guess and not any(claims(h, self.request) for h in held):
            return said + held  # no call followed: the model's own words, as they were
        self.refused = held
        return [*said, CANNOT]
