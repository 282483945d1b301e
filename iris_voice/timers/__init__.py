"""Timers and reminders: parsing spoken times, the SQLite store, the service that fires them."""
