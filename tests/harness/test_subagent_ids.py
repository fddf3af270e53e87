"""Sub-agents' episode ids: random by default; from the session's seeded source when given, at every depth."""

from __future__ import annotations

from pathlib import Path

from pocketpilot.contracts import Episode
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.ids import IdSource, SeededIds

SCRIPT = [
    {"kind": "delegate", "instruction": "Read the notes", "tools": ["list_notes"]},
    {"kind": "delegate", "instruction": "Read them once more", "tools": ["list_notes"]},  # a grandchild
    {"kind": "finish", "summary": "read"},
    {"kind": "finish", "summary": "read"},
    {"kind": "finish", "summary": "done"},
]


async def _run(trace_dir: Path, ids: IdSource | None = None) -> tuple[Episode, list[str]]:
    planner = ScriptedPlanner(SCRIPT)
    session = Session(planner, SandboxExecutor(SandboxPhone()), tools=["list_notes"], confirm=AllowAll(),
                      config=HarnessConfig(max_delegate_depth=2), trace_dir=trace_dir, subagent_ids=ids)
    episode = await session.run("Look at my notes")
    return episode, [r.model_dump_json() for r in planner.requests]


def _traces(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.jsonl"))


def _children(episode: Episode) -> list[str]:
    return [i for s in episode.steps for c in s.children for i in (c.header.episode_id, *_children(c))]


async def test_by_default_sub_agent_ids_are_random(tmp_path: Path) -> None:
    one, first = await _run(tmp_path)
    two, second = await _run(tmp_path)
    assert len(_children(one)) == 2 and not set(_children(one)) & set(_children(two))
    assert first != second  # the delegation's result shows the child's id


async def test_a_seeded_source_repeats_them_and_the_episode_keeps_a_random_id(tmp_path: Path) -> None:
    one, first = await _run(tmp_path, SeededIds("t"))
    two, second = await _run(tmp_path, SeededIds("t"))
    source = SeededIds("t")
    assert _children(one) == _children(two) == [source.new_id(), source.new_id()]
    assert first == second and any(_children(one)[0] in p for p in first)
    assert one.header.episode_id != two.header.episode_id
    assert _traces(tmp_path) == sorted([one.header.episode_id, two.header.episode_id])
