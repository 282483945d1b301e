"""The .deb install test's checks, run inside the booted bookworm container as root.

``tools.deb.install_test`` copies this package (with ``tools/__init__.py`` and
``tools/deb/__init__.py``) and the packages to ``/srv/iris-test`` and boots the container
with a oneshot unit that runs ``python3.11 -m tools.deb.checks`` there and powers off.
Each step prints ``PASS``/``FAIL``/``SKIP`` with its time and what it saw to
``/srv/iris-test/log.txt`` (the host shows it live) and to ``results.json``. Standard
library only: it runs with the system's /usr/bin/python3.11.

The steps follow a new user: install with ``sudo apt install ./…deb``, check the command,
the units and their hardening, start the three kinds of service with the real daemon
(``iris run``), ask it a spoken question, stop them, upgrade, purge.

Modules, each importing only those before it: ``common`` (Fail, sh, Runner…),
``iris_unit`` (one IRIS unit: systemctl, its logs, ``iris status``), ``voice`` (the spoken
turn), ``resources`` (the units' limits and strict file system, on the running daemons),
``service`` and ``install`` (the steps); ``__main__`` runs them in order.
"""
