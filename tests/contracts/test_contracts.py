from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pocketpilot.contracts import (
    ACTION_ADAPTER,
    ACTION_KINDS,
    CriterionResult,
    Episode,
    EpisodeHeader,
    Finish,
    PlannerInfo,
    Step,
    ToolCall,
    ToolCallAction,
    ToolResult,
    ToolSpec,
    Verdict,
)
from pocketpilot.errors import ContractError, PlannerOutputError
from pocketpilot.harness.action_schema import action_json_schema, parse_action

EXAMPLES = [
    {"kind": "tool_call", "calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]},
    {"kind": "memory_search", "query": "sister birthday", "tier": "user", "k": 3},
    {"kind": "memory_write", "content": "likes jazz", "tier": "user", "category": "pref"},
    {"kind": "load_skill", "name": "casting"},
    {"kind": "delegate", "instruction": "open notes", "tools": ["a"], "artifacts": {"note_id": "n1"}},
    {"kind": "ask_user", "question": "which one?"},
    {"kind": "refuse", "reason": "unsafe"},
    {"kind": "finish", "summary": "done"},
]


@pytest.mark.parametrize("data", EXAMPLES, ids=[e["kind"] for e in EXAMPLES])
def test_action_round_trip(data):
    action = ACTION_ADAPTER.validate_python(data)
    assert action.kind == data["kind"]
    again = ACTION_ADAPTER.validate_json(ACTION_ADAPTER.dump_json(action))
    assert again == action


def test_every_kind_is_covered():
    assert sorted(e["kind"] for e in EXAMPLES) == sorted(ACTION_KINDS)


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "tool_call", "calls": []},
        {"kind": "tool_call", "calls": [{"name": "a"}] * 5},
        {"kind": "finish"},
        {"kind": "teleport"},
        {"kind": "finish", "summary": "x", "extra": 1},
    ],
)
def test_invalid_actions_rejected(bad):
    with pytest.raises(ValidationError):
        ACTION_ADAPTER.validate_python(bad)


def test_contracts_are_frozen():
    result = ToolResult.success({"a": 1})
    with pytest.raises(ValidationError):
        result.ok = False  # type: ignore[misc]


def test_toolspec_openai_round_trip():
    spec = ToolSpec(
        name="send_sms",
        description="Send a text",
        parameters={"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
        destructive=True,
    )
    exported = spec.to_openai()
    assert exported["type"] == "function" and exported["function"]["name"] == "send_sms"
    assert ToolSpec.from_openai(exported) == spec
    plain = ToolSpec.from_openai({"type": "function", "function": {"name": "x"}})
    assert plain.parameters["type"] == "object" and not plain.destructive
    with pytest.raises(ValueError):
        ToolSpec.from_openai({"type": "function", "function": {}})


def test_tool_result_shapes():
    bad = ToolResult.failure("conflict", "a cast is live")
    assert bad.model_dump() == {
        "ok": False,
        "data": None,
        "error": {"code": "conflict", "message": "a cast is live"},
        "simulated": False,
    }


def test_episode_round_trip_and_helpers():
    header = EpisodeHeader(episode_id="e1", request="r", planner=PlannerInfo(backend="x", model="m"))
    step = Step(
        index=0,
        context_digest="d",
        action=ToolCallAction(calls=[ToolCall(name="a", arguments={"x": 1})]),
        results=[ToolResult.success(1)],
    )
    verdict = Verdict(success=False, criteria=[CriterionResult(name="a", passed=True), CriterionResult(name="b", passed=False)])
    episode = Episode(header=header, steps=[step], stop_reason="finish", verdict=verdict)
    again = Episode.model_validate_json(episode.model_dump_json())
    assert again == episode
    assert again.tool_calls()[0][1].name == "a"
    assert verdict.progress == 0.5


def test_call_key_is_argument_order_independent():
    assert ToolCall(name="a", arguments={"x": 1, "y": 2}).key() == ToolCall(name="a", arguments={"y": 2, "x": 1}).key()


TOOLS = [
    ToolSpec(name="set_wifi", parameters={"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"]}),
    ToolSpec(name="note", parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
]


def test_schema_restricts_tool_names_to_exposed():
    schema = action_json_schema(TOOLS, ("tool_call", "finish"))
    tool_variant = schema["oneOf"][0]
    assert tool_variant["properties"]["calls"]["items"] == {"$ref": "#/$defs/call"}
    names = [v["properties"]["name"]["const"] for v in schema["$defs"]["call"]["oneOf"]]
    assert names == ["set_wifi", "note"]
    assert [v["properties"]["kind"]["const"] for v in schema["oneOf"]] == ["tool_call", "finish"]
    assert all("kind" in v["required"] for v in schema["oneOf"])


def test_schema_drops_impossible_kinds_and_narrows_skills():
    schema = action_json_schema([], ("tool_call", "load_skill", "finish"), skills=["cast"])
    kinds = [v["properties"]["kind"]["const"] for v in schema["oneOf"]]
    assert kinds == ["load_skill", "finish"]
    assert schema["oneOf"][0]["properties"]["name"] == {"enum": ["cast"]}
    with pytest.raises(ContractError):
        action_json_schema([], ("tool_call",))
    with pytest.raises(ContractError):
        action_json_schema(TOOLS, ("fly",))


def test_schema_keeps_length_bounds_only_for_an_engine_that_enforces_them():
    """A 1.5B wrote a 480-character finish summary three times over: the grammar had dropped the
    400 bound (for llama.cpp's GBNF converter), validation then refused it, and greedy decoding
    wrote it again. With ``lengths`` every bound reaches the grammar; without, long ones go."""
    body = ToolSpec(name="post", parameters={"type": "object", "properties": {
        "text": {"type": "string", "minLength": 3, "maxLength": 480}}, "required": ["text"]})

    def bounds(schema):
        finish = next(v for v in schema["oneOf"] if v["properties"]["kind"] == {"const": "finish"})
        text = schema["$defs"]["call"]["properties"]["arguments"]["properties"]["text"]
        return finish["properties"]["summary"], text

    summary, text = bounds(action_json_schema([body], ("tool_call", "finish"), lengths=True))
    assert summary["maxLength"] == Finish.model_fields["summary"].metadata[-1].max_length == 400
    assert (text["minLength"], text["maxLength"]) == (3, 480)
    summary, text = bounds(action_json_schema([body], ("tool_call", "finish")))
    assert "maxLength" not in summary and "maxLength" not in text and text["minLength"] == 1


def test_schema_hoists_nested_defs_per_tool():
    nested = ToolSpec(
        name="alarm",
        parameters={
            "type": "object",
            "properties": {"when": {"$ref": "#/$defs/Time"}},
            "$defs": {"Time": {"type": "object", "properties": {"h": {"type": "integer"}}}},
        },
    )
    schema = action_json_schema([nested], ("tool_call",))
    assert "alarm__Time" in schema["$defs"]
    assert '"#/$defs/alarm__Time"' in json.dumps(schema)


def test_parse_action_checks_kind_and_exposure():
    raw = json.dumps({"kind": "tool_call", "calls": [{"name": "ghost", "arguments": {}}]})
    with pytest.raises(PlannerOutputError, match="not exposed"):
        parse_action(raw, TOOLS)
    with pytest.raises(PlannerOutputError, match="not allowed"):
        parse_action('{"kind":"finish","summary":"x"}', TOOLS, ("tool_call",))
    with pytest.raises(PlannerOutputError):
        parse_action('{"kind":"finish","summary":', TOOLS)
    assert parse_action('{"kind":"finish","summary":"ok"}', TOOLS).kind == "finish"


def test_patterns_are_rewritten_for_llama_grammar():
    spec = ToolSpec(name="alarm", parameters={"type": "object", "properties": {
        "time": {"type": "string", "pattern": r"^([01]\d|2[0-3]):[0-5]\d$"}}})
    schema = action_json_schema([spec], ("tool_call",))
    pattern = schema["$defs"]["call"]["properties"]["arguments"]["properties"]["time"]["pattern"]
    assert "\\d" not in pattern and pattern == "^([01][0-9]|2[0-3]):[0-5][0-9]$"


def test_long_length_bounds_leave_the_grammar_but_not_validation():
    schema = action_json_schema([], ("finish",))
    assert "maxLength" not in schema["properties"]["summary"]
    with pytest.raises(PlannerOutputError):
        parse_action(json.dumps({"kind": "finish", "summary": "x" * 401}))
