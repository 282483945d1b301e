"""Hostile inputs, in one place: what an adversarial pass threw at IRIS.

Plain generators, shared by the standing adversarial tests (``tests/unit``) and the
abuse benchmark (``python -m tools.bench.abuse``), each sized by a parameter so a test
can compare 1k with 16k:

- ``replies``: a broken model's replies (for the sentence splitter and the call filter);
- ``local_user``: a hostile local user (deep JSON and TOML, garbage replies, idle sockets,
  planted symlinks and other users' directories);
- ``tool_servers``: a broken MCP server (evil names, bloated schemas, catastrophic patterns);
- ``timer_db``: a damaged timers database (garbage files, bad rows).
"""
