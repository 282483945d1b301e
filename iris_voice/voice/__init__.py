"""The voice front end: listener (activation, endpointing, barge-in), pipeline, speaker, alarms."""
