"""Speech engines behind one Protocol each: VAD, wake word, speech to text, text to speech."""
