"""Deleted memories vanish from what the planner saw, not only from Step.retrieved."""

from __future__ import annotations

from pocketpilot.contracts import (
    Episode,
    EpisodeHeader,
    MemorySearch,
    PlannerInfo,
    RetrievedMemory,
    Step,
    ToolResult,
)
from pocketpilot.memory.export import scrub_episode


def _episode() -> Episode:
    hits = [RetrievedMemory(id=i, tier="user", content=f"fact {i}", score=1.0) for i in ("m1", "m2")]
    step = Step(
        index=0,
        context_digest="d",
        action=MemorySearch(query="facts"),
        results=[ToolResult.success({"memories": [{"id": h.id, "content": h.content} for h in hits]})],
        retrieved=hits,
    )
    header = EpisodeHeader(episode_id="e", request="r", planner=PlannerInfo(backend="x", model="m"))
    child = Episode(header=header.model_copy(update={"episode_id": "c"}), steps=[step])
    parent_step = step.model_copy(update={"index": 1, "children": [child]})
    return Episode(header=header, steps=[step, parent_step])


def test_scrub_removes_deleted_hits_from_results_and_children() -> None:
    scrubbed = scrub_episode(_episode(), ["m1"])
    for step in (scrubbed.steps[0], scrubbed.steps[1].children[0].steps[0]):
        assert [m.id for m in step.retrieved] == ["m2"]
        assert [m["id"] for m in step.results[0].data["memories"]] == ["m2"]
    assert "fact m1" not in scrubbed.model_dump_json()


def test_scrub_without_deletions_is_identity() -> None:
    episode = _episode()
    assert scrub_episode(episode, []) == episode
