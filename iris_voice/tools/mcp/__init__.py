"""MCP tool servers: connections, lazy meta-tools, schema checks, results."""
