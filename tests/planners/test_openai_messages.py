"""The context → OpenAI messages mapping, and that text-only prompts do not see the new structure."""

from __future__ import annotations

import json

import pytest
from _openai_fake import message_problems

from pocketpilot.contracts import (
    AskUser,
    Finish,
    LoadSkill,
    MemoryWrite,
    Refuse,
    Step,
    ToolCall,
    ToolCallAction,
    ToolResult,
    digest,
)
from pocketpilot.harness.base import ChatMessage, PlanRequest
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.harness.planners.openai_messages import call_id, openai_messages

PREFIX = [ChatMessage(role="system", content="rules", section="prefix"),
          ChatMessage(role="user", content="do it", section="request")]


def pair(step: Step, assistant: str, feedback: str) -> list[ChatMessage]:
    return [ChatMessage(role="assistant", content=assistant, step=step),
            ChatMessage(role="tool", content=feedback, step=step)]


def batch_step(index: int = 0) -> Step:
    action = ToolCallAction(calls=[ToolCall(name="get_a"), ToolCall(name="set_b", arguments={"on": True})])
    results = [ToolResult.success({"a": 1}), ToolResult.failure("conflict", "b is busy")]
    return Step(index=index, context_digest="d", action=action, results=results, notices=["mind b"])


def test_a_batch_becomes_one_assistant_turn_and_a_tool_message_per_call():
    out = openai_messages([*PREFIX, *pair(batch_step(), "raw", '{"results": "whole"}')])
    assert message_problems(out) == []
    assistant, first, second = out[2:]
    assert "content" not in assistant
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in assistant["tool_calls"]] \
        == [("call_0_0", "get_a", {}), ("call_0_1", "set_b", {"on": True})]
    assert (first["tool_call_id"], second["tool_call_id"]) == ("call_0_0", "call_0_1")
    one, two = json.loads(first["content"]), json.loads(second["content"])
    assert one == {"ok": True, "data": {"a": 1}}
    assert two["ok"] is False and two["error"]["code"] == "conflict" and two["notices"] == ["mind b"]


def test_a_single_call_gets_the_harness_feedback_verbatim():
    step = Step(index=3, context_digest="d", action=ToolCallAction(calls=[ToolCall(name="get_a")]),
                results=[ToolResult.success(1)])
    out = openai_messages([*PREFIX, *pair(step, "raw", "exact feedback text")])
    assert out[3] == {"role": "tool", "tool_call_id": "call_3_0", "content": "exact feedback text"}


def test_a_batch_answered_as_a_whole_gives_each_call_that_answer():
    step = batch_step().model_copy(update={"results": [ToolResult.failure("not_allowed", "no tools now")]})
    out = openai_messages([*PREFIX, *pair(step, "raw", "not allowed feedback")])
    assert message_problems(out) == []
    assert [m["content"] for m in out[3:]] == ["not allowed feedback"] * 2


@pytest.mark.parametrize(
    "action",
    [Finish(summary="done"), AskUser(question="which one?"), Refuse(reason="unsafe"),
     MemoryWrite(content="likes tea", tier="user"), LoadSkill(name="cast")],
)
def test_other_kinds_ride_as_reserved_function_calls(action):
    step = Step(index=1, context_digest="d", action=action)
    out = openai_messages([*PREFIX, *pair(step, action.model_dump_json(), "{}")])
    assert message_problems(out) == []
    (tc,) = out[2]["tool_calls"]
    fields = action.model_dump(mode="json", exclude={"kind"})
    assert tc["function"]["name"] == f"pp_{action.kind}" and json.loads(tc["function"]["arguments"]) == fields
    assert out[3] == {"role": "tool", "tool_call_id": "call_1_0", "content": "{}"}


def test_unparsed_output_stays_text_and_its_feedback_is_a_user_turn():
    step = Step(index=0, context_digest="d", action=None)
    out = openai_messages([*PREFIX, *pair(step, "garbage {", '{"error": "invalid_action"}')])
    assert out[2:] == [{"role": "assistant", "content": "garbage {"},
                       {"role": "user", "content": '{"error": "invalid_action"}'}]
    assert message_problems(out) == []


def test_messages_without_a_step_never_become_orphan_tool_messages():
    loose = [ChatMessage(role="assistant", content="hello"), ChatMessage(role="tool", content="result")]
    out = openai_messages([*PREFIX, *loose])
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert message_problems(out) == []


def test_an_unanswered_call_is_closed_before_the_next_turn():
    step = batch_step(index=2)
    out = openai_messages([*PREFIX, ChatMessage(role="assistant", content="raw", step=step),
                           ChatMessage(role="user", content="(follow-up)")])
    assert message_problems(out) == []
    assert [m.get("tool_call_id") for m in out[3:5]] == ["call_2_0", "call_2_1"]


def test_call_ids_are_stable_across_contexts():
    first = [*PREFIX, *pair(batch_step(0), "a", "b")]
    second = [*first, *pair(batch_step(1), "c", "d")]
    assert openai_messages(second)[: len(openai_messages(first))] == openai_messages(first)
    assert call_id(1, 1) in {c["id"] for m in openai_messages(second) for c in m.get("tool_calls", [])}


def test_the_step_is_left_out_of_dumps_so_context_digests_do_not_change():
    step = batch_step()
    with_step = ChatMessage(role="tool", content="x", step=step)
    without = ChatMessage(role="tool", content="x")
    assert with_step.model_dump() == without.model_dump()
    assert digest([with_step.model_dump()]) == digest([without.model_dump()])


def test_llama_cpp_prompt_ignores_the_structure(test_gguf):
    """The in-process planner's prompt (and so its KV-prefix reuse) is the same bytes as before."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    planner = LlamaCppPlanner(test_gguf)
    # a template that would show tool_calls or ids if render() passed them on
    template = ("{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ m.tool_calls }}{{ m.tool_call_id }}"
                "{{ m.step }}\n{% endfor %}")
    planner._formatter = Jinja2ChatFormatter(template=template, eos_token="", bos_token="")
    structured = [*PREFIX, *pair(batch_step(), "raw out", "feedback")]
    plain = [ChatMessage(role=m.role, content=m.content, section=m.section) for m in structured]
    tools, kinds = [], ("finish",)
    rendered = planner.render(PlanRequest(messages=structured, tools=tools, kinds=kinds))
    assert rendered == planner.render(PlanRequest(messages=plain, tools=tools, kinds=kinds))
    assert "<assistant>raw out" in rendered and "<tool>feedback" in rendered
