"""mcpstation."""
