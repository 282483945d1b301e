"""Language-model backends (Ollama, OpenAI-compatible) and reading what a model writes."""
