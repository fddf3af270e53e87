"""The LLM-simulated backend: consistency logic with a scripted model, and the real 0.5B model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pocketpilot.contracts import ToolCall, ToolCallAction, ToolSpec
from pocketpilot.errors import ToolDefinitionError
from pocketpilot.executor.composite import CompositeExecutor
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.executor.simulated import (
    IdsExist,
    LlamaCppResponseModel,
    MatchesState,
    Predicate,
    SimulatedExecutor,
    SimulatedTool,
    SimulationBackendError,
)
from pocketpilot.harness import Session
from pocketpilot.harness.base import Executor
from pocketpilot.harness.planners.scripted import ScriptedPlanner


class ScriptedModel:
    """Replays canned outputs and records every prompt (the consistency logic is what is tested)."""

    def __init__(self, outputs: Sequence[Any]) -> None:
        self.outputs = [o if isinstance(o, str) else json.dumps(o) for o in outputs]
        self.prompts: list[list[dict[str, str]]] = []

    async def generate(self, messages: Sequence[dict[str, str]], schema: dict[str, Any]) -> str:
        self.prompts.append(list(messages))
        if not self.outputs:
            raise AssertionError("model asked more often than expected")
        return self.outputs.pop(0)


BALANCE = SimulatedTool.declare(
    "get_balance",
    "Read the balance of a bank account.",
    parameters={
        "type": "object",
        "properties": {"account_id": {"type": "string"}},
        "required": ["account_id"],
        "additionalProperties": False,
    },
    result_schema={
        "type": "object",
        "properties": {"account_id": {"type": "string"}, "balance": {"type": "number"}},
        "required": ["account_id", "balance"],
        "additionalProperties": False,
    },
    read_only=True,
    invariants=[IdsExist("account_id")],
)
TRANSFER = SimulatedTool.declare(
    "transfer",
    "Move money between accounts.",
    parameters={
        "type": "object",
        "properties": {"from_id": {"type": "string"}, "amount": {"type": "number", "minimum": 0}},
        "required": ["from_id", "amount"],
    },
    result_schema={
        "type": "object",
        "properties": {"transfer_id": {"type": "string"}, "status": {"enum": ["done", "pending"]}},
        "required": ["transfer_id", "status"],
    },
    destructive=True,
)
STATE = {"accounts": [{"id": "acc-1", "owner": "me"}], "currency": "EUR"}


def executor(outputs: Sequence[Any], *tools: SimulatedTool) -> tuple[SimulatedExecutor, ScriptedModel]:
    model = ScriptedModel(outputs)
    return SimulatedExecutor(model, tools or (BALANCE, TRANSFER), state=STATE), model


def balance(account: str = "acc-1") -> ToolCall:
    return ToolCall(name="get_balance", arguments={"account_id": account})


async def test_valid_result_is_labelled_and_conditioned_on_state() -> None:
    ex, model = executor([{"account_id": "acc-1", "balance": 12.5}])
    assert isinstance(ex, Executor)
    assert {t.name for t in ex.tools()} == {"get_balance", "transfer"}
    assert ex.tools()[0].result_schema is not None
    result = await ex.call(balance())
    assert result.ok and result.simulated and result.data == {"account_id": "acc-1", "balance": 12.5}
    prompt = model.prompts[0][-1]["content"]
    assert '"acc-1"' in prompt and "EUR" in prompt and "get_balance" in prompt


async def test_repeated_read_only_query_must_agree() -> None:
    ex, model = executor(
        [
            {"account_id": "acc-1", "balance": 10},
            {"account_id": "acc-1", "balance": 99},  # contradicts the first answer
            {"account_id": "acc-1", "balance": 10},  # the regeneration agrees
            {"account_id": "acc-1", "balance": 50},
            {"account_id": "acc-1", "balance": 51},  # two contradictions in a row
        ]
    )
    assert (await ex.call(balance())).data["balance"] == 10
    again = await ex.call(balance())
    assert again.ok and again.data["balance"] == 10
    retry_prompt = model.prompts[2]
    assert retry_prompt[-2] == {
        "role": "assistant",
        "content": json.dumps({"account_id": "acc-1", "balance": 99}),
    }
    assert "rejected" in retry_prompt[-1]["content"] and "before" in retry_prompt[-1]["content"]
    third = await ex.call(balance())
    assert not third.ok and third.simulated
    assert third.error is not None and third.error.code == "simulation_inconsistent"
    assert len(ex.log.records) == 2  # rejected answers are never recorded
    assert model.outputs == []


async def test_state_change_allows_a_new_answer() -> None:
    ex, _ = executor(
        [
            {"account_id": "acc-1", "balance": 10},
            {"transfer_id": "t-1", "status": "done"},
            {"account_id": "acc-1", "balance": 4},
            {"account_id": "acc-1", "balance": 4},
        ]
    )
    assert (await ex.call(balance())).data["balance"] == 10
    moved = await ex.call(ToolCall(name="transfer", arguments={"from_id": "acc-1", "amount": 6}))
    assert moved.ok and moved.simulated
    assert (await ex.call(balance())).data["balance"] == 4  # a write happened in between
    ex.update_state({"currency": "USD"})
    assert (await ex.call(balance())).ok  # an external update also opens a new version


async def test_unknown_ids_are_rejected_and_earlier_ids_accepted() -> None:
    ex, model = executor(
        [
            {"account_id": "acc-9", "balance": 1},
            {"account_id": "acc-7", "balance": 1},
        ]
    )
    bad = await ex.call(balance("acc-1"))
    assert bad.error is not None and bad.error.code == "simulation_inconsistent"
    assert "acc-9" in model.prompts[1][-1]["content"]  # the reason is fed back for the retry

    orders = SimulatedTool.declare(
        "list_orders",
        "List recent orders.",
        result_schema={
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "account_id": {"type": "string"}},
                "required": ["id", "account_id"],
            },
        },
        read_only=True,
        invariants=[IdsExist("*.account_id")],
    )
    track = SimulatedTool.declare(
        "track_order",
        "Where an order is.",
        parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
        result_schema={
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "where": {"type": "string"}},
            "required": ["order_id", "where"],
        },
        read_only=True,
        invariants=[IdsExist("order_id")],
    )
    ex2, _ = executor(
        [[{"id": "o-1", "account_id": "acc-1"}], {"order_id": "o-1", "where": "depot"}], orders, track
    )
    assert (await ex2.call(ToolCall(name="list_orders"))).ok
    tracked = await ex2.call(ToolCall(name="track_order", arguments={"order_id": "o-1"}))
    assert tracked.ok and tracked.data["where"] == "depot"  # o-1 is known from the earlier result


async def test_declared_invariants() -> None:
    currency = SimulatedTool.declare(
        "get_currency",
        "The account currency.",
        result_schema={
            "type": "object",
            "properties": {"currency": {"type": "string"}},
            "required": ["currency"],
        },
        invariants=[
            MatchesState("currency", "currency"),
            Predicate(
                "upper", lambda call, data, log: None if data["currency"].isupper() else "not upper case"
            ),
        ],
    )
    ex, _ = executor(
        [{"currency": "USD"}, {"currency": "eur"}, {"currency": "eur"}, {"currency": "EUR"}], currency
    )
    first = await ex.call(ToolCall(name="get_currency"))
    assert first.error is not None and "state says 'EUR'" in first.error.message  # USD, then eur
    assert (await ex.call(ToolCall(name="get_currency"))).data == {"currency": "EUR"}


async def test_invalid_output_and_arguments() -> None:
    ex, model = executor(['{"account_id": "acc-1", "bal', {"account_id": "acc-1"}])
    res = await ex.call(balance())
    assert not res.ok and res.simulated and res.error is not None
    assert res.error.code == "simulation_invalid" and "balance" in res.error.message
    assert "not valid JSON" in model.prompts[1][-1]["content"]
    bad_args = await ex.call(ToolCall(name="get_balance", arguments={"account": 1}))
    assert bad_args.error is not None and bad_args.error.code == "invalid_arguments"
    assert len(model.prompts) == 2  # the model is not asked for invalid arguments
    unknown = await ex.call(ToolCall(name="nope"))
    assert unknown.error is not None and unknown.error.code == "unknown_tool"


def test_tool_declarations_are_checked() -> None:
    with pytest.raises(ToolDefinitionError, match="result_schema"):
        SimulatedTool(spec=ToolSpec(name="x"))
    with pytest.raises(ToolDefinitionError, match="bad result_schema"):
        SimulatedTool.declare("x", "", result_schema={"type": "nonsense"})
    with pytest.raises(ToolDefinitionError, match="duplicate"):
        SimulatedExecutor(ScriptedModel([]), [BALANCE, BALANCE])


class BrokenModel:
    async def generate(self, messages: Sequence[dict[str, str]], schema: dict[str, Any]) -> str:
        raise SimulationBackendError("model file missing")


async def test_composite_routes_real_tools_first_and_simulated_rest() -> None:
    phone = SandboxPhone()
    sandbox = SandboxExecutor(phone, ["settings"])
    shadow = SimulatedTool.declare(
        "set_wifi", "Simulated wifi (must be shadowed).", result_schema={"type": "object"}
    )
    sim, model = executor([{"account_id": "acc-1", "balance": 3}], BALANCE, shadow)
    composite = CompositeExecutor([sandbox, sim])
    names = [t.name for t in composite.tools()]
    assert names.count("set_wifi") == 1 and "get_balance" in names
    assert composite.route("set_wifi") is sandbox and composite.route("get_balance") is sim

    planner = ScriptedPlanner(
        [
            ToolCallAction(calls=[ToolCall(name="set_wifi", arguments={"enabled": False}), balance()]),
            {"kind": "finish", "summary": "done"},
        ]
    )
    episode = await Session(planner, composite).run("wifi off and tell me my balance")
    real, simulated = episode.steps[0].results
    assert real.ok and not real.simulated and phone.state.settings.wifi is False
    assert simulated.ok and simulated.simulated and simulated.data["balance"] == 3
    assert len(model.prompts) == 1  # set_wifi never reached the model
    missing = await composite.call(ToolCall(name="nope"))
    assert missing.error is not None and missing.error.code == "unknown_tool"

    broken = CompositeExecutor([sandbox, SimulatedExecutor(BrokenModel(), [BALANCE], state=STATE)])
    lost = await Session(ScriptedPlanner([ToolCallAction(calls=[balance()])]), broken).run("balance?")
    assert lost.stop_reason == "device_lost" and "model file missing" in lost.stop_detail


@pytest.mark.slow
async def test_real_model_produces_schema_valid_results(test_gguf: Path) -> None:
    from pocketpilot.harness.planners import LlamaCppPlanner

    planner = LlamaCppPlanner(test_gguf, n_ctx=2048)
    model = await LlamaCppResponseModel.from_planner(planner, max_tokens=96)
    ex = SimulatedExecutor(model, [BALANCE, TRANSFER], state=STATE)
    try:
        first = await ex.call(balance())
        assert first.simulated
        assert first.ok, first.error
        jsonschema.validate(first.data, BALANCE.spec.result_schema)
        assert first.data["account_id"] == "acc-1"  # the only id the IdsExist invariant accepts
        moved = await ex.call(ToolCall(name="transfer", arguments={"from_id": "acc-1", "amount": 5}))
        assert moved.simulated and moved.ok, moved.error
        jsonschema.validate(moved.data, TRANSFER.spec.result_schema)
        assert len(ex.log.records) == 2 and ex.log.state_version == 1
    finally:
        await planner.aclose()
