"""The English the rules read, in one place: how a request opens, and the conversational senses of verbs.

- ``LEAD``: what may come before a request's verb ("hey", "please", "can you", "let's"…).
  Every "does the request open with a verb" test uses it, so they agree on the opening and
  differ only in the verbs they look for: ``asks_change`` (a verb of changing: what a tool
  with side effects may do for it), ``sets_up`` (setting something up: a cancel it did not
  ask for is no part of it), and the reply rules' verbs of action on the world
  (``conversation.honest``).
- ``refers_back``: "it", "that" — a request about what the conversation last spoke of.
- ``in_conversation``: a verb of action in a sense that needs nothing but the
  conversation — playing a game *with* the user, calling the user by a name. A claim in
  such a sense is true of a voice assistant; the senses are told by their grammar (the user
  as partner or as the one named), not by topic: "I'll play some jazz for you" and "I'll
  call you a taxi" stay claims on the world.
"""

from __future__ import annotations

import re

LEAD = (
    r"^\W*(?:(?:hey|ok|okay|please|so|now|and|also|then|actually|alright|all right|well|oh|no|wait"
    r"|hmm|sorry|never mind|iris|jarvis|can you|could you"
    r"|would you|will you|i want you to|i'd like you to|i want to|i'd like to|go ahead and|let's)\W+)*"
)
"""What may precede a request's verb (a regex prefix anchored at the start)."""
CHANGE_VERBS = (
    "set create add remember save store write delete remove update change rename move edit append "
    "insert commit stage reset checkout switch forget erase record note put clear cancel stop pause "
    "resume start make begin"
).split()
"""Verbs of changing: a request that opens with one asks for a change."""
SETUP_VERBS = "set start create make add put begin".split()
"""Verbs of setting something up."""


def opens_with(verbs: list[str] | tuple[str, ...]) -> re.Pattern[str]:
    """A pattern for a request that opens (after ``LEAD``) with one of ``verbs``."""
    alternation = "|".join(v.replace("checkout", "check ?out") for v in verbs)
    return re.compile(rf"{LEAD}(?:{alternation})\b", re.IGNORECASE)


_CHANGE_ORDER = opens_with(CHANGE_VERBS)
_SETUP_ORDER = opens_with(SETUP_VERBS)


def asks_change(text: str) -> bool:
    """Whether ``text`` asks for a change: it opens with a verb of changing. A question
    never does, nor does a request to be shown something that names one ("Show me the
    commit history")."""
    return bool(_CHANGE_ORDER.match(text))


def sets_up(text: str) -> bool:
    """Whether ``text`` opens by setting something up ("Set a pasta timer and a tea timer.")."""
    return bool(_SETUP_ORDER.match(text))


_BACK = re.compile(r"\b(?:it|that|this|them|those)\b", re.IGNORECASE)


def refers_back(text: str) -> bool:
    """Whether ``text`` points back at something the conversation spoke of ("pause it")."""
    return bool(_BACK.search(text))


_WITH_YOU = re.compile(r"\bplay\w*\b[^.!?]*\bwith (?:you|me)\b", re.IGNORECASE)
"""An activity with the user as the partner ("I can play a word game with you.")."""
_NAMING = re.compile(r"\bcall(?:ing)?\s+you\s+(?!a\b|an\b|the\b|back\b|later\b|now\b)[A-Z][\w'-]*")
"""The user called by a name ("I'll call you Sam from now on."): a capitalised word, no article."""


def in_conversation(sentence: str) -> bool:
    """Whether ``sentence`` speaks of an action in one of its conversational senses."""
    return bool(_WITH_YOU.search(sentence) or _NAMING.search(sentence))
