"""The `mcpstation` command line."""

from mcpstation.cli.app import app, main

__all__ = ["app", "main"]
