"""What a ``memory_search`` shows the planner: each hit's source kind and when it was said.

The guards decide by provenance (the owner's statement or a tool result) and the recall dates
each memory by when it was observed; a search that showed neither, or the time the store wrote
an imported history, would show the planner two wishes of one day with nothing to tell them
apart.
"""

from __future__ import annotations

from datetime import datetime

from pocketpilot.contracts import MemorySearch
from pocketpilot.harness.actions import memory_search
from pocketpilot.tasks import parse_task
from pocketpilot.tasks.memory_seed import open_task_memory


def _task() -> object:
    return parse_task(
        {
            "id": "search-evidence",
            "goal": "Set the brightness to my evening level.",
            "capability": "recall",
            "group": "memory",
            "split": "dev",
            "tools": ["settings"],
            "memory": [
                {"content": "My evening brightness is 30.", "created_at": "2025-03-05T18:00:00+01:00",
                 "tier": "user", "category": "preference"},
                {"content": "The evening brightness tool returned 45.", "created_at": "2025-03-07T18:00:00+01:00",
                 "source": "tool_result"},
            ],
            "criteria": [{"kind": "state", "path": "settings.brightness", "equals": 30}],
        },
        "inline",
    )


async def test_a_search_hit_says_who_said_it_and_when_it_was_said() -> None:
    memory = open_task_memory(_task())  # type: ignore[arg-type]
    try:
        routed = await memory_search(memory.bound, MemorySearch(query="evening brightness", k=5))
    finally:
        memory.close()
    shown = {m["content"]: m for m in routed.results[0].data["memories"]}
    wish, tool = shown["My evening brightness is 30."], shown["The evening brightness tool returned 45."]
    assert (wish["source"], tool["source"]) == ("user_statement", "tool_result")
    assert datetime.fromisoformat(wish["when"]) == datetime.fromisoformat("2025-03-05T18:00:00+01:00")
    assert datetime.fromisoformat(tool["when"]) > datetime.fromisoformat(wish["when"])
