"""The local intent fast path: everyday commands matched against sentence templates.

``build_responder(cfg, chat, publish)`` returns what the pipeline and ``iris ask`` talk
to: the ``ChatLoop`` itself, or a ``FastPathResponder`` wrapping it.
"""

from iris_voice.intents.matcher import IntentMatcher, Match
from iris_voice.intents.responder import FastPathResponder, Responder, build_responder

__all__ = ["FastPathResponder", "IntentMatcher", "Match", "Responder", "build_responder"]
