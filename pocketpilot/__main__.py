"""`python -m pocketpilot` is the CLI."""

from .cli.main import main

main()
