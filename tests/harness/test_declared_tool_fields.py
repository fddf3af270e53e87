"""What used to be hard-coded lists of the sandbox's words is each tool's declaration (issue 33).

A team tool that declares a fixable error gets the send-back the sandbox's converter gets;
a tool that declares nothing gets none, whatever its error code is called.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from pocketpilot.contracts import ToolSpec
from pocketpilot.errors import ToolDefinitionError, ToolFailure
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.executor.tools import ToolRegistry, tool
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies._text import records

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


BEDROOM = {"id": "r7", "name": "Bedroom", "label": "Upstairs bedroom"}


def _lookup_world(record: dict[str, Any] = BEDROOM, **declared: Any) -> ToolRegistry:
    @tool(effect="read", **declared)
    def find_room(query: str) -> list:
        """Find a room.

        Args:
            query: Words of its name.
        """
        return [dict(record)]

    @tool(effect="update")
    def warm(room: str) -> str:
        """Warm a room.

        Args:
            room: The room's name.
        """
        raise ToolFailure("not_found", f"no room {room!r}")

    return ToolRegistry([find_room, warm])


async def _hints(registry: ToolRegistry, passed: str = "r7") -> list[str]:
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": "find_room", "arguments": {"query": "bed"}}]},
        {"kind": "tool_call", "calls": [{"name": "warm", "arguments": {"room": passed}}]},
        FINISH,
    ])
    episode = await Session(planner, registry, confirm=AllowAll()).run("warm the bedroom")
    assert episode.steps[1].results[0].error.code == "not_found"
    return [n.text for n in episode.steps[1].notices if "is the id of" in n.text]


async def test_a_record_is_named_by_the_first_field_its_tool_declares():
    assert await _hints(_lookup_world(name_fields=["label", "name"], id_field="id")) == [
        "'r7' is the id of 'Upstairs bedroom'; warm wants a label in 'room', not an id: "
        'call warm(room="Upstairs bedroom").']


async def test_a_record_of_a_tool_that_declares_no_name_fields_gets_no_name_hint():
    assert await _hints(_lookup_world()) == []
    assert await _hints(_lookup_world(id_field="id")) == []


async def test_a_record_with_an_id_key_of_a_tool_that_declares_no_id_field_gets_no_name_hint():
    """Which field is a record's id is the tool's declaration: a key called ``id`` is not one."""
    assert await _hints(_lookup_world(name_fields=["name"])) == []


async def test_a_record_is_found_by_the_id_field_its_tool_declares_and_by_no_other():
    ledger = {"record_no": "L-12", "id": "r7", "name": "Bedroom"}
    registry = _lookup_world(ledger, name_fields=["name"], id_field="record_no")
    assert await _hints(registry, passed="L-12") == [
        "'L-12' is the id of 'Bedroom'; warm wants a name in 'room', not an id: call warm(room=\"Bedroom\")."]
    assert await _hints(_lookup_world(ledger, name_fields=["name"], id_field="record_no"), passed="r7") == []


def test_records_are_the_dicts_with_a_value_in_the_declared_id_field():
    listing = [{"id": "a", "no": 3}, {"no": "b"}, {"no": None}, {"no": ["x"]}, "text"]
    assert records(listing, "no") == [{"id": "a", "no": 3}, {"no": "b"}]
    assert records({"no": "c"}, "no") == [{"no": "c"}]
    assert records(listing, None) == [] and records({"id": "a"}, None) == []


@pytest.mark.parametrize(("declared", "says"), [
    ({"id_field": "*_id"}, "not a pattern"),
    ({"id_field": ""}, "not a field's name"),
    ({"id_field": " id"}, "not a field's name"),
    ({"id_field": "name", "name_fields": ["title", "name"]}, "also one of name_fields"),
])
def test_a_bad_id_field_declaration_is_refused_with_what_is_wrong(declared: dict[str, Any], says: str):
    with pytest.raises(ToolDefinitionError, match="id_field") as raised:
        _lookup_world(**declared)
    assert says in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(ValidationError, match=says):
        ToolSpec(name="find_room", effect="read", **declared)


def test_artifact_and_name_fields_are_left_out_where_undeclared_and_round_trip_where_declared():
    plain = _drafts()["save_draft"].spec
    fields = {"artifact_fields", "name_fields", "id_field"}
    assert not fields & (set(plain.model_dump()) | set(plain.semantics()) | set(plain.to_openai()["x-pocketpilot"]))
    declared = _lookup_world(name_fields=["name"], artifact_fields=["id"], id_field="id")["find_room"].spec
    assert declared.semantics()["name_fields"] == ["name"] and declared.semantics()["artifact_fields"] == ["id"]
    assert declared.semantics()["id_field"] == "id" and declared.model_dump()["id_field"] == "id"
    assert ToolSpec.from_openai(declared.to_openai()) == declared
    assert ToolSpec.model_validate(declared.model_dump()) == declared


def test_a_device_declares_the_result_fields_of_the_phone_contract_it_implements():
    """A device's tools implement the sandbox's contract: a delegated child on a device hands on
    what it would hand on in the sandbox, and its lookups name records the same way."""
    import adbutils

    from pocketpilot.executor.adb import AdbExecutor

    device = AdbExecutor("emulator-5554", client=adbutils.AdbClient(host="127.0.0.1", port=1)).tools()  # never connected
    sandbox = {s.name: s for s in SandboxPhone().registry().tools()}
    assert {(tuple(s.artifact_fields), tuple(s.name_fields), s.id_field) for s in device} == {
        (tuple(sandbox["create_note"].artifact_fields), tuple(sandbox["create_note"].name_fields),
         sandbox["create_note"].id_field)}
    assert "*_id" in sandbox["create_note"].artifact_fields and "title" in sandbox["create_note"].name_fields
    assert sandbox["create_note"].id_field == "id"
