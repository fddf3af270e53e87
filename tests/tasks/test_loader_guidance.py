"""A task or its folder carries an operating policy, context budgets and n_ctx: read, merged, refused.

Precedence, nearest first: the task's own field, the folder's ``_defaults.yaml``, the defaults
(the CLI's flags over all of them are tested in ``tests/cli/test_every_flag.py``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from pocketpilot.errors import TaskSpecError
from pocketpilot.tasks import load_suite, load_task
from pocketpilot.tasks.loader import folder_defaults

WORLD_DIR = Path(__file__).resolve().parent / "outside_world"
CALIBRATION_LOG = Path(__file__).resolve().parents[2] / "bench" / "results" / "calibration" / "outcomes.jsonl"


def _task(**extra: object) -> dict:
    return {
        "id": "policy-wifi-off", "goal": "Turn off wifi please", "capability": "single_tool", "split": "dev",
        "tools": ["settings"], "criteria": [{"kind": "state", "path": "settings.wifi", "equals": False}],
        **extra,
    }


def _write(folder: Path, name: str, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_task_reads_its_guidance_text_and_files_beside_it(tmp_path: Path) -> None:
    (tmp_path / "policy.md").write_text("Always read the APN settings before resetting them.\n")
    path = _write(tmp_path, "t.yaml", _task(guidance=["Be brief.", {"file": "policy.md"}],
                                            budget={"guidance": 7000}, n_ctx=16384))
    task = load_task(path)
    assert task.guidance_texts() == ["Be brief.", "Always read the APN settings before resetting them.\n"]
    assert task.guidance[1].file == "policy.md"  # kept for the record
    assert task.budget == {"guidance": 7000} and task.n_ctx == 16384


def test_a_single_string_is_one_guidance_entry(tmp_path: Path) -> None:
    task = load_task(_write(tmp_path, "t.yaml", _task(guidance="Never reset without reading first.")))
    assert task.guidance_texts() == ["Never reset without reading first."]


def test_the_digest_covers_the_policy_text_not_only_the_file_name(tmp_path: Path) -> None:
    (tmp_path / "policy.md").write_text("version one")
    path = _write(tmp_path, "t.yaml", _task(guidance=[{"file": "policy.md"}]))
    before = load_task(path).digest()
    (tmp_path / "policy.md").write_text("version two")
    assert load_task(path).digest() != before


RECORDED_DIGESTS = {
    # bundled dev tasks' digests as recorded before the run settings and the answer form existed
    "health-info-hr-mar05": "d411d2847455d16113e8ea1136192d225f4c96122bc4d8c66a3032060d46c57e",
    "health-steps-yesterday": "f682529dbc227d5ab4693ab545ef3ebfe9f332a8ae96510bcef9a558b41fc062",
    "mem-units-miles-42k": "44acabc94539daed3f26fc7116684faa433748848ed857c11d022f47aeb5c16d",
    "settings-wifi-off": "f2267ff5d2ba054505f70d0521a55f383dcea3573237d729d9b8e328e46c666a",
}


def test_a_task_without_the_new_fields_keeps_its_recorded_digest() -> None:
    """Outcome logs record each task's digest: adding fields to the spec must not invalidate them.

    Checked on bundled tasks (three with an answer criterion) against digests recorded before the
    fields existed, and on the outcome log's lines for tasks that are still the ones it ran (a
    regenerated task under the same id is another task: ``bench --resume`` runs it again).
    """
    from pocketpilot.tasks.suite import load_generated_suite

    bundled = {t.id: t for t in load_suite()}
    assert {i: bundled[i].digest() for i in RECORDED_DIGESTS} == RECORDED_DIGESTS
    tasks = {t.id: t for t in [*bundled.values(), *load_generated_suite()]}
    lines = CALIBRATION_LOG.read_text().splitlines()
    assert lines
    for line in lines:
        outcome = json.loads(line)
        if outcome["task_id"] in bundled:
            assert tasks[outcome["task_id"]].digest() == outcome["task_digest"], outcome["task_id"]


def test_folder_defaults_apply_under_the_tasks_own_fields(tmp_path: Path) -> None:
    (tmp_path / "policy.md").write_text("The folder's operating policy.")
    _write(tmp_path, "_defaults.yaml", {"guidance": [{"file": "policy.md"}], "budget": {"guidance": 5000, "tools": 4000},
                                        "n_ctx": 16384})
    _write(tmp_path, "a.yaml", _task())
    _write(tmp_path, "b.yaml", _task(id="policy-wifi-off-b", goal="Switch the wifi off",
                                     guidance=["Only this task's note."], budget={"guidance": 9000}, n_ctx=32768))
    tasks = {t.id: t for t in load_suite(directory=tmp_path)}
    assert set(tasks) == {"policy-wifi-off", "policy-wifi-off-b"}  # _defaults.yaml is not a task
    a, b = tasks["policy-wifi-off"], tasks["policy-wifi-off-b"]
    assert a.guidance_texts() == ["The folder's operating policy."]
    assert a.budget == {"guidance": 5000, "tools": 4000} and a.n_ctx == 16384
    assert b.guidance_texts() == ["Only this task's note."]  # the task's own guidance replaces the folder's
    assert b.budget == {"guidance": 9000, "tools": 4000} and b.n_ctx == 32768  # budget: section by section
    # the same file run alone gets the same defaults (a task means one thing, with or without its folder)
    assert load_task(tmp_path / "a.yaml").guidance_texts() == a.guidance_texts()


def test_a_task_opts_out_of_the_folder_policy_with_an_empty_list(tmp_path: Path) -> None:
    _write(tmp_path, "_defaults.yaml", {"guidance": "Folder policy."})
    assert load_task(_write(tmp_path, "t.yaml", _task(guidance=[]))).guidance_texts() == []


def test_a_world_folder_with_defaults_still_imports_its_modules(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    shutil.copytree(WORLD_DIR, folder)
    _write(folder, "_defaults.yaml", {"guidance": "Greenhouse policy: water before noon."})
    tasks = load_suite(directory=folder)
    assert len(tasks) == len(load_suite(directory=WORLD_DIR))
    assert all(t.guidance_texts() == ["Greenhouse policy: water before noon."] for t in tasks)
    assert all(t.roots for t in tasks)


@pytest.mark.parametrize(("defaults", "culprit"), [
    ({"guidance": [{"file": "missing.md"}]}, "cannot read guidance file"),
    ({"budget": {"memory": 10}}, "budget"),
    ({"n_ctx": 100}, "n_ctx"),
    ({"max_step": 3}, "max_step"),
])
def test_bad_folder_defaults_are_one_line_errors(tmp_path: Path, defaults: dict, culprit: str) -> None:
    _write(tmp_path, "_defaults.yaml", defaults)
    _write(tmp_path, "t.yaml", _task())
    with pytest.raises(TaskSpecError) as exc:
        load_suite(directory=tmp_path)
    assert culprit in str(exc.value) and "_defaults.yaml" in str(exc.value)


@pytest.mark.parametrize(("extra", "culprit"), [
    ({"guidance": [{"file": "nope.md"}]}, "cannot read guidance file"),
    ({"guidance": [{}]}, "guidance"),
    ({"budget": {"guidance": 0}}, "budget"),
    ({"n_ctx": 64}, "n_ctx"),
])
def test_bad_task_settings_are_one_line_errors(tmp_path: Path, extra: dict, culprit: str) -> None:
    with pytest.raises(TaskSpecError) as exc:
        load_task(_write(tmp_path, "t.yaml", _task(**extra)))
    assert culprit in str(exc.value) and "t.yaml" in str(exc.value)


def test_an_empty_guidance_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "policy.md").write_text("  \n")
    with pytest.raises(TaskSpecError, match="is empty"):
        load_task(_write(tmp_path, "t.yaml", _task(guidance=[{"file": "policy.md"}])))


def test_a_folder_without_defaults_has_none(tmp_path: Path) -> None:
    defaults = folder_defaults(tmp_path)
    assert defaults.guidance == [] and defaults.budget == {} and defaults.n_ctx is None
