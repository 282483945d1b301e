"""The ``iris`` command line."""
