"""IRIS's developer tools, run from the repository root as ``python -m tools.…``:
``testbed`` (what tests, demo and benchmarks run against), ``bench`` (benchmarks),
``deb`` (packages and their install test) and ``demo`` (``make demo``).

Imports nothing: ``tools.deb.checks`` runs with a container's bare python3.11.
"""
