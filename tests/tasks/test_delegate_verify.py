"""Sub-agent evidence: delegations, their confirmation and artifacts, and the children's calls."""

from __future__ import annotations

from typing import Any

import pytest
from _task_episodes import good, make_episode
from pydantic import TypeAdapter, ValidationError

from pocketpilot.contracts import Delegate, Finish, Step
from pocketpilot.errors import TaskSpecError
from pocketpilot.executor.sandbox import default_state
from pocketpilot.tasks import OracleStep, check_criterion, oracle_actions, parse_task
from pocketpilot.tasks.spec import Criterion

CRITERION: TypeAdapter[Criterion] = TypeAdapter(Criterion)


def _with_child(delegate: Delegate, child_steps: list[Any], child_stop: str = "finish", before: list[Any] = ()) -> Any:
    child = make_episode(*child_steps, stop=child_stop)  # type: ignore[arg-type]
    parent = make_episode(*before, delegate, Finish(summary="done"))
    index = len(before)
    steps = list(parent.steps)
    steps[index] = Step(index=index, context_digest="d", action=delegate, results=[], children=[child])
    return parent.model_copy(update={"steps": steps})


def check(data: dict[str, Any], episode: Any) -> Any:
    state = default_state()
    return check_criterion(CRITERION.validate_python(data), state, state, episode)


def test_delegated_needs_a_confirmed_child_with_matching_artifacts() -> None:
    d = Delegate(instruction="Text Sam the note id", tools=["send_sms"], artifacts={"note_id": "note-4"})
    done = _with_child(d, [good("send_sms", {"to": "Sam"}), Finish(summary="sent")])
    assert check({"kind": "delegated", "artifacts": {"note_id": "note-4"}}, done).passed
    assert check({"kind": "delegated", "instruction": "sam"}, done).passed
    assert check({"kind": "delegated", "artifact_values": ["NOTE-4"]}, done).passed  # any key
    assert not check({"kind": "delegated", "artifact_values": ["note-4", "event-3"]}, done).passed
    wrong = check({"kind": "delegated", "artifacts": {"note_id": "note-5"}}, done)
    assert not wrong.passed and "note-4" in wrong.detail
    unconfirmed = _with_child(d, [good("send_sms")], child_stop="max_steps")
    result = check({"kind": "delegated"}, unconfirmed)
    assert not result.passed and "confirmed=False" in result.detail
    assert check({"kind": "delegated", "confirmed": False}, unconfirmed).passed
    none = check({"kind": "delegated"}, make_episode(Finish(summary="done")))
    assert not none.passed and none.detail == "no delegate action"


def test_children_calls_count_as_evidence_and_keep_their_order() -> None:
    d = Delegate(instruction="save it")
    episode = _with_child(
        d, [good("create_note", {"title": "x"}), good("send_sms", {"to": "Sam"}), Finish(summary="ok")],
        before=[good("get_settings")],
    )
    assert check({"kind": "call", "tool": "create_note"}, episode).passed
    order = check({"kind": "order", "before": {"tool": "create_note"}, "after": {"tool": "send_sms"}}, episode)
    assert order.passed and order.detail == "step 1.0 before step 1.1"
    parent_first = check({"kind": "order", "before": {"tool": "get_settings"}, "after": {"tool": "create_note"}}, episode)
    assert parent_first.passed
    reversed_ = check({"kind": "order", "before": {"tool": "send_sms"}, "after": {"tool": "create_note"}}, episode)
    assert not reversed_.passed and "step 1.1" in reversed_.detail
    no_call = check({"kind": "no_call", "tool": "send_sms"}, episode)
    assert not no_call.passed and "step 1.1" in no_call.detail


def _task(oracle: list[dict[str, Any]], tools: list[str]) -> Any:
    return parse_task(
        {"id": "deleg-demo", "goal": "g", "capability": "delegation", "group": "subagent", "split": "dev",
         "tools": tools, "criteria": [{"kind": "delegated"}], "oracle": oracle},
        "inline",
    )


def test_oracle_flattens_a_delegation_into_the_planner_sequence() -> None:
    task = _task(
        [{"delegate": {"instruction": "save", "tools": ["create_note"], "artifacts": {"a": "b"},
                       "steps": [{"call": "create_note", "args": {"title": "t"}}, {"finish": "saved note-4"}]}},
         {"finish": "done"}],
        ["notes"],
    )
    kinds = [a.kind for a in oracle_actions(task)]
    assert kinds == ["delegate", "tool_call", "finish", "finish"]
    assert oracle_actions(task)[0].artifacts == {"a": "b"}


@pytest.mark.parametrize(
    ("oracle", "reason"),
    [
        ([{"delegate": {"instruction": "x", "tools": ["power_off"], "steps": [{"finish": "ok"}]}}, {"finish": "d"}],
         "delegates 'power_off'"),
        ([{"delegate": {"instruction": "x", "tools": ["create_note"], "steps": [{"call": "list_notes"}, {"finish": "ok"}]}},
          {"finish": "d"}], "delegate.steps[0]: calls 'list_notes'"),
    ],
)
def test_delegations_only_use_exposed_tools(oracle: list[dict[str, Any]], reason: str) -> None:
    with pytest.raises(TaskSpecError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        _task(oracle, ["notes"])


def test_a_delegated_run_must_end_with_one_final_step_and_cannot_nest() -> None:
    with pytest.raises(ValidationError, match="ends with exactly one final step"):
        OracleStep.model_validate({"delegate": {"instruction": "x", "steps": [{"call": "list_notes"}]}})
    nested = {"delegate": {"instruction": "x", "steps": [{"finish": "ok"}]}}
    with pytest.raises(ValidationError, match="cannot delegate further"):
        OracleStep.model_validate({"delegate": {"instruction": "x", "steps": [nested, {"finish": "ok"}]}})
    with pytest.raises(ValidationError, match="exactly one of"):
        OracleStep.model_validate({"call": "list_notes", "memory_search": "q"})
