"""What the station offers an LLM beyond its servers' tools: the management tools."""

from mcpstation.adapters.management import MANAGEMENT_SERVER, management_tools, run_management_tool

__all__ = ["MANAGEMENT_SERVER", "management_tools", "run_management_tool"]
