"""The application layer: one assembly of every part, the daemon, its control commands, file mode."""
