"""A small world from outside pocketpilot: a greenhouse with plants, a thermostat and a power switch.

It stands for an app team's own package: pocketpilot imports it only because a task file
beside it names it in its ``world:`` section.
"""
