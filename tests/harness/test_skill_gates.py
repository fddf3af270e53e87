"""Every precondition gate, passing and blocking, alone and inside a Session on the sandbox phone."""

from __future__ import annotations

from scripted_actions import batch, call

from pocketpilot.contracts import Step, ToolCall, ToolCallAction, ToolResult
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.skills import (
    DependsOnResultGate,
    QueryBeforeToggleGate,
    RequiresPriorSuccessGate,
    SkillLibrary,
    StopBeforeStartGate,
    audit_episode,
)


def step(i: int, *pairs: tuple[ToolCall, ToolResult]) -> Step:
    return Step(
        index=i,
        context_digest="x",
        action=ToolCallAction(calls=[c for c, _ in pairs]),
        results=[r for _, r in pairs],
    )


def c(name: str, **args: object) -> ToolCall:
    return ToolCall(name=name, arguments=args)


OK = ToolResult.success
FAIL = ToolResult.failure


# ------------------------------------------------------------------ unit: each gate


def test_requires_prior_success_with_result_field():
    gate = RequiresPriorSuccessGate(
        tools=frozenset({"power_off"}), skill="s", needs=frozenset({"create_note"}), with_result_field="id"
    )
    off = c("power_off")
    assert gate.check(c("set_wifi", enabled=True), [], []) is None  # other tools untouched
    assert "must come first" in gate.check(off, [off], [])
    no_id = [step(0, (c("create_note", title="t"), OK({"title": "t"})))]
    assert gate.check(off, [off], no_id) is not None
    failed = [step(0, (c("create_note", title="t"), FAIL("invalid_arguments", "bad")))]
    assert "did not succeed" in gate.check(off, [off], failed)
    saved = [step(0, (c("create_note", title="t"), OK({"id": "note-4"})))]
    assert gate.check(off, [off], saved) is None
    # simultaneous: a note in the same batch is no evidence, even after an earlier success
    note = c("create_note", title="u")
    assert "same batch" in gate.check(off, [note, off], saved)
    assert "[precondition of skill s]" in gate.check(off, [off], [])


def test_requires_prior_success_if_attempted_is_no_pending_write():
    gate = RequiresPriorSuccessGate(
        tools=frozenset({"power_off"}), skill="s", needs=frozenset({"send_sms", "create_note"}), if_attempted=True
    )
    off = c("power_off")
    assert gate.check(off, [off], []) is None  # nothing attempted: a plain power off is fine
    pending = [step(0, (c("send_sms", to="Sam", body="x"), FAIL("not_found", "no contact")))]
    assert gate.check(off, [off], pending) is not None
    done = pending + [step(1, (c("send_sms", to="Sam Taylor", body="x"), OK({"id": "sms-1"})))]
    assert gate.check(off, [off], done) is None
    sms = c("send_sms", to="Sam", body="x")
    assert "same batch" in gate.check(off, [sms, off], [])


def test_query_before_toggle():
    gate = QueryBeforeToggleGate(tools=frozenset({"set_wifi"}), skill="s", query=frozenset({"get_settings"}))
    toggle = c("set_wifi", enabled=False)
    assert "get_settings first" in gate.check(toggle, [toggle], [])
    query = c("get_settings")
    assert "same batch" in gate.check(toggle, [query, toggle], [])
    assert gate.check(toggle, [toggle], [step(0, (query, FAIL("device_off", "off")))]) is not None
    assert gate.check(toggle, [toggle], [step(0, (query, OK({"wifi": True})))]) is None
    # the held batch resent as it was: the state was read in the earlier step, the toggle may run
    assert gate.check(toggle, [query, toggle], [step(0, (query, OK({"wifi": True})))]) is None


def test_stop_before_start_tracks_cast_state_through_history():
    gate = StopBeforeStartGate(
        tools=frozenset({"start_cast"}), skill="s", status="get_cast_status", stop="stop_cast"
    )
    start = c("start_cast", target="Bedroom TV")
    status, stop = c("get_cast_status"), c("stop_cast")
    assert "check whether one is already running" in gate.check(start, [start], [])
    active = [step(0, (status, OK({"active": True, "target": "Living Room TV"})))]
    assert "already running" in gate.check(start, [start], active)
    assert gate.check(start, [start], active + [step(1, (stop, OK({"active": False})))]) is None
    idle = [step(0, (status, OK({"active": False})))]
    assert gate.check(start, [start], idle) is None
    # a stop that reports nothing was casting also establishes the state
    assert gate.check(start, [start], [step(0, (stop, FAIL("not_active", "not casting")))]) is None
    # after a successful start the state is active again
    started = idle + [step(1, (start, OK({"active": True})))]
    assert "already running" in gate.check(start, [start], started)
    # stop and start in one batch are simultaneous; two starts in one batch are too
    assert "same batch" in gate.check(start, [stop, start], active)
    other = c("start_cast", target="Living Room TV")
    assert "same batch" in gate.check(start, [start, other], idle)


def test_depends_on_result_batch_and_grounded_argument():
    gate = DependsOnResultGate(
        tools=frozenset({"read_note"}), skill="s", waits_for=frozenset({"search_notes"}), argument="note_id"
    )
    read = c("read_note", note_id="note-2")
    search = c("search_notes", query="wifi")
    assert "same batch" in gate.check(read, [search, read], [])
    assert "was not returned" in gate.check(read, [read], [])
    found = [step(0, (search, OK([{"id": "note-2", "title": "Wi-Fi"}])))]
    assert gate.check(read, [read], found) is None
    assert gate.check(c("read_note", note_id="note-9"), [read], found) is not None
    alone = DependsOnResultGate(tools=frozenset({"power_off"}), skill="s", waits_for=frozenset({"*"}))
    off = c("power_off")
    assert alone.check(off, [off], []) is None
    assert "same batch" in alone.check(off, [c("set_wifi", enabled=True), off], [])


def test_sub_agent_calls_count_as_evidence():
    from pocketpilot.contracts import Delegate, Episode, EpisodeHeader, PlannerInfo

    gate = RequiresPriorSuccessGate(
        tools=frozenset({"power_off"}), skill="s", needs=frozenset({"create_note"}), with_result_field="id"
    )
    child = Episode(
        header=EpisodeHeader(episode_id="child", request="r", planner=PlannerInfo(backend="x", model="y")),
        steps=[step(0, (c("create_note", title="t"), OK({"id": "note-4"})))],
    )
    parent = [Step(index=0, context_digest="x", action=Delegate(instruction="save"), children=[child])]
    assert gate.check(c("power_off"), [c("power_off")], parent) is None


# ------------------------------------------------------------------ in a Session, on the sandbox


def _session(planner, phone, names, *, library=None, gates=()):
    executor = SandboxExecutor(phone)  # the phone has every tool; the session exposes ``names``
    return Session(planner, executor, tools=names, confirm=AllowAll(), skills=library, gates=gates)


FINISH = {"kind": "finish", "summary": "done"}


async def test_always_on_cast_gate_blocks_before_the_executor():
    lib = SkillLibrary.builtin()
    phone = SandboxPhone()
    phone.state.cast.active, phone.state.cast.target = True, "Living Room TV"
    names = ["get_cast_status", "start_cast", "stop_cast"]
    planner = ScriptedPlanner(
        [
            call("start_cast", target="Bedroom TV"),  # state unknown: blocked
            call("get_cast_status"),
            call("start_cast", target="Bedroom TV"),  # known active: blocked
            batch(("stop_cast", {}), ("start_cast", {"target": "Bedroom TV"})),  # simultaneous: start blocked
            call("start_cast", target="Bedroom TV"),  # stopped in an earlier step: runs
            FINISH,
        ]
    )
    session = _session(planner, phone, names, library=lib, gates=lib.always_on_gates(names))
    episode = await session.run("cast to the bedroom TV")
    codes = [r.error.code if r.error else "ok" for _, _, r in episode.tool_calls()]
    assert codes == ["precondition_failed", "ok", "precondition_failed", "ok", "precondition_failed", "ok"]
    assert phone.state.cast.target == "Bedroom TV"
    assert audit_episode(episode, lib) == []


async def test_without_gates_the_audit_counts_the_violation():
    lib = SkillLibrary.builtin()
    phone = SandboxPhone()
    names = ["get_cast_status", "start_cast", "stop_cast"]
    planner = ScriptedPlanner([call("start_cast", target="Bedroom TV"), FINISH])
    episode = await _session(planner, phone, names).run("cast")
    assert episode.tool_calls()[0][2].ok  # reached the executor
    violations = audit_episode(episode, lib)
    assert [(v.skill, v.call.name) for v in violations] == [("screen-cast", "start_cast")]


async def test_loaded_precondition_applies_only_after_load_skill():
    lib = SkillLibrary.builtin()
    names = ["create_note", "power_off"]
    # not loaded: a plain power off passes (no write was attempted)
    phone = SandboxPhone()
    ep = await _session(ScriptedPlanner([call("power_off"), FINISH]), phone, names, library=lib,
                        gates=lib.always_on_gates(names)).run("power off")
    assert ep.tool_calls()[0][2].ok and not phone.state.device.powered_on
    # loaded: power off needs the note saved with its id first
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            {"kind": "load_skill", "name": "note-before-power-off"},
            call("power_off"),
            batch(("create_note", {"title": "Parking", "body": "Level 3"}), ("power_off", {})),
            call("power_off"),
            FINISH,
        ]
    )
    ep = await _session(planner, phone, names, library=lib, gates=lib.always_on_gates(names)).run("note then off")
    codes = [r.error.code if r.error else "ok" for _, _, r in ep.tool_calls()]
    assert codes == ["precondition_failed", "ok", "precondition_failed", "ok"]
    assert "read_note" in ep.steps[0].results[0].data["tools_added"]
    assert not phone.state.device.powered_on and len(phone.state.notes.items) >= 1
    assert audit_episode(ep, lib) == []


async def test_pending_write_blocks_power_off_without_loading():
    lib = SkillLibrary.builtin()
    names = ["send_sms", "power_off", "lookup_contact"]
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            call("send_sms", to="Nobody Atall", body="hi"),  # fails: not_found
            call("power_off"),  # blocked: the write is pending
            call("send_sms", to="Sam Taylor", body="hi"),
            call("power_off"),
            FINISH,
        ]
    )
    ep = await _session(planner, phone, names, library=lib, gates=lib.always_on_gates(names)).run("text sam, off")
    codes = [r.error.code if r.error else "ok" for _, _, r in ep.tool_calls()]
    assert codes == ["not_found", "precondition_failed", "ok", "ok"]
    assert "safe-power-off" in ep.tool_calls()[1][2].error.message
