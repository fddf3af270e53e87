"""Task memories: seeded into a store for the harness, replayed as earlier conversation for the bare planner."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pocketpilot.errors import TaskSpecError
from pocketpilot.tasks import TaskSpec, load_suite, parse_task
from pocketpilot.tasks.memory_seed import open_task_memory, prior_conversation

SUITE = {t.id: t for t in load_suite()}


def _task(memory: list[dict]) -> TaskSpec:
    return parse_task(
        {
            "id": "seed-demo",
            "goal": "Set the brightness to my evening level.",
            "capability": "recall",
            "group": "memory",
            "split": "dev",
            "tools": ["settings"],
            "memory": memory,
            "criteria": [{"kind": "state", "path": "settings.brightness", "equals": 30}],
        },
        "inline",
    )


def _seed(content: str, day: int, **kw: object) -> dict:
    return {"content": content, "created_at": f"2025-03-{day:02d}T18:00:00+01:00", **kw}


async def test_seeds_land_active_with_provenance_and_owner_isolation() -> None:
    task = _task([
        _seed("My evening brightness is 30.", 5, tier="user", category="preference"),
        _seed("My evening brightness is 90.", 7, tier="user", owner="guest"),
        _seed("Done, brightness is 30.", 6, source="episode"),
    ])
    memory = open_task_memory(task)
    try:
        assert [r.status for r in memory.seeded] == ["active", "active", "active"]
        hits = await memory.bound.search("evening brightness", k=5)
        contents = [h.content for h in hits]
        assert "My evening brightness is 30." in contents
        assert "My evening brightness is 90." not in contents  # another owner's memory never shows
        mine = next(h for h in hits if h.content == "My evening brightness is 30.")
        assert mine.tier == "user"
        assert mine.provenance["source"] == "user_statement"
        assert mine.provenance["owner"] == "user"
        observed = datetime.fromisoformat(mine.provenance["observed_at"])
        assert observed == datetime(2025, 3, 5, 17, 0, tzinfo=UTC)
        ack = next(h for h in hits if h.content.startswith("Done"))
        assert ack.provenance["source"] == "episode"
    finally:
        memory.close()


async def test_a_newer_seed_for_the_same_fact_supersedes_the_older() -> None:
    task = SUITE["mem-distractor-cast-superseded"]
    memory = open_task_memory(task)
    try:
        old, new = memory.seeded
        assert new.status == "active" and new.superseded == old.id
        hits = await memory.bound.search("preferred TV", k=5)
        assert [h.content for h in hits][0].startswith("My preferred TV is the Living Room TV")
        assert all("Bedroom TV." not in h.content for h in hits)
    finally:
        memory.close()


def test_prior_conversation_roles_order_owner_and_budget() -> None:
    task = _task([
        _seed("My evening brightness is 30.", 5, tier="user"),
        _seed("Done, brightness is 30.", 6, source="episode"),
        _seed("My evening brightness is 90.", 7, owner="guest"),
        _seed("I had pasta for lunch.", 3),
    ])
    count = lambda text: len(text.split())  # noqa: E731
    messages = prior_conversation(task, count, budget=1000)
    assert [m.content.split(") ", 1)[1] for m in messages] == [
        "I had pasta for lunch.",
        "My evening brightness is 30.",
        "Done, brightness is 30.",
    ]
    assert [m.role for m in messages] == ["user", "user", "assistant"]
    assert messages[0].content.startswith("(2025-03-03 18:00)")
    # over budget: the oldest message goes first, whole
    costs = [count(m.content) for m in messages]
    trimmed = prior_conversation(task, count, budget=costs[1] + costs[2])
    assert [m.content for m in trimmed] == [m.content for m in messages[1:]]
    assert prior_conversation(task, count, budget=0) == []


@pytest.mark.parametrize(
    ("seed", "reason"),
    [
        ({"content": "x"}, "created_at"),
        ({"content": "", "created_at": "2025-03-01T10:00:00+01:00"}, "content"),
        ({"content": "x", "created_at": "2025-03-01T10:00:00+01:00", "tier": "review"}, "tier"),
        ({"content": "x", "created_at": "2025-03-01T10:00:00+01:00", "owner": "*shared*"}, "owner"),
        ({"content": "x", "created_at": "2025-03-01T10:00:00+01:00", "source": "rumour"}, "source"),
        ({"content": "x", "created_at": "2025-03-01T10:00:00+01:00", "colour": "red"}, "colour"),
    ],
)
def test_bad_memory_seeds_are_refused_naming_the_field(seed: dict, reason: str) -> None:
    with pytest.raises(TaskSpecError) as err:
        _task([seed])
    assert f"memory.0.{reason}" in str(err.value)


def test_every_bundled_seed_is_stored_as_active_evidence() -> None:
    """Seeds dated in March 2025 must not turn stale on the wall clock, nor fall into review."""
    for task in SUITE.values():
        if not task.memory:
            continue
        memory = open_task_memory(task)
        try:
            statuses = {r.status for r in memory.seeded}
        finally:
            memory.close()
        assert statuses == {"active"}, (task.id, statuses)


async def test_prepare_opens_the_seeded_store_only_when_asked() -> None:
    from pocketpilot.tasks import prepare

    task = SUITE["mem-recall-reading-brightness"]
    assert prepare(task).memory is None
    run = prepare(task, memory=True)
    try:
        assert run.memory is not None and len(run.memory.seeded) == len(task.memory)
        hits = await run.memory.bound.search("reading brightness", k=3)
        assert hits[0].content == "When I read on the phone I want brightness 70."
    finally:
        run.close()
