"""The conversation: its history, one turn at a time, and what produces a turn's sentences
(the intent fast path, boost, the tool-calling chat loop)."""
