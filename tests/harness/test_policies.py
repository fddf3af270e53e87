"""The policies: one protocol, own state, typed outcomes, safety always in force, the set carried by η."""

from __future__ import annotations

from typing import Any

import pytest
from scripted_actions import call

from pocketpilot.adapters import compile_eta
from pocketpilot.adapters.diff import diff_eta, render_diff
from pocketpilot.adapters.errors import RevisionError
from pocketpilot.adapters.eta import PolicyEntry
from pocketpilot.adapters.revision import RemovePolicy, Revision, SetPolicy, apply_revision
from pocketpilot.contracts import RetrievedMemory, ToolError
from pocketpilot.executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone
from pocketpilot.executor.tools import Tool, ToolRegistry
from pocketpilot.harness import AllowAll, DenyAll, HarnessConfig, Session, default_policies, safety_policies
from pocketpilot.harness.context import ContextBudget
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies import (
    REGISTRY,
    LoopGuard,
    Policy,
    PolicyError,
    RepeatFailure,
    from_entries,
    in_force,
)
from pocketpilot.harness.recall import Recall
from pocketpilot.harness.scope import FUNCTION_WORDS, GENERIC_WORDS

FINISH = {"kind": "finish", "summary": "done"}


def everyday(phone: SandboxPhone | None = None) -> SandboxExecutor:
    """The sandbox's everyday apps (all of its apps' tools exceed one prompt's tool budget)."""
    return SandboxExecutor(phone or SandboxPhone(), list(EVERYDAY_APPS))


def test_every_registered_policy_is_a_policy_and_forks_fresh_with_its_params():
    for name, cls in REGISTRY.items():
        policy = cls()
        assert isinstance(policy, Policy) and policy.name == name
        twin = policy.fork()
        assert twin is not policy and type(twin) is cls and twin.params() == policy.params()
    built = from_entries([{"name": "repeat_failure", "params": {"limit": 5}}])
    assert isinstance(built[0], RepeatFailure) and built[0].limit == 5


def test_a_bad_policy_entry_is_a_typed_error():
    with pytest.raises(PolicyError, match="unknown policy"):
        from_entries([{"name": "no_such_policy"}])
    with pytest.raises(PolicyError, match="repeat_failure"):
        from_entries([{"name": "repeat_failure", "params": {"limit": 0}}])
    with pytest.raises(PolicyError, match="repeat_failure"):
        from_entries([{"name": "repeat_failure", "params": {"nonsense": 1}}])


def test_gates_and_confirmation_are_always_in_force_and_confirmation_decides_last():
    for given in ([], [LoopGuard()], safety_policies(), default_policies()):
        names = [p.name for p in in_force(given)]
        assert "gates" in names and names[-1] == "confirmation" and names.count("confirmation") == 1


async def test_an_empty_policy_set_cannot_switch_off_confirmation():
    """Attacker route: pass no policies at all and call a destructive tool."""
    phone = SandboxPhone()
    planner = ScriptedPlanner([call("delete_note", note_id="note-1"), FINISH])
    episode = await Session(planner, everyday(phone), confirm=DenyAll(), policies=[]).run("tidy up")
    result = episode.steps[0].results[0]
    assert result.error is not None and result.error.code == "confirmation_denied"
    assert any(n.id == "note-1" for n in phone.state.notes.items)


async def test_policies_keep_their_own_state_per_run():
    """A run's counts never leak into the next run of the same session (or a sub-agent)."""
    registry = ToolRegistry([_failing_tool()])
    policies = [RepeatFailure(limit=2)]
    planner = ScriptedPlanner([call("flaky", x=1), FINISH, call("flaky", x=1), FINISH])
    session = Session(planner, registry, policies=policies, confirm=AllowAll())
    first = await session.run("try it")
    second = await session.run("try it again")
    assert not any("has failed" in n for n in first.steps[0].notices + second.steps[0].notices)
    assert policies[0]._failures == {}  # the session's own objects are templates, never mutated


def _failing_tool(counter: list[int] | None = None) -> Tool:
    seen = counter if counter is not None else []

    def handler(**kw: Any) -> str:
        seen.append(1)
        return "Error: the service refused"

    return Tool.from_schema("flaky", {"type": "object", "properties": {"x": {"type": "integer"}}}, handler,
                            description="Update the remote flag.", effect="update",
                            classify=lambda value: (ToolError(code="refused", message=str(value))
                                                    if str(value).startswith("Error") else None))


async def test_the_loop_guard_holds_a_call_the_world_keeps_rejecting():
    calls: list[int] = []
    registry = ToolRegistry([_failing_tool(calls)])
    again = call("flaky", x=1)
    planner = ScriptedPlanner([again, again, again, again, again, FINISH])
    episode = await Session(planner, registry, policies=[LoopGuard(fail_limit=3)], confirm=AllowAll()).run("flip the flag")
    assert len(calls) == 3  # the fourth and fifth never reached the world
    held = episode.steps[3].results[0]
    assert held.error is not None and held.error.code == "not_allowed" and "rejected 3 times" in held.error.message
    # a state-changing success elsewhere would reset the count; here nothing changed, so it stays held
    assert episode.steps[4].results[0].error.code == "not_allowed"


def _status_tool() -> Tool:
    return Tool.from_schema("status", {"type": "object", "properties": {}}, lambda: {"up": True},
                            description="Read the service status.", effect="read", read_only=True)


async def test_the_loop_guard_makes_a_planner_that_resends_a_held_call_conclude():
    """A dev trace re-sent a held call, with two reads beside it, until max_steps: holding it
    again each time changed nothing, so the second time it is sent after a hold is a loop."""
    calls: list[int] = []
    registry = ToolRegistry([_failing_tool(calls), _status_tool()])
    again = {"kind": "tool_call", "calls": [{"name": "flaky", "arguments": {"x": 1}}, {"name": "status", "arguments": {}}]}
    planner = ScriptedPlanner([again] * 5 + [FINISH, FINISH])
    episode = await Session(planner, registry, policies=[LoopGuard(fail_limit=3)], confirm=AllowAll()).run("hi")
    assert len(calls) == 3 and episode.steps[3].results[0].error.code == "not_allowed"
    assert not any("already held back" in n for n in episode.steps[3].notices)  # the first hold is only a hold
    assert "tool_call" in planner.requests[4].kinds
    assert any("flaky again" in n and "already held back" in n for n in episode.steps[4].notices)
    assert "tool_call" not in planner.requests[5].kinds and "finish" in planner.requests[5].kinds
    assert episode.stop_reason == "finish" and len(episode.steps) == 6

    # where the request names the held tool's work as still undone, the guard says so and forces nothing
    planner2 = ScriptedPlanner([again] * 5 + [FINISH, FINISH])
    ep2 = await Session(planner2, ToolRegistry([_failing_tool(), _status_tool()]), policies=[LoopGuard(fail_limit=3)],
                        confirm=AllowAll()).run("update the remote flag")
    assert any("Not done yet" in n and "flaky" in n for n in ep2.steps[4].notices)
    assert "tool_call" in planner2.requests[5].kinds


async def test_the_loop_guard_catches_a_cycle_of_batches_that_fail_the_same_way_each_time():
    """A, B, A, B where A fails each time the same way: the planner is going round, not retrying."""
    registry = ToolRegistry([_failing_tool(), _status_tool()])
    a, b = call("flaky", x=1), call("status")
    planner = ScriptedPlanner([a, b, a, b, FINISH, FINISH])
    episode = await Session(planner, registry, policies=[LoopGuard(fail_limit=9)], confirm=AllowAll()).run("hi")
    assert not any("circle" in n for s in episode.steps[:3] for n in s.notices)
    assert any("going round in a circle" in n and "same failures" in n for n in episode.steps[3].notices)
    assert "tool_call" not in planner.requests[4].kinds and "refuse" in planner.requests[4].kinds
    # the same calls with a different failure the second time round are not a cycle
    outcomes = iter(["Error: the service refused", {"ok": 1}])
    varying = Tool.from_schema("flaky", {"type": "object", "properties": {"x": {"type": "integer"}}},
                               lambda **kw: next(outcomes), description="Update the remote flag.", effect="update",
                               classify=lambda v: ToolError(code="refused", message=str(v))
                               if str(v).startswith("Error") else None)
    planner2 = ScriptedPlanner([a, b, a, b, FINISH])
    ep2 = await Session(planner2, ToolRegistry([varying, _status_tool()]), policies=[LoopGuard(fail_limit=9)],
                        confirm=AllowAll()).run("hi")
    assert not any("circle" in n for s in ep2.steps for n in s.notices)


def _devices_world(**power_semantics: Any) -> ToolRegistry:
    """A lookup that returns a device record, and a thermostat tool that rejects a light's id."""
    devices = Tool.from_schema("devices", {"type": "object", "properties": {}},
                               lambda: [{"id": "d3", "name": "Bedroom light", "kind": "light"}],
                               description="List the home's devices.", effect="read", name_fields=["name"],
                               id_field="id")

    def thermostat(device_id: str) -> str:
        return f"Error: {device_id} is a light, not a thermostat"

    heat = Tool.from_schema("heat", {"type": "object", "properties": {"device_id": {"type": "string"}},
                                     "required": ["device_id"]}, thermostat,
                            description="Set a thermostat's target.", effect="update",
                            classify=lambda v: ToolError(code="invalid_arguments", message=str(v))
                            if str(v).startswith("Error") else None, **power_semantics)
    return ToolRegistry([devices, heat])


async def test_an_id_in_the_argument_the_tool_declares_as_its_id_gets_no_name_hint():
    """'d3 is the id of Bedroom light; heat wants a name in device_id' sent a planner that had
    passed the right kind of value the wrong way: the declaration says an id belongs there."""
    script = [call("devices"), call("heat", device_id="d3"), FINISH]
    declared = await Session(ScriptedPlanner(list(script)), _devices_world(id_arg="device_id"),
                             confirm=AllowAll()).run("warm the bedroom")
    assert declared.steps[1].results[0].error.code == "invalid_arguments"
    assert not any("is the id of" in n for n in declared.steps[1].notices)
    # the same tool without the declaration: the id of a looked-up record is hinted as a mix-up
    undeclared = await Session(ScriptedPlanner(list(script)), _devices_world(),
                               confirm=AllowAll()).run("warm the bedroom")
    assert any(n.startswith("'d3' is the id of 'Bedroom light'") for n in undeclared.steps[1].notices)


async def test_the_loop_guard_catches_a_cycle_of_two_batches():
    names = ["get_settings", "list_alarms"]
    a, b = call("get_settings"), call("list_alarms")
    planner = ScriptedPlanner([a, b, a, b, FINISH, FINISH])
    episode = await Session(planner, SandboxExecutor(SandboxPhone()), tools=names, confirm=AllowAll(),
                            policies=[LoopGuard()]).run("what is on?")
    assert any("Step 1 already ran" in n for n in episode.steps[2].notices)
    assert any("going round in a circle" in n for n in episode.steps[3].notices)
    assert "tool_call" not in planner.requests[4].kinds  # read-only loop, nothing left: conclude
    # every repeated call worked: nothing is unsafe or impossible, so refusing is no way out either
    assert "refuse" not in planner.requests[4].kinds and "finish" in planner.requests[4].kinds
    # without the cycle detection (one-step memory) the fourth step is a plain repeat of step 1
    planner2 = ScriptedPlanner([a, b, a, b, FINISH])
    ep2 = await Session(planner2, SandboxExecutor(SandboxPhone()), tools=names, confirm=AllowAll(),
                        policies=[LoopGuard(max_cycle=1)]).run("what is on?")
    assert not any("circle" in n for s in ep2.steps for n in s.notices)


async def test_the_loop_guard_names_what_remains_instead_of_forcing_finish():
    """Two steps asked, one done, the planner repeats it: the guard names the other and forces nothing."""
    names = ["set_do_not_disturb", "set_brightness", "get_settings"]
    dnd = call("set_do_not_disturb", enabled=True)
    planner = ScriptedPlanner([dnd, dnd, call("set_brightness", level=20), FINISH])
    phone = SandboxPhone()
    episode = await Session(planner, SandboxExecutor(phone), tools=names, confirm=AllowAll()).run(
        "Turn on do not disturb and dim the screen brightness to 20.")
    (notice,) = [n for n in episode.steps[1].notices if "repeating them changes nothing" in n]
    assert "set_brightness" in notice and "Not done yet" in notice
    assert "tool_call" in planner.requests[2].kinds
    assert phone.state.settings.brightness == 20 and episode.stop_reason == "finish"


class _Recalling:
    """A memory of one owner that searches nothing: the session shows what the caller recalled."""

    owner = "me"

    async def search(self, query: str, *, tier: str | None = None, k: int = 5) -> list:
        return []

    async def write(self, content: str, *, tier: str, category: str | None, provenance: dict) -> str:
        return "m"

    async def capture_episode(self, episode: Any) -> list[str]:
        return []

    async def owner_memories(self, *, limit: int) -> list:
        return []

    async def mark_recalled(self, ids: Any) -> None:
        return None


def recalled(content: str, source: str = "user_statement") -> dict[str, Any]:
    """Session arguments that recall one memory of the owner's, said by ``source``."""
    hit = RetrievedMemory(id="m1", tier="user", content=content, score=1.0,
                          provenance={"source": source, "owner": "me", "store": "private",
                                      "created_at": "2025-03-01T09:00:00"})
    return {"memory": _Recalling(), "recalled": Recall(hits=(hit,))}


async def test_a_distractor_memory_does_not_authorize_a_setting_the_request_never_named():
    state = {"font_scale": 1.0, "brightness": 60}

    def set_font_scale(scale: float) -> dict:
        state["font_scale"] = scale
        return {"font_scale": scale}

    def set_brightness(level: int) -> dict:
        state["brightness"] = level
        return {"brightness": level}

    tools = [
        Tool.from_schema("t1", {"type": "object", "properties": {"scale": {"type": "number"}}, "required": ["scale"]},
                         set_font_scale, description="Set the font scale.", effect="setting", setting="font_scale"),
        Tool.from_schema("t2", {"type": "object", "properties": {"level": {"type": "integer"}}, "required": ["level"]},
                         set_brightness, description="Set the screen brightness.", effect="setting",
                         setting="brightness"),
    ]
    distractor = "I write my thesis in a serif font."
    planner = ScriptedPlanner([call("t2", level=30), call("t1", scale=1.3), FINISH])
    episode = await Session(planner, ToolRegistry(tools), confirm=AllowAll(), **recalled(distractor)).run(
        "Dim the screen to 30%. Don't touch the text size.")
    assert state == {"font_scale": 1.0, "brightness": 30}
    assert episode.steps[1].results[0].error.code == "not_allowed"
    # a standing wish that is about the request does ground it (after the asked change, as a walk would come)
    about = "my reading mode is a bigger font scale."
    for source, scale in (("tool_result", 1.0), ("user_statement", 1.3)):  # provenance decides, not the words
        state.update(font_scale=1.0, brightness=60)
        planner2 = ScriptedPlanner([call("t2", level=30), call("t1", scale=1.3), FINISH])
        await Session(planner2, ToolRegistry(tools), confirm=AllowAll(), **recalled(about, source)).run(
            "Dim the screen to 30% and switch on my reading mode.")
        assert state == {"font_scale": scale, "brightness": 30}


async def test_the_words_scope_matching_ignores_are_eta_data_revised_for_another_language():
    """A German memory that shares only "bitte" with a German request is a distractor; the
    English default reads "bitte" as a content word and lets it ground a setting change."""
    state = {"font_scale": 1.0, "brightness": 60}

    def handler(key: str) -> Any:
        def set_value(**kw: Any) -> dict:
            state[key] = next(iter(kw.values()))
            return {key: state[key]}
        return set_value

    tools = [
        Tool.from_schema("t1", {"type": "object", "properties": {"scale": {"type": "number"}}, "required": ["scale"]},
                         handler("font_scale"), description="Schriftskalierung setzen.", effect="setting",
                         setting="font_scale"),
        Tool.from_schema("t2", {"type": "object", "properties": {"level": {"type": "integer"}}, "required": ["level"]},
                         handler("brightness"), description="Bildschirmhelligkeit setzen.", effect="setting",
                         setting="brightness"),
    ]
    memory = "Beim Lesen bitte immer grosse Schriftskalierung."
    script = [call("t2", level=30), call("t1", scale=1.3), FINISH]

    async def run(eta: Any) -> dict:
        state.update(font_scale=1.0, brightness=60)
        await Session(ScriptedPlanner(list(script)), ToolRegistry(tools), confirm=AllowAll(), **recalled(memory),
                      policies=eta.build_policies()).run("Bildschirmhelligkeit auf 30, bitte.")
        return dict(state)

    base = compile_eta(ToolRegistry(tools).tools())
    scope = next(p for p in base.policies if p.name == "scope_guard")
    assert scope.params["generic_words"] == list(GENERIC_WORDS)  # η carries the words, not the code
    assert await run(base) == {"font_scale": 1.3, "brightness": 30}
    german = Revision(id="de", base_version=base.version, rationale="requests in German", ops=[SetPolicy(
        policy=PolicyEntry(name="scope_guard", params={"generic_words": ["bitte", "immer", "beim", "auf"]}))])
    revised = apply_revision(base, german)
    assert revised.version != base.version
    assert await run(revised) == {"font_scale": 1.0, "brightness": 30}


def test_the_policy_set_is_part_of_eta_its_version_and_its_diff():
    tools = SandboxExecutor(SandboxPhone()).tools()
    base = compile_eta(tools)
    assert [p.name for p in base.policies] == [p.name for p in default_policies()]
    tuned = compile_eta(tools, policies=[*base.policies[:-1], PolicyEntry(name="confirmation", params={"on_denial": "stop"})])
    assert tuned.version == base.version  # same content, same version
    holding = compile_eta(tools, policies=[*base.policies[:-1], PolicyEntry(name="confirmation", params={"on_denial": "hold"})])
    assert holding.version != base.version
    changed = compile_eta(tools, policies=[
        PolicyEntry(name="repeat_failure", params={"limit": 4}) if p.name == "repeat_failure" else p for p in base.policies
    ])
    assert changed.version != base.version
    (change,) = diff_eta(base, changed)
    assert change.section == "policy" and change.name == "repeat_failure" and change.field == "limit"
    assert "~ policy repeat_failure: limit: 2 -> 4" in render_diff(base, changed)
    built = changed.build_policies()
    assert next(p for p in built if p.name == "repeat_failure").params() == {"limit": 4}


def test_a_revision_may_tune_a_policy_but_never_remove_a_safety_one():
    base = compile_eta(SandboxExecutor(SandboxPhone()).tools())
    rev = Revision(id="r1", base_version=base.version, rationale="fewer repeats",
                   ops=[SetPolicy(policy=PolicyEntry(name="repeat_failure", params={"limit": 3}))])
    new = apply_revision(base, rev)
    assert next(p for p in new.policies if p.name == "repeat_failure").params == {"limit": 3}
    drop = Revision(id="r2", base_version=base.version, rationale="no", ops=[RemovePolicy(name="confirmation")])
    with pytest.raises(RevisionError, match="safety"):
        apply_revision(base, drop)
    bad = Revision(id="r3", base_version=base.version, rationale="x",
                   ops=[SetPolicy(policy=PolicyEntry(name="loop_guard", params={"bogus": 1}))])
    with pytest.raises(RevisionError, match="loop_guard"):
        apply_revision(base, bad)
    with pytest.raises(ValueError, match="unknown policy"):
        PolicyEntry(name="made_up")


async def test_the_trace_header_records_the_policies_in_force():
    planner = ScriptedPlanner([FINISH])
    episode = await Session(planner, everyday(), policies=[LoopGuard(fail_limit=5)]).run("hi")
    assert episode.header.policies == [
        {"name": "gates", "params": {}},
        {"name": "loop_guard", "params": {"fail_limit": 5, "max_cycle": 3, "function_words": list(FUNCTION_WORDS),
                                          "generic_words": list(GENERIC_WORDS)}},
        {"name": "confirmation", "params": {"on_denial": "stop"}},
    ]


async def test_a_session_carries_earlier_turns_into_the_next_request():
    phone = SandboxPhone()
    planner = ScriptedPlanner([call("start_cast", target="Office Display"), FINISH, call("stop_cast"), FINISH, FINISH])
    session = Session(planner, SandboxExecutor(phone), tools=["start_cast", "stop_cast", "get_cast_status"],
                      confirm=AllowAll())
    first = await session.run("Cast to the office display.")
    second = await session.run("Stop the casting from before.")
    assert first.header.turn == 0 and second.header.turn == 1
    seen = [m.content for m in planner.requests[2].messages]
    assert "Cast to the office display." in seen
    assert any('start_cast(target="Office Display")' in c for c in seen)
    assert [m.role for m in planner.requests[2].messages][-1] == "user"  # the new request is last
    assert phone.state.cast.active is False
    # a zero budget, or forget(), starts afresh
    session.forget()
    await session.run("Cast to the office display.")
    assert not any("Stop the casting" in m.content for m in planner.requests[-1].messages)


async def test_the_conversation_budget_drops_old_turns_whole():
    planner = ScriptedPlanner([FINISH] * 3)
    cfg = HarnessConfig(budget=ContextBudget(conversation=0))
    session = Session(planner, everyday(), config=cfg)
    await session.run("first request")
    await session.run("second request")
    assert not any("first request" in m.content for m in planner.requests[1].messages)


def test_which_requests_get_memory_write_and_delegate_is_eta_data():
    from pocketpilot.adapters import session_kwargs
    from pocketpilot.adapters.revision import SetOffer

    tools = SandboxExecutor(SandboxPhone()).tools()
    base = compile_eta(tools)
    names = [t.name for t in tools]
    plain = session_kwargs(base, names, memory=True, delegate=True, request="Merke dir: Spind 12.")
    assert "memory_write" not in plain["actions"]
    rev = Revision(id="de", base_version=base.version, rationale="German app",
                   ops=[SetOffer(kind="memory_write", pattern=r"\bmerke?\b")])
    german = apply_revision(base, rev)
    assert any(c.section == "offer" for c in diff_eta(base, german))
    kw = session_kwargs(german, names, memory=True, delegate=True, request="Merke dir: Spind 12.")
    assert "memory_write" in kw["actions"]
    with pytest.raises(ValueError, match="regular expression"):
        compile_eta(tools).model_copy(update={}).model_validate({**base.content(), "offers": {"delegate": "("}})
