"""What a tool declared by its effect alone is, by every route, and what an argument can make of a call.

The idempotent default is what the adb journal resends after a dropped connection, so a send,
purchase or create declared only by its effect must come out not idempotent, whichever way it
was declared (``@tool``, ``Tool.from_schema``, a dict or YAML, an OpenAI export). A tool that
reads or writes by an argument (``talkback(action=query|enable)``) declares so, and each call
has the semantics its value selects.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import adbutils
import pytest
from pydantic import ValidationError

from pocketpilot.contracts import ToolCall, ToolEffect, ToolSpec, spec_for_call
from pocketpilot.errors import ToolDefinitionError
from pocketpilot.executor import tool
from pocketpilot.executor.adb import AdbExecutor
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.executor.tools import Tool

# effect -> (destructive, idempotent, read_only) when nothing else is declared
DEFAULTS: dict[str | None, tuple[bool, bool, bool]] = {
    "read": (False, True, True),
    "setting": (False, True, False),
    "navigate": (False, False, False),
    "update": (False, False, False),
    "create": (False, False, False),
    "send": (False, False, False),
    "purchase": (False, False, False),
    "delete": (True, False, False),
    None: (False, False, False),
}
PARAMS = {"type": "object", "properties": {"x": {"type": "string"}}}


def _flags(spec: ToolSpec | ToolEffect) -> tuple[bool, bool, bool]:
    return spec.destructive, spec.idempotent, spec.read_only


def _routes(effect: str | None) -> dict[str, ToolSpec | ToolEffect]:
    given: dict[str, Any] = {} if effect is None else {"effect": effect}

    @tool(**given)
    def by_decorator(x: str) -> str:
        """A tool."""
        return x

    by_schema = Tool.from_schema("by_schema", PARAMS, lambda **kw: kw, **given)
    return {
        "@tool": by_decorator.spec,
        "Tool.from_schema": by_schema.spec,
        "ToolSpec(dict)": ToolSpec.model_validate({"name": "d", "parameters": PARAMS, **given}),
        "nulls in a YAML file": ToolSpec.model_validate({"name": "d", "parameters": PARAMS, "destructive": None,
                                                         "idempotent": None, "read_only": None, **given}),
        "OpenAI import": ToolSpec.from_openai({"function": {"name": "o", "parameters": PARAMS}, "x-pocketpilot": given}),
        "ToolEffect": ToolEffect(**given),
    }


@pytest.mark.parametrize("effect", list(DEFAULTS), ids=str)
def test_every_route_to_a_declaration_gets_the_same_defaults_by_effect(effect: str | None) -> None:
    for route, spec in _routes(effect).items():
        assert _flags(spec) == DEFAULTS[effect], (route, effect)


@pytest.mark.parametrize("effect", ["send", "purchase", "create"])
def test_a_send_purchase_or_create_declared_by_its_effect_is_never_idempotent(effect: str) -> None:
    """The journal's resend rule reads ``Tool.idempotent``: it must say no for these."""

    @tool(effect=effect)  # type: ignore[arg-type]
    def act(to: str) -> str:
        """Act once."""
        return to

    assert act.idempotent is False and act.spec.idempotent is False


def test_a_delete_is_destructive_unless_it_says_otherwise() -> None:
    @tool(effect="delete")
    def drop(item_id: str) -> str:
        """Drop an item for good."""
        return item_id

    @tool(effect="delete", destructive=False)
    def trash(item_id: str) -> str:
        """Move an item to the trash."""
        return item_id

    assert drop.destructive and drop.spec.destructive and not drop.idempotent
    assert not trash.spec.destructive and trash.spec.needs_confirmation  # still a delete: still confirmed


def test_an_explicit_declaration_wins_over_the_default() -> None:
    @tool(effect="update", idempotent=True)
    def rename(item_id: str, name: str) -> str:
        """Give an item a name (assigns: a repeat changes nothing)."""
        return name

    @tool(effect="setting", setting="power", destructive=True)
    def power_off() -> None:
        """Switch the phone off."""

    @tool(effect="send", idempotent=True)
    def mark_seen(thread_id: str) -> str:
        """Tell the sender the thread was read (a repeat sends nothing new)."""
        return thread_id

    assert rename.spec.idempotent and mark_seen.spec.idempotent
    assert power_off.spec.destructive and not power_off.spec.idempotent  # destructive: not assumed repeatable
    spec = ToolSpec(name="x", effect="read", idempotent=False)
    assert spec.read_only and not spec.idempotent


def test_the_sandbox_trash_delete_is_declared_undoable_and_its_hard_deletes_destructive() -> None:
    """The audit of the new defaults: the one sandbox delete that relied on "not destructive"
    moves a file to the trash, and says so now; every other delete was declared destructive."""
    specs = {t.name: t for t in SandboxPhone().registry().tools()}
    deletes = {n: s.destructive for n, s in specs.items() if s.effect == "delete"}
    assert deletes.pop("delete_file") is False
    assert deletes and all(deletes.values())


# ---------------------------------------------------------------- effect by argument


class Mode(str, Enum):  # noqa: UP042 - the (str, Enum) a caller's own code declares, not StrEnum
    QUERY = "query"
    ON = "on"


def _talkback(**declared: Any) -> Tool:
    @tool(effect="setting", setting="talkback", **declared)
    def talkback(action: Literal["query", "enable", "disable"] = "query") -> dict[str, Any]:
        """Read or switch TalkBack."""
        return {"action": action}

    return talkback


TALKBACK = {"action": {"query": "read", "enable": "setting", "disable": "setting"}}


def test_an_argument_value_selects_the_semantics_of_a_call() -> None:
    spec = _talkback(effect_by_arg=TALKBACK).spec
    query = spec.for_arguments({"action": "query"})
    enable = spec.for_arguments({"action": "enable"})
    assert (query.effect, query.read_only, query.idempotent, query.changes_state) == ("read", True, True, False)
    assert query.setting is None  # a query changes no setting
    assert (enable.effect, enable.setting, enable.changes_state) == ("setting", "talkback", True)
    assert spec.for_arguments({}).effect == "read"  # the schema's default value is what the call does
    assert spec_for_call({"talkback": spec}, ToolCall(name="talkback", arguments={"action": "query"})) == query
    assert spec_for_call({"talkback": spec}, ToolCall(name="other")) is None


def test_an_unmapped_value_has_the_declared_semantics() -> None:
    spec = _talkback(effect_by_arg={"action": {"query": "read"}}).spec
    assert spec.for_arguments({"action": "disable"}) == spec
    assert spec.for_arguments({"action": ["not", "hashable"]}) == spec


def test_a_value_may_carry_more_than_an_effect_and_inherits_open_world() -> None:
    @tool(effect="purchase", open_world=True,
          effect_by_arg={"action": {"balance": "read", "refund": {"effect": "update", "idempotent": True}}})
    def wallet(action: Literal["balance", "pay", "refund"], amount: float = 0) -> dict[str, Any]:
        """Read the balance, pay, or refund."""
        return {}

    balance = wallet.spec.for_arguments({"action": "balance"})
    refund = wallet.spec.for_arguments({"action": "refund"})
    pay = wallet.spec.for_arguments({"action": "pay"})
    assert balance.read_only and balance.open_world and not balance.needs_confirmation
    assert refund.effect == "update" and refund.idempotent and not refund.needs_confirmation
    assert pay.needs_confirmation and not pay.idempotent


def test_booleans_and_enum_classes_are_checked_against_their_values() -> None:
    @tool(effect="setting", effect_by_arg={"on": {"false": "read"}})
    def radio(on: bool | None = None) -> None:
        """Switch the radio, or read it (no value)."""

    @tool(effect="setting", effect_by_arg={"mode": {"query": "read"}})
    def lamp(mode: Mode) -> None:
        """Read or switch the lamp."""

    assert radio.spec.for_arguments({"on": False}).read_only and not radio.spec.for_arguments({"on": True}).read_only
    assert lamp.spec.for_arguments({"mode": "query"}).read_only
    with pytest.raises(ToolDefinitionError, match="'yes' is not a value of 'on'"):
        tool(effect="setting", effect_by_arg={"on": {"yes": "read"}})(radio.fn)
    with pytest.raises(ToolDefinitionError, match="'off' is not a value of 'mode'"):
        tool(effect="setting", effect_by_arg={"mode": {"off": "read"}})(lamp.fn)


@pytest.mark.parametrize(
    ("by_arg", "message"),
    [
        ({"mode": {"query": "read"}}, "effect_by_arg: 'mode' is not a parameter of talkback"),
        ({"action": {"query": "peek"}}, r"effect_by_arg\.action\.query\.effect:?\s+Input should be 'read'"),
        ({"action": {"status": "read"}}, "effect_by_arg: 'status' is not a value of 'action' "
                                         r"\(one of 'disable', 'enable', 'query'\)"),
        ({"action": {}}, "effect_by_arg: no value of 'action' is mapped"),
        ({"action": {"query": {"effect": "read", "destructive": True}}}, "read-only tool cannot be destructive"),
    ],
)
def test_a_bad_effect_by_arg_is_a_one_line_definition_error(by_arg: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message) as raised:
        _talkback(effect_by_arg=by_arg)
    assert "\n" not in str(raised.value) and "Value error" not in str(raised.value)
    schema = _talkback().spec.parameters
    with pytest.raises(ToolDefinitionError, match=message.replace("talkback", "tb")):
        Tool.from_schema("tb", schema, lambda **kw: kw, effect="setting", effect_by_arg=by_arg)
    with pytest.raises(ValidationError, match=message.replace("talkback", "tb")):
        ToolSpec(name="tb", parameters=schema, effect="setting", effect_by_arg=by_arg)


def test_one_argument_selects_and_a_read_only_tool_cannot_map_a_write() -> None:
    params = {"type": "object", "properties": {"a": {"enum": ["x"]}, "b": {"enum": ["y"]}}}
    with pytest.raises(ValidationError, match="maps the values of one argument, not 2"):
        ToolSpec(name="t", parameters=params, effect="setting", effect_by_arg={"a": {"x": "read"}, "b": {"y": "read"}})
    with pytest.raises(ValidationError, match="read-only tool cannot have a='x' do send"):
        ToolSpec(name="t", parameters=params, effect="read", effect_by_arg={"a": {"x": "send"}})


def test_effect_by_arg_travels_in_an_export_and_is_absent_when_not_declared() -> None:
    spec = _talkback(effect_by_arg=TALKBACK).spec
    assert ToolSpec.from_openai(spec.to_openai()) == spec
    assert ToolSpec.model_validate_json(spec.model_dump_json()) == spec
    plain = _talkback().spec
    assert "effect_by_arg" not in plain.model_dump() and "effect_by_arg" not in plain.semantics()
    assert "effect_by_arg" not in plain.to_openai()["x-pocketpilot"]


async def test_the_adb_executor_classifies_a_declared_tool_by_its_argument() -> None:
    """The executor's own classification (``effect_of``) is the per-call one, as for taps."""

    class Phone(AdbExecutor):
        @tool(effect="navigate", idempotent=True, effect_by_arg={"action": {"send": "send"}})
        def sms(self, action: Literal["compose", "send"], to: str, body: str) -> dict[str, Any]:
            """Compose a message, or send it."""
            return {}

    ex = Phone("none", client=adbutils.AdbClient(host="127.0.0.1", port=1))  # never connected
    send = await ex.effect_of(ToolCall(name="sms", arguments={"action": "send", "to": "1", "body": "b"}))
    compose = await ex.effect_of(ToolCall(name="sms", arguments={"action": "compose", "to": "1", "body": "b"}))
    assert send is not None and send.needs_confirmation and not send.idempotent
    assert compose is not None and compose.effect == "navigate" and compose.idempotent
