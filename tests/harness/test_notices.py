"""Notices are typed data: the policy that said one and a stable code travel with its words.

Readers attribute by the code, so rewording a notice (what the planner reads) never changes
what the failure diagnosis concludes; traces written before notices carried fields still read.
"""

from __future__ import annotations

import json

from pocketpilot.contracts import CriterionResult, Notice, Step, Verdict
from pocketpilot.harness import Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies.repeat_failure import REPEATED_FAILURE
from pocketpilot.tracing.trace import read_trace
from pocketpilot.trainer_bridge import diagnosis
from pocketpilot.trainer_bridge.diagnosis import diagnose

BAD = {"kind": "tool_call", "calls": [{"name": "convert", "arguments": {"value": 0, "unit": "km"}}]}
FINISH = {"kind": "finish", "summary": "done"}
WARNED = "the harness warned about a repeated identical failure"


async def _failed(episode):
    return Verdict(success=False, criteria=[CriterionResult(name="converted", passed=False, detail="no")])


def _with_notices(episode, make):
    steps = [s.model_copy(update={"notices": [make(n) for n in s.notices]}) for s in episode.steps]
    return episode.model_copy(update={"steps": steps})


async def test_repeat_failure_is_attributed_by_its_code_not_its_words(registry, tmp_path):
    session = Session(ScriptedPlanner([BAD, BAD, FINISH]), registry, verifier=_failed, trace_dir=tmp_path)
    episode = await session.run("convert")
    (notice,) = [n for n in episode.steps[1].notices if n.code == REPEATED_FAILURE]
    assert notice.policy == "repeat_failure" and "has failed 2 times" in notice
    assert diagnosis.REPEATED_FAILURE == REPEATED_FAILURE  # the diagnosis reads the code the policy emits
    known = ["convert"]
    found = diagnose(episode, known_tools=known)
    assert any(f.detail == WARNED and f.steps == [1] for f in found.findings), found.findings

    reworded = _with_notices(episode, lambda n: Notice("Try something else.", policy=n.policy, code=n.code))
    assert diagnose(reworded, known_tools=known) == found

    words_only = _with_notices(episode, lambda n: Notice(str(n)))  # the old wording, no code: not read
    assert not any(f.detail == WARNED for f in diagnose(words_only, known_tools=known).findings)

    loaded, complete = read_trace(session.trace_path)  # the fields survive the trace
    assert complete and [(n.policy, n.code) for n in loaded.steps[1].notices] == [(n.policy, n.code)
                                                                                  for n in episode.steps[1].notices]


async def test_the_planner_reads_only_the_words(registry):
    planner = ScriptedPlanner([BAD, BAD, FINISH])
    episode = await Session(planner, registry).run("convert")
    (notice,) = [n for n in episode.steps[1].notices if n.code == REPEATED_FAILURE]
    fed_back = [m.content for m in planner.requests[2].messages if m.role == "tool"][-1]
    assert json.loads(fed_back)["notices"] == [str(notice)]


def test_a_plain_string_notice_from_an_old_trace_still_reads() -> None:
    line = {"index": 0, "context_digest": "d", "notices": ["an old notice", {"text": "new", "policy": "p", "code": "c"}]}
    step = Step.model_validate_json(json.dumps(line))
    old, new = step.notices
    assert (old, old.policy, old.code) == ("an old notice", "", "")
    assert (new, new.policy, new.code) == ("new", "p", "c")
    again = Step.model_validate_json(step.model_dump_json())
    assert [(n, n.policy, n.code) for n in again.notices] == [(n, n.policy, n.code) for n in step.notices]


async def test_every_policy_notice_names_its_policy_and_a_code(registry):
    episode = await Session(ScriptedPlanner([BAD, BAD, BAD, FINISH]), registry).run("convert")
    notices = [n for s in episode.steps for n in s.notices]
    assert notices and all(n.policy and n.code for n in notices), [repr(n) for n in notices]
