"""IRIS: a local, offline voice assistant daemon for the Linux desktop."""

__version__ = "0.1.0"
