"""Task files: loading, and every way a bad file is refused with a one-line reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pocketpilot.errors import TaskSpecError
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.tasks import (
    TaskSpec,
    build_state,
    check_splits,
    exposed_tools,
    load_suite,
    load_task,
    prepare,
)

GOOD: dict[str, Any] = {
    "id": "wifi-off",
    "goal": "Turn off the wifi.",
    "capability": "single_tool",
    "split": "dev",
    "tools": ["settings", "power_off"],
    "initial_state": {"settings": {"brightness": 30}},
    "criteria": [
        {"kind": "state", "path": "settings.wifi", "equals": False},
        {"kind": "unchanged", "allow": ["settings.wifi"]},
    ],
    "oracle": [{"call": "set_wifi", "args": {"enabled": False}}, {"finish": "done"}],
}


def write(tmp_path: Path, data: Any, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def with_(**changes: Any) -> dict[str, Any]:
    return {**GOOD, **changes}


def test_loads_yaml_and_json(tmp_path: Path) -> None:
    task = load_task(write(tmp_path, GOOD))
    assert task.id == "wifi-off" and task.group == "tool_use" and task.max_steps == 10
    assert load_task(write(tmp_path, json.dumps(GOOD), "task.json")) == task


def test_initial_state_is_a_deep_patch_over_the_default(tmp_path: Path) -> None:
    state = build_state(load_task(write(tmp_path, GOOD)))
    assert state.settings.brightness == 30 and state.settings.wifi is True  # sibling keys kept
    assert len(state.notes.items) == 3


def test_exposed_tools_expand_apps() -> None:
    task = TaskSpec.model_validate(GOOD)
    assert exposed_tools(task) == [
        "get_settings",
        "set_wifi",
        "set_bluetooth",
        "set_do_not_disturb",
        "set_brightness",
        "set_ring_mode",
        "power_off",
    ]
    assert exposed_tools(TaskSpec.model_validate(with_(tools="all"))) == SandboxPhone().tool_names()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("id: [unclosed", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping"),
        (with_(goal=""), "goal"),
        (with_(capability="telepathy"), "capability"),
        (with_(split="train"), "split"),
        (with_(id="Bad Id!"), "id"),
        (with_(criteria=[]), "criteria"),
        (with_(surprise=1), "surprise"),
        (with_(tools=["settings", "teleport"]), "unknown tool 'teleport' in tools"),
        (with_(domains=["radio"]), "unknown domain 'radio'"),
        (with_(criteria=[{"kind": "vibes"}]), "criteria.0"),
        (
            with_(criteria=[{"kind": "state", "path": "settings.wify", "equals": False}]),
            "criteria[0]: bad path 'settings.wify'",
        ),
        (with_(criteria=[{"kind": "unchanged", "allow": ["notes.items.first"]}]), "criteria[0]: bad path"),
        (with_(criteria=[{"kind": "call", "tool": "teleport"}]), "criteria[0]: unknown tool 'teleport'"),
        (with_(criteria=[{"kind": "call", "tool": "send_sms"}]), "does not expose"),
        (
            with_(
                criteria=[{"kind": "order", "before": {"tool": "set_wifi"}, "after": {"tool": "start_cast"}}]
            ),
            "does not expose",
        ),
        (with_(criteria=[{"kind": "no_call", "tool": "blast"}]), "unknown tool 'blast'"),
        (with_(initial_state={"settings": {"brightness": 500}}), "initial_state: settings.brightness"),
        (with_(initial_state={"radio": {}}), "initial_state"),
        (
            with_(oracle=[{"call": "send_sms", "args": {"to": "x", "body": "y"}}, {"finish": "x"}]),
            "oracle[0]",
        ),
        (with_(oracle=[{"call": "set_wifi", "args": {"enabled": False}}]), "must end with"),
        (with_(oracle=[{"finish": "a"}, {"finish": "b"}]), "only the last"),
        (with_(oracle=[{"call": "set_wifi", "finish": "x"}]), "exactly one"),
    ],
)
def test_bad_task_files_are_refused_in_one_line(tmp_path: Path, data: Any, reason: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(TaskSpecError) as info:
        load_task(path)
    message = str(info.value)
    assert reason in message, message
    assert "\n" not in message and str(path) in message


def test_bad_json_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TaskSpecError, match="not valid JSON"):
        load_task(write(tmp_path, "{nope", "task.json"))
    with pytest.raises(TaskSpecError, match="cannot read"):
        load_task(tmp_path / "absent.yaml")


def test_suite_directory_with_overlapping_ids_is_refused(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "a.yaml")
    write(tmp_path, with_(split="test"), "b.yaml")
    with pytest.raises(TaskSpecError, match="'wifi-off' appears twice"):
        load_suite(directory=tmp_path)


def test_suite_with_a_goal_shared_across_splits_is_refused(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "a.yaml")
    write(tmp_path, with_(id="wifi-off-2", split="test", goal="turn off  the WIFI."), "b.yaml")
    with pytest.raises(TaskSpecError, match="repeats the goal"):
        load_suite(directory=tmp_path)
    # the same goal within one split is a variant, not a leak
    check_splits([TaskSpec.model_validate(GOOD), TaskSpec.model_validate(with_(id="wifi-off-2"))])


def test_suite_directory_filters_by_split(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "a.yaml")
    write(tmp_path, with_(id="other", goal="Turn on the wifi.", split="test"), "b.yaml")
    assert [t.id for t in load_suite("test", directory=tmp_path)] == ["other"]
    with pytest.raises(TaskSpecError, match="unknown split 'train'"):
        load_suite("train")  # type: ignore[arg-type]


def test_a_folder_loaded_again_is_reused_until_a_file_in_it_changes(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "a.yaml")
    first = load_suite(directory=tmp_path)
    assert load_suite(directory=tmp_path)[0] is first[0]  # built once per process
    write(tmp_path, with_(goal="Turn off the wifo."), "a.yaml")  # same size, one byte other
    assert [t.goal for t in load_suite(directory=tmp_path)] == ["Turn off the wifo."]
    (tmp_path / "policy.md").write_text("Ask first.", encoding="utf-8")
    write(tmp_path, with_(guidance=[{"file": "policy.md"}]), "a.yaml")
    assert load_suite(directory=tmp_path)[0].guidance[0].text == "Ask first."
    (tmp_path / "policy.md").write_text("Ask later", encoding="utf-8")  # a file beside the tasks counts too
    assert load_suite(directory=tmp_path)[0].guidance[0].text == "Ask later"


def test_prepare_from_a_path_and_an_invalid_spec(tmp_path: Path) -> None:
    run = prepare(write(tmp_path, GOOD))
    assert run.phone.state.settings.brightness == 30
    assert [t.name for t in run.executor.tools()][-1] == "power_off"
    bad = TaskSpec.model_validate(with_(tools=["nothing"]))
    with pytest.raises(TaskSpecError, match="unknown tool 'nothing'"):
        prepare(bad)


def test_a_bundled_task_by_id_is_the_suites_task_and_an_unknown_id_is_none() -> None:
    from pocketpilot.tasks.loader import bundled_task

    suite = {t.id: t for t in load_suite()}
    for task_id in ("ordering-parking-note-then-off", sorted(suite)[0], sorted(suite)[-1]):
        assert bundled_task(task_id) == suite[task_id]
    assert bundled_task("no-such-task") is None
    assert bundled_task("../tasks/data/ordering-parking-note-then-off") is None  # an id, never a path
