"""What a confirmed hand-off gives back: the child's answer, and (switched on) the data it read.

A child asked to find a value finished with it in ``answer`` and a summary without it, and the
parent's result carried the summary only: the value it delegated for never reached it. The
answer is handed back always; the data of the child's read-only calls (as declared, never by
name) under η's ``delegation.hand_back_reads``, within a size budget.
"""

from __future__ import annotations

import json
from typing import Any

from scripted_actions import call, delegate, finish

from pocketpilot.adapters.delegation import DelegationPlan, DelegationSettings
from pocketpilot.adapters.eta import Eta
from pocketpilot.contracts import ToolCall, ToolResult, ToolSpec
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.actions import READS_BUDGET
from pocketpilot.harness.planners import ScriptedPlanner

ARG = {"type": "object", "properties": {"record_id": {"type": "string"}}}


class Records:
    """Two reads (one returns a huge listing), and a tool named like a read that changes state."""

    def tools(self) -> list[ToolSpec]:
        return [
            ToolSpec(name="fetch", parameters=ARG, effect="read"),
            ToolSpec(name="listing", effect="read"),
            ToolSpec(name="get_and_mark", parameters=ARG, effect="update"),  # its name says nothing
        ]

    async def call(self, call: ToolCall) -> ToolResult:
        if call.name == "fetch":
            if call.arguments.get("record_id") != "rec-7":
                return ToolResult.failure("not_found", "no such record")
            return ToolResult.success({"id": "rec-7", "distance_km": 19.3121})
        if call.name == "listing":
            return ToolResult.success({"records": [{"id": f"rec-{i}", "text": "x" * 200} for i in range(100)]})
        return ToolResult.success({"id": call.arguments["record_id"], "marked": True, "secret": "s3"})


async def _delegate_result(child: list[dict], *, reads: bool, tools: list[str] | None = None) -> dict[str, Any]:
    """The delegate result as the parent's planner read it."""
    planner = ScriptedPlanner([delegate("Find the distance of rec-7", tools or ["fetch"]), *child, finish("parent stops")])
    handoff = DelegationPlan(DelegationSettings(hand_back_reads=True)) if reads else None
    await Session(planner, Records(), confirm=AllowAll(), handoff=handoff).run("how far is rec-7?")
    parent = [r for r in planner.requests if "delegate" in r.kinds]
    return json.loads(parent[1].messages[-1].content)


async def test_the_childs_answer_reaches_the_parent_without_a_switch():
    got = await _delegate_result([call("fetch", record_id="rec-7"), finish("Found the record.", "19.3121 km")],
                                 reads=False)
    assert got["ok"] and got["data"]["summary"] == "Found the record."
    assert got["data"]["answer"] == "19.3121 km"
    assert "reads" not in got["data"]  # the reads are handed back only where η switches them on


async def test_with_the_switch_the_read_data_reaches_the_parent_beside_the_answer():
    got = await _delegate_result([call("fetch", record_id="rec-7"), call("get_and_mark", record_id="rec-7"),
                                  finish("Found the record.", "19.3121 km")], reads=True, tools=["fetch", "get_and_mark"])
    data = got["data"]
    assert data["answer"] == "19.3121 km"
    # the declared read only: the state-changing call's result is no read, whatever its name
    assert data["reads"] == [{"tool": "fetch", "arguments": {"record_id": "rec-7"},
                              "data": {"id": "rec-7", "distance_km": 19.3121}}]
    assert "s3" not in json.dumps(data["reads"])


async def test_a_huge_read_is_cut_to_the_budget_and_the_newest_read_kept_whole():
    got = await _delegate_result([call("listing"), call("fetch", record_id="rec-7"), finish("Found it.")],
                                 reads=True, tools=["listing", "fetch"])
    reads = got["data"]["reads"]
    assert [r["tool"] for r in reads] == ["listing", "fetch"]  # shown oldest first
    assert reads[1]["data"] == {"id": "rec-7", "distance_km": 19.3121} and "cut" not in reads[1]
    assert reads[0]["cut"] is True and isinstance(reads[0]["data"], str)
    assert sum(len(json.dumps(r, ensure_ascii=False)) for r in reads) <= READS_BUDGET
    assert "answer" not in got["data"]  # the child gave none


async def test_an_unconfirmed_child_hands_back_neither_answer_nor_reads():
    got = await _delegate_result([call("fetch", record_id="rec-9"), finish("It is 12 km.", "12 km")], reads=True)
    assert not got["ok"] and got["error"]["code"] == "subagent_no_call"
    assert "answer" not in got["data"] and "reads" not in got["data"]


def test_the_switch_is_off_by_default_and_an_eta_without_it_hashes_as_before():
    assert not DelegationSettings().hand_back_reads and DelegationSettings.all_on().hand_back_reads
    eta = Eta(delegation=DelegationSettings(carry_ids=True))
    assert "hand_back_reads" not in eta.content()["delegation"]
    on = Eta(delegation=DelegationSettings(carry_ids=True, hand_back_reads=True))
    assert on.content()["delegation"]["hand_back_reads"] is True and on.version != eta.version
