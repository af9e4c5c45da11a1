"""MCP servers the station ships: `python -m mcpstation.servers.<name>`."""
