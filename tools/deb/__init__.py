"""IRIS's Debian packages: ``build`` (``make deb``), ``version``, the install test
(``install_test`` with ``rootfs`` and ``host`` on the host, ``checks`` in the container).

Imports nothing: the in-container checks run as ``python3.11 -m tools.deb.checks`` with
the container's bare Python, and ``make deb`` uses the system's python3.11, not the venv.
"""
