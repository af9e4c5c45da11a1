"""`python -m mcpstation` runs the CLI."""

from mcpstation.cli import main

main()
