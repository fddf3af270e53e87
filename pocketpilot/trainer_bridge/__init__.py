"""pocketpilot.trainer_bridge."""
