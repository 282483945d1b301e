"""The local intent fast path: everyday commands matched against sentence templates.

``FastPathResponder`` wraps the model-backed responder; ``iris_voice.llm.responder.
build_responder`` puts it in front when ``[intents] enabled``.
"""

from iris_voice.intents.matcher import IntentMatcher, Match
from iris_voice.intents.responder import FastPathResponder, Responder

__all__ = ["FastPathResponder", "IntentMatcher", "Match", "Responder"]
