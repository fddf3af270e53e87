"""pocketpilot.adapters."""
