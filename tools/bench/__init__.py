"""IRIS's benchmarks: each prints its figures against a baseline measured in the same run.

Run from the repository root as ``python -m tools.bench.NAME`` (the Makefile's ``bench*``
targets): ``voice`` (IRIS vs a naive pipeline and the live daemon; with ``report``,
``checks``, ``timer_state`` and ``naive_pipeline``), ``endpoint``, ``stt``, ``speech``,
``audio``, ``tool_calls``, ``intents``, ``boost``, ``mcp``, ``time_words`` (spoken times:
IRIS's parser against the registries' parsers).
"""
