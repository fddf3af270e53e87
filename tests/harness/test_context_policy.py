"""The standing policy sits right after the rules, takes the guidance budget first, and leaves
the prompt byte for byte as it was when there is none."""

from __future__ import annotations

from pocketpilot.contracts import ToolSpec
from pocketpilot.harness.context import RULES, ContextAssembler, ContextBudget

TOOLS = [ToolSpec(name="get_settings", description="Read the settings.", parameters={"type": "object", "properties": {}})]
KINDS = ["tool_call", "finish"]


def _count(text: str) -> int:
    return len(text.split())


def test_no_policy_leaves_the_prompt_as_it_was() -> None:
    message, _ = ContextAssembler(ContextBudget(), _count).prefix(TOOLS, KINDS, ["A routed note."])
    assert message.content.startswith(RULES + "\n\nActions:\n")
    assert message.content.endswith("\n\nGuidance:\nA routed note.")


def test_the_policy_comes_after_the_rules_and_before_what_a_request_changes() -> None:
    message, notices = ContextAssembler(ContextBudget(), _count).prefix(
        TOOLS, KINDS, ["A routed note."], policy=["Policy line one.", "Policy line two."])
    text = message.content
    assert text.startswith(RULES + "\n\nOperating policy:\nPolicy line one.\nPolicy line two.\n\nActions:\n")
    assert text.index("Policy line two.") < text.index("Tools:") < text.index("Guidance:\nA routed note.")
    assert notices == []


def test_the_policy_takes_the_guidance_budget_first() -> None:
    policy = "word " * 8
    assembler = ContextAssembler(ContextBudget(guidance=10), _count)
    message, notices = assembler.prefix(TOOLS, KINDS, ["a routed note that does not fit"], policy=[policy])
    assert policy in message.content and "Guidance:" not in message.content
    assert len(notices) == 1 and "routed note" in notices[0]
    message, notices = ContextAssembler(ContextBudget(guidance=4), _count).prefix(TOOLS, KINDS, [], policy=[policy])
    assert "Operating policy:" not in message.content and "left out for budget" in notices[0]
