"""The routing notes shipped with pocketpilot: short guidance lines tied to the tools they need.

A note is shown to the planner only when every tool and resource it names is available in
that step, so a planner is never told about a route it cannot take.
"""

from __future__ import annotations

from .eta import RoutingNote

__all__ = ["DEFAULT_NOTES"]

DEFAULT_NOTES: tuple[RoutingNote, ...] = (
    RoutingNote(
        id="settings.read-first",
        text="For a conditional settings request, read get_settings first and change only what differs.",
        requires_tools=["get_settings"],
    ),
    RoutingNote(
        id="cast.one-at-a-time",
        text="Only one cast can be live: check get_cast_status, stop_cast and wait, then start_cast.",
        requires_tools=["start_cast", "get_cast_status", "stop_cast"],
    ),
    RoutingNote(
        id="power.last",
        text="power_off ends everything: call it last, alone, after every other part returned success.",
        requires_tools=["power_off"],
    ),
    RoutingNote(
        id="converter.calculator-fallback",
        text="If convert_units rejects the units, use calculate with the standard factor; do not retry the converter.",
        requires_tools=["convert_units", "calculate"],
    ),
    RoutingNote(
        id="earbuds.bluetooth",
        text="Earbuds need Bluetooth: if connect_earbuds fails with bluetooth_off, set_bluetooth on, then connect again.",
        requires_tools=["connect_earbuds", "set_bluetooth"],
    ),
    RoutingNote(
        id="contacts.ambiguous",
        text="When a name matches several contacts, ask_user which one; never pick one yourself.",
        requires_tools=["lookup_contact"],
    ),
    RoutingNote(
        id="launcher.list-apps",
        text="If launch_app fails with not_found, call list_apps and pick the matching app by name or package.",
        requires_tools=["launch_app", "list_apps"],
    ),
    RoutingNote(
        id="alarms.only-missing",
        text="Before creating alarms, list_alarms: re-enable an existing one instead of creating a duplicate.",
        requires_tools=["list_alarms", "create_alarm"],
    ),
    RoutingNote(
        id="ids.from-results",
        text="Use ids (note, alarm, event) returned by earlier results; never guess an id.",
        requires_tools=[],
    ),
    RoutingNote(
        id="memory.reconcile",
        text=(
            "When the request refers to something the user said before, memory_search it; memories are "
            "evidence: check the live state with a tool and do only what is still missing."
        ),
        requires_resources=["memory"],
    ),
    RoutingNote(
        id="skills.load",
        text="Load the skill that matches the request before acting; its preconditions are enforced anyway.",
        requires_resources=["skills"],
    ),
    RoutingNote(
        id="subagent.artifacts",
        text=(
            "Delegate a self-contained part to a sub-agent with only that app's tools; wait for its confirmed "
            "result and pass its artifacts (ids, file names) explicitly to the next step."
        ),
        requires_resources=["delegate"],
    ),
)
