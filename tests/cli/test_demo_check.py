"""The demo's check reads the bay in the note's title or its body (issue 34, "the demo ends in
FAILURE for a newcomer"): the run a small model makes passes, a note without the bay still fails."""

from __future__ import annotations

import pytest
from scripted_actions import call_action

from pocketpilot.cli.run import DEMO_TASK
from pocketpilot.contracts import Finish
from pocketpilot.tasks import load_suite, prepare, run_actions


@pytest.mark.parametrize(("title", "body", "success"), [
    ("Parked on level 3, bay 42", "Switched the phone off.", True),  # what the 1.5B wrote
    ("Parking", "Level 3, bay 42", True),  # the oracle's note
    ("Parking", "Level 3", False),
])
async def test_the_demo_accepts_the_bay_in_either_field(title: str, body: str, success: bool) -> None:
    task = next(t for t in load_suite() if t.id == DEMO_TASK)
    run = prepare(task)
    actions = [call_action("create_note", title=title, body=body), call_action("power_off"),
               Finish(summary="Saved the note, then powered off.")]
    verdict = await run.verifier(await run_actions(run, actions))
    assert verdict.success is success, [(c.name, c.detail) for c in verdict.criteria if not c.passed]
    assert verdict.criteria[0].kind == "either"
