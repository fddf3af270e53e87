"""The test split is frozen: its ids and file hashes are recorded, and nothing in the product names a test task."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pocketpilot.tasks import split_lock

ROOT = Path(__file__).resolve().parents[2]


def test_the_test_split_matches_its_record():
    found = split_lock.drift()
    assert not found, (
        f"the frozen test split changed: {dict(found)}; if that is intended, re-record it with "
        "`python -m pocketpilot.tasks.split_lock --write` in a commit that says why"
    )
    assert len(split_lock.recorded_test_split()) == len(split_lock.current_test_split()) > 0


def test_an_edit_an_addition_or_a_removal_is_caught(tmp_path):
    data, lock = tmp_path / "data", tmp_path / "lock.json"
    shutil.copytree(split_lock.DATA, data)
    split_lock.write_lock(data, lock)
    assert not split_lock.drift(data, lock)
    tests = sorted(p for p in data.glob("*.yaml") if re.search(r"^split: *test\b", p.read_text(), re.M))
    edited, removed = tests[0], tests[1]
    edited.write_text(edited.read_text().replace("goal:", "goal: (reworded)", 1))
    removed.unlink()
    dev = next(p for p in data.glob("*.yaml") if re.search(r"^split: *dev\b", p.read_text(), re.M))
    dev.write_text(re.sub(r"^split: *dev\b", "split: test", dev.read_text(), flags=re.M))
    found = split_lock.drift(data, lock)
    assert found["changed"] == [edited.stem] and found["removed"] == [removed.stem]
    assert found["added"] == [dev.stem]


def test_a_hand_edited_record_is_refused(tmp_path):
    record = json.loads(split_lock.LOCK_FILE.read_text())
    first = next(iter(record["tasks"]))
    record["tasks"][first] = "0" * 64  # "fixed" by hand, digest left as it was
    lock = tmp_path / "lock.json"
    lock.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="digest"):
        split_lock.recorded_test_split(lock)


def _test_ids() -> set[str]:
    return set(split_lock.current_test_split()) | set(split_lock.recorded_test_split())


def _citations(paths, ids) -> list[tuple[str, str]]:
    """(file, task id) for each test-split id a file names, quoted or bare (``x-2`` does not name ``x``)."""
    # one pass a file: bounded by characters no id holds, two whole ids never overlap
    any_id = re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, sorted(ids, key=len, reverse=True)))})(?![\w-])")
    found = set()
    for p in paths:
        for t in any_id.findall(Path(p).read_text(encoding="utf-8")):
            found.add((str(Path(p).relative_to(ROOT)) if Path(p).is_relative_to(ROOT) else str(p), t))
    return sorted(found)


def test_no_product_code_or_bench_names_a_test_task():
    sources = [*ROOT.joinpath("pocketpilot").rglob("*.py"), *ROOT.joinpath("pocketpilot").rglob("*.md"),
               *ROOT.joinpath("bench").rglob("*.py")]
    assert _citations(sources, _test_ids()) == []


def test_no_test_or_bench_script_names_a_test_task():
    """Tests and bench scripts use dev/evolve tasks, or build one inline: never a frozen test task."""
    sources = [*ROOT.joinpath("tests").rglob("*.py"), *ROOT.joinpath("bench").glob("*.py")]
    assert len(sources) > 10
    cited = _citations(sources, _test_ids())
    assert cited == [], "test-split task ids cited (file, id): " + ", ".join(f"{f}: {t}" for f, t in cited)


def test_the_citation_scan_catches_a_quoted_id_and_only_a_whole_one(tmp_path):
    ids = _test_ids()
    first = sorted(ids)[0]
    citing, clean = tmp_path / "test_citing.py", tmp_path / "test_clean.py"
    citing.write_text(f'task = SUITE["{first}"]\nother = \'{first}\'\n', encoding="utf-8")
    clean.write_text(f'task = SUITE["{first}-2"]  # a longer id is another task\nx = "pre{first}"\n',
                     encoding="utf-8")
    assert _citations([citing, clean], ids) == [(str(citing), first)]
    assert _citations([clean], ids) == []
