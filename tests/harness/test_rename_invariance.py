"""Renaming every sandbox tool changes no decision of the harness's guards.

The guards (scope, undo, confirmation, the skills' gates) must read declared semantics, never
names. Every sandbox tool gets a meaningless name (t001, t002..., same spec otherwise, same
handler); the skills' SKILL.md files, which name tools as data, are renamed the same way. Then
every bundled task's oracle and a set of guard-provoking scenarios run through the full harness
guard set under both namings, and every step, result, notice, confirmation request, final
phone state and verdict must be identical once the names are mapped back.

Not covered here: the Scenario Adapter's routing (η guidance and skill preloading), which
scores skills by the words of the tool names they list.
"""

from __future__ import annotations

import json
import re
import shutil
from typing import Any

import pytest
from scripted_actions import call_action

from pocketpilot.contracts import Delegate, Episode, ToolCall, ToolCallAction, ToolResult, ToolSpec
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.harness import HarnessConfig, Session
from pocketpilot.harness.planners.scripted import ScriptedPlanner
from pocketpilot.skills import SkillLibrary
from pocketpilot.skills.library import builtin_library_path
from pocketpilot.tasks import load_suite, prepare
from pocketpilot.tasks.oracle import oracle_actions

NAMES = SandboxPhone().registry().names()
NEW = {old: f"t{i:03d}" for i, old in enumerate(NAMES, start=1)}
OLD = {new: old for old, new in NEW.items()}
_NEW_NAME = re.compile(r"\bt\d{3}\b")
_OLD_NAME = re.compile(r"\b(" + "|".join(sorted(map(re.escape, NAMES), key=len, reverse=True)) + r")\b")
GUARDS = HarnessConfig(max_steps=12)
FINISH = {"kind": "finish", "summary": "done"}


def test_there_is_one_new_name_per_sandbox_tool() -> None:
    assert len(NAMES) == SandboxPhone().catalog().tool_count >= 150
    assert len(set(NEW.values())) == len(NAMES)
    assert not any(_NEW_NAME.fullmatch(n) for n in NAMES)  # a new name never collides with an old one


class Renamed:
    """The same executor with every tool under its new name (same spec otherwise, same handler)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def tools(self) -> list[ToolSpec]:
        return [s.model_copy(update={"name": NEW[s.name]}) for s in self.inner.tools()]

    async def call(self, call: ToolCall) -> ToolResult:
        return await self.inner.call(call.model_copy(update={"name": OLD.get(call.name, call.name)}))


class Recording:
    """Allows everything and records what it was asked, and as what."""

    reason = "recorded"

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        self.asked.append((call.name, spec.effect_label()))
        return True


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SkillLibrary]:
    """The built-in skills, and a copy whose SKILL.md files name the tools by their new names."""
    root = tmp_path_factory.mktemp("renamed") / "library"
    shutil.copytree(builtin_library_path(), root)
    for skill_md in root.glob("*/SKILL.md"):
        skill_md.write_text(_OLD_NAME.sub(lambda m: NEW[m.group(1)], skill_md.read_text()))
    renamed = SkillLibrary.from_dir(root)
    text = "".join(p.read_text() for p in root.glob("*/SKILL.md"))
    assert NEW["power_off"] in text and not _OLD_NAME.search(text)
    return {"plain": SkillLibrary.builtin(), "renamed": renamed}


def _forward(action: Any) -> Any:
    """An oracle action under the new names (the call names and delegated tools only)."""
    if isinstance(action, ToolCallAction):
        return ToolCallAction(calls=[c.model_copy(update={"name": NEW[c.name]}) for c in action.calls])
    if isinstance(action, Delegate):
        return action.model_copy(update={"tools": [NEW[t] for t in action.tools]})
    return action


def _back(text: str) -> str:
    return _NEW_NAME.sub(lambda m: OLD.get(m.group(0), m.group(0)), text)


def _decisions(episode: Episode) -> list[Any]:
    """What the guards decided, step by step: the action run, the results, the notices, sub-agents."""
    out = []
    for step in episode.steps:
        out.append({
            "action": step.action.model_dump(mode="json") if step.action else None,
            "results": [r.model_dump(mode="json") for r in step.results],
            "notices": step.notices,
            "error": step.error.model_dump(mode="json") if step.error else None,
            "children": [_decisions(c) for c in step.children],
        })
    return out


async def _run(task: Any, actions: list[Any], naming: str, library: SkillLibrary, request: str) -> dict[str, Any]:
    run = prepare(task)
    executor: Any = run.executor if naming == "plain" else Renamed(run.executor)
    if naming == "renamed":
        actions = [_forward(a) for a in actions]
    confirm = Recording()
    names = [t.name for t in executor.tools()]
    session = Session(ScriptedPlanner(actions), executor, config=GUARDS, confirm=confirm,
                      gates=library.always_on_gates(names), skills=library)
    episode = await session.run(request)
    if naming == "renamed":
        assert not _OLD_NAME.search(json.dumps(_decisions(episode)))  # the harness saw only the new names
        episode = Episode.model_validate_json(_back(episode.model_dump_json()))
    verdict = await run.verifier(episode)
    decisions = json.loads(re.sub(r'"[0-9a-f]{32}"', '"<episode id>"', json.dumps(_decisions(episode))))
    return {
        "decisions": decisions,
        "stop": (episode.stop_reason, episode.stop_detail),
        "asked": [(_back(name), label) for name, label in confirm.asked],
        "state": run.phone.state.model_dump(mode="json"),
        "verdict": verdict.model_dump(mode="json"),
    }


TASKS = [t for t in load_suite() if t.world is None]  # the sandbox's tools are what gets renamed


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_oracle_decisions_do_not_depend_on_tool_names(task: Any, libraries: dict[str, SkillLibrary]) -> None:
    actions = oracle_actions(task)
    plain = await _run(task, actions, "plain", libraries["plain"], task.goal)
    renamed = await _run(task, actions, "renamed", libraries["renamed"], task.goal)
    assert renamed == plain


SCENARIOS = {
    # the scope guard holds a setting nothing in the request names
    "scope": ("settings-wifi-off", "I'm heading into a meeting, turn on do not disturb.",
              [call_action("set_do_not_disturb", enabled=True), call_action("set_wifi", enabled=True), FINISH],
              "not_allowed"),
    # the undo guard holds the delete of the note this run just created
    "undo": ("ordering-parking-note-then-off", "Write down that I parked on level 3, bay 42.",
             [call_action("create_note", title="Parking", body="Level 3, bay 42"),
              call_action("delete_note", note_id="note-4"), FINISH], "not_allowed"),
    # a skill's gate holds power off before the note is saved
    "gate": ("ordering-parking-note-then-off", "Write down that I parked on level 3, bay 42, then switch the phone off.",
             [ToolCallAction(calls=[ToolCall(name="create_note", arguments={"title": "P", "body": "42"}),
                                    ToolCall(name="power_off")]), FINISH], "precondition_failed"),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_guard_decisions_do_not_depend_on_tool_names(name: str, libraries: dict[str, SkillLibrary]) -> None:
    task_id, request, actions, code = SCENARIOS[name]
    task = next(t for t in TASKS if t.id == task_id)
    plain = await _run(task, actions, "plain", libraries["plain"], request)
    codes = [r["error"]["code"] for s in plain["decisions"] for r in s["results"] if r.get("error")]
    assert code in codes, plain["decisions"]  # the guard really decided something here
    renamed = await _run(task, actions, "renamed", libraries["renamed"], request)
    assert renamed == plain


async def test_confirmation_asks_by_effect_under_either_naming(libraries: dict[str, SkillLibrary]) -> None:
    task = next(t for t in TASKS if t.id == "ordering-parking-note-then-off")
    actions = [call_action("create_note", title="Parking", body="Level 3, bay 42"), call_action("power_off"), FINISH]
    plain = await _run(task, actions, "plain", libraries["plain"], task.goal)
    renamed = await _run(task, actions, "renamed", libraries["renamed"], task.goal)
    assert plain["asked"] == [("power_off", "destructive")]
    assert renamed == plain
