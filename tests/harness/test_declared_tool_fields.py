"""What used to be hard-coded lists of the sandbox's words is each tool's declaration (issue 33).

A team tool that declares a fixable error gets the send-back the sandbox's converter gets;
a tool that declares nothing gets none, whatever its error code is called.
"""

from __future__ import annotations

import pytest

from pocketpilot.contracts import ToolSpec
from pocketpilot.errors import ToolDefinitionError, ToolFailure
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.executor.tools import ToolRegistry, tool
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.planners import ScriptedPlanner

REFUSE = {"kind": "refuse", "reason": "cannot"}
FINISH = {"kind": "finish", "summary": "done"}


def _rates(*, declared: bool) -> ToolRegistry:
    codes = ["unknown_currency"] if declared else []

    @tool(effect="read", fixable_errors=codes)
    def exchange(amount: float, currency: str) -> dict:
        """Convert an amount of euros.

        Args:
            amount: Euros.
            currency: Target currency code.
        """
        if currency != "USD":
            raise ToolFailure("unknown_currency", "only USD is known: call exchange with currency='USD'")
        return {"value": amount * 1.1}

    return ToolRegistry([exchange])


async def _refusal_after_error(registry: ToolRegistry):
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": "exchange", "arguments": {"amount": 5, "currency": "GBP"}}]},
        REFUSE,
        {"kind": "tool_call", "calls": [{"name": "exchange", "arguments": {"amount": 5, "currency": "USD"}}]},
        FINISH,
    ])
    episode = await Session(planner, registry, confirm=AllowAll(), config=HarnessConfig()).run("5 euros in pounds")
    assert episode.steps[0].results[0].error.code == "unknown_currency"
    return episode


async def test_a_team_tools_declared_fixable_error_sends_a_refusal_back():
    episode = await _refusal_after_error(_rates(declared=True))
    sent = episode.steps[1].results[0].error
    assert sent is not None and sent.code == "not_allowed" and "unknown_currency" in sent.message
    assert episode.stop_reason == "finish" and episode.steps[2].results[0].ok


async def test_an_undeclared_error_code_leaves_the_refusal_standing():
    episode = await _refusal_after_error(_rates(declared=False))
    assert episode.stop_reason == "refuse" and len(episode.steps) == 2


def test_the_sandbox_converter_declares_the_error_it_returns():
    spec = SandboxPhone().registry()["convert_units"].spec
    assert spec.fixable_errors == ["unsupported_unit"]


def test_fixable_errors_are_left_out_where_undeclared_and_round_trip_where_declared():
    plain = _rates(declared=False)["exchange"].spec
    assert "fixable_errors" not in plain.model_dump() and "fixable_errors" not in plain.semantics()
    assert "fixable_errors" not in plain.to_openai()["x-pocketpilot"]
    declared = _rates(declared=True)["exchange"].spec
    assert declared.to_openai()["x-pocketpilot"]["fixable_errors"] == ["unknown_currency"]
    assert ToolSpec.from_openai(declared.to_openai()) == declared
    assert ToolSpec.model_validate(declared.model_dump()) == declared


def test_a_fixable_error_is_a_code_not_prose():
    with pytest.raises(ToolDefinitionError):
        tool(lambda x: x, name="f", effect="read", fixable_errors=["Unit not supported!"])


def _drafts(**declared: list[str]) -> ToolRegistry:
    @tool(effect="create", **declared)
    def save_draft(text: str) -> dict:
        """Save a draft.

        Args:
            text: The draft.
        """
        return {"id": "d-1", "draft_ref": "r-9", "file": "draft.txt"}

    return ToolRegistry([save_draft])


async def _handed_on(registry: ToolRegistry) -> dict | None:
    planner = ScriptedPlanner([
        {"kind": "delegate", "instruction": "save a draft", "tools": ["save_draft"]},
        {"kind": "tool_call", "calls": [{"name": "save_draft", "arguments": {"text": "hi"}}]},
        FINISH, FINISH,
    ])
    episode = await Session(planner, registry, confirm=AllowAll()).run("save a draft saying hi")
    result = episode.steps[0].results[0]
    assert result.ok and result.data["confirmed"] is True
    return result.data.get("artifacts")


async def test_a_child_hands_on_exactly_the_fields_its_tool_declares():
    assert await _handed_on(_drafts(artifact_fields=["draft_ref"])) == {"save_draft.draft_ref": "r-9"}
    assert await _handed_on(_drafts(artifact_fields=["*_ref", "id"])) == {"save_draft.id": "d-1",
                                                                          "save_draft.draft_ref": "r-9"}


async def test_a_tool_that_declares_no_artifacts_hands_on_none_whatever_its_fields_are_called():
    assert await _handed_on(_drafts()) == {}


def _lookup_world(**declared: list[str]) -> ToolRegistry:
    @tool(effect="read", **declared)
    def find_room(query: str) -> list:
        """Find a room.

        Args:
            query: Words of its name.
        """
        return [{"id": "r7", "name": "Bedroom", "label": "Upstairs bedroom"}]

    @tool(effect="update")
    def warm(room: str) -> str:
        """Warm a room.

        Args:
            room: The room's name.
        """
        raise ToolFailure("not_found", f"no room {room!r}")

    return ToolRegistry([find_room, warm])


async def _hints(registry: ToolRegistry) -> list[str]:
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": "find_room", "arguments": {"query": "bed"}}]},
        {"kind": "tool_call", "calls": [{"name": "warm", "arguments": {"room": "r7"}}]},
        FINISH,
    ])
    episode = await Session(planner, registry, confirm=AllowAll()).run("warm the bedroom")
    assert episode.steps[1].results[0].error.code == "not_found"
    return [n.text for n in episode.steps[1].notices if "is the id of" in n.text]


async def test_a_record_is_named_by_the_first_field_its_tool_declares():
    assert await _hints(_lookup_world(name_fields=["label", "name"])) == [
        "'r7' is the id of 'Upstairs bedroom'; warm wants a label in 'room', not an id: "
        'call warm(room="Upstairs bedroom").']


async def test_a_record_of_a_tool_that_declares_no_name_fields_gets_no_name_hint():
    assert await _hints(_lookup_world()) == []


def test_artifact_and_name_fields_are_left_out_where_undeclared_and_round_trip_where_declared():
    plain = _drafts()["save_draft"].spec
    assert not {"artifact_fields", "name_fields"} & (set(plain.model_dump()) | set(plain.to_openai()["x-pocketpilot"]))
    declared = _lookup_world(name_fields=["name"], artifact_fields=["id"])["find_room"].spec
    assert declared.semantics()["name_fields"] == ["name"] and declared.semantics()["artifact_fields"] == ["id"]
    assert ToolSpec.from_openai(declared.to_openai()) == declared


def test_a_device_declares_the_result_fields_of_the_phone_contract_it_implements():
    """A device's tools implement the sandbox's contract: a delegated child on a device hands on
    what it would hand on in the sandbox, and its lookups name records the same way."""
    import adbutils

    from pocketpilot.executor.adb import AdbExecutor

    device = AdbExecutor("emulator-5554", client=adbutils.AdbClient(host="127.0.0.1", port=1)).tools()  # never connected
    sandbox = {s.name: s for s in SandboxPhone().registry().tools()}
    assert {(tuple(s.artifact_fields), tuple(s.name_fields)) for s in device} == {
        (tuple(sandbox["create_note"].artifact_fields), tuple(sandbox["create_note"].name_fields))}
    assert "*_id" in sandbox["create_note"].artifact_fields and "title" in sandbox["create_note"].name_fields
