"""pocketpilot.skills."""
