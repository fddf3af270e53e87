"""Section budgets are the configured numbers, from the library and the CLI."""

from __future__ import annotations

import pytest

from pocketpilot.cli._planner import context_budget
from pocketpilot.contracts import ToolSpec
from pocketpilot.errors import ContractError, UsageError
from pocketpilot.harness.base import ChatMessage
from pocketpilot.harness.context import ContextAssembler, ContextBudget


def words(n: int) -> str:
    return " ".join(["w"] * n)


def count(text: str) -> int:  # one token per word: budgets below are exact
    return len(text.split())


def test_guidance_is_kept_or_left_out_by_the_configured_budget() -> None:
    policy = words(6000)  # a long operating policy
    small = ContextAssembler(ContextBudget(), count)
    message, notices = small.prefix([], ("finish",), guidance=[policy])
    assert policy not in message.content and notices
    big = ContextAssembler(ContextBudget(guidance=6000), count)
    message, notices = big.prefix([], ("finish",), guidance=[policy])
    assert policy in message.content and not notices
    just_short = ContextAssembler(ContextBudget(guidance=5999), count)
    assert just_short.prefix([], ("finish",), guidance=[policy])[1]


def test_tools_and_rules_budgets_raise_with_the_configured_number() -> None:
    tool = ToolSpec(name="t", description=words(50), parameters={"type": "object", "properties": {}})
    with pytest.raises(ContractError, match="budget is 20"):
        ContextAssembler(ContextBudget(tools=20), count).prefix([tool], ("tool_call",))
    assert ContextAssembler(ContextBudget(tools=80), count).prefix([tool], ("tool_call",))
    with pytest.raises(ContractError, match="budget is 10"):
        ContextAssembler(ContextBudget(rules=10), count).prefix([], ("finish",))


def test_history_budget_keeps_as_many_recent_steps_as_configured() -> None:
    prefix = ChatMessage(role="system", content="s", section="prefix")
    request = ChatMessage(role="user", content="r")
    steps = [[ChatMessage(role="assistant", content=words(100))] for _ in range(10)]
    for budget, kept in ((250, 2), (1000, 10)):
        messages = ContextAssembler(ContextBudget(history=budget), count).assemble(prefix, request, steps)
        assert sum(m.role == "assistant" for m in messages) == kept


def test_cli_budget_flags_override_only_the_named_sections() -> None:
    budget = context_budget(["guidance=7000", "HISTORY = 500"])
    assert (budget.guidance, budget.history) == (7000, 500)
    assert (budget.rules, budget.tools) == (ContextBudget().rules, ContextBudget().tools)
    for bad in ("guidance", "memory=5", "guidance=lots", "guidance=0"):
        with pytest.raises(UsageError):
            context_budget([bad])
