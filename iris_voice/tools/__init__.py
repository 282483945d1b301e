"""The assistant's tools: the registry, the ToolRenderer, the built-in tools and MCP servers."""
