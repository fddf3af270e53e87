"""The Action schema restricted to one step: the source of the planner's decoding grammar.

The generic Action union lets ``tool_call`` name any tool with any arguments. For decoding we
specialise it per step: each call becomes a ``oneOf`` over the tools exposed *now*, each with
its own argument schema, so an unknown tool name or a malformed argument cannot even be
sampled. Skill and delegate names are narrowed the same way. The output is still validated
into the generic union afterwards; the grammar only makes invalid output unreachable.

A step may also split its tools into *batch groups*: every call of one batch comes from one
group (``anyOf`` over one array per group). A policy uses it to keep calls apart that cannot
sensibly run together (reads beside changes: calls of a batch run at the same time).

*Choose, then fill* splits a tool call into two decodes: ``choice_json_schema`` lets the
planner name the tools of a batch (or write any other action whole), and ``fill_json_schema``
then holds the call to exactly those tools, each call's arguments under its own tool's schema.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ..contracts import (
    ACTION_ADAPTER,
    ACTION_KINDS,
    MAX_BATCH,
    Action,
    AskUser,
    Delegate,
    Finish,
    LoadSkill,
    MemorySearch,
    MemoryWrite,
    Refuse,
    ToolCallAction,
    ToolSpec,
)
from ..errors import ContractError, PlannerOutputError
from ..models.grammar_schema import grammar_friendly

__all__ = ["action_json_schema", "choice_json_schema", "chosen_tools", "fill_json_schema", "parse_action"]

_MODELS = {
    "memory_search": MemorySearch,
    "memory_write": MemoryWrite,
    "load_skill": LoadSkill,
    "delegate": Delegate,
    "ask_user": AskUser,
    "refuse": Refuse,
    "finish": Finish,
}


def _hoist_defs(schema: dict[str, Any], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """Move a sub-schema's ``$defs`` into the root, renaming refs so tools cannot collide."""
    schema = copy.deepcopy(schema)
    local = schema.pop("$defs", {})
    if not local:
        return schema
    rename = {name: f"{prefix}__{name}" for name in local}
    text = json.dumps(schema)
    body = json.dumps(local)
    for old, new in rename.items():
        text = text.replace(f'"#/$defs/{old}"', f'"#/$defs/{new}"')
        body = body.replace(f'"#/$defs/{old}"', f'"#/$defs/{new}"')
    for old, sub in json.loads(body).items():
        defs[rename[old]] = sub
    return json.loads(text)


def _call_variants(tools: Sequence[ToolSpec], defs: dict[str, Any], lengths: bool) -> list[dict[str, Any]]:
    variants = []
    for spec in tools:
        params = _hoist_defs(grammar_friendly(spec.parameters, lengths=lengths), re.sub(r"\W", "_", spec.name), defs)
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        variants.append(
            {
                "type": "object",
                "properties": {"name": {"const": spec.name}, "arguments": params},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return variants


def _tool_call_schema(tools: Sequence[ToolSpec], defs: dict[str, Any],
                      groups: Sequence[Sequence[str]] = (), lengths: bool = False) -> dict[str, Any]:
    variants = _call_variants(tools, defs, lengths)
    by_name = {spec.name: v for spec, v in zip(tools, variants, strict=True)}
    parts = [[by_name[n] for n in g if n in by_name] for g in groups]
    parts = [p for p in parts if p]
    if len(parts) < 2:
        parts = [variants]
    arrays = []
    for i, part in enumerate(parts):
        # A named rule: llama.cpp's grammar parser expands the {1,4} repetition of an inline
        # union rule by rule and refuses past ~10 tools; a reference repeats one symbol.
        name = "call" if len(parts) == 1 else f"call_{i}"
        defs[name] = part[0] if len(part) == 1 else {"oneOf": part}
        arrays.append({"type": "array", "items": {"$ref": f"#/$defs/{name}"}, "minItems": 1, "maxItems": MAX_BATCH})
    return {
        "type": "object",
        "properties": {"kind": {"const": "tool_call"}, "calls": arrays[0] if len(arrays) == 1 else {"anyOf": arrays}},
        "required": ["kind", "calls"],
        "additionalProperties": False,
    }


def _simple_schema(kind: str, skills: Sequence[str], tools: Sequence[ToolSpec], lengths: bool = False,
                   answers: bool = False) -> dict[str, Any]:
    schema = grammar_friendly(_MODELS[kind].model_json_schema(), lengths=lengths)
    props = schema["properties"]
    props["kind"] = {"const": kind}
    schema["required"] = ["kind", *[r for r in schema.get("required", []) if r != "kind"]]
    if kind == "finish":
        if answers:  # a plain string: an optional null only costs the planner a choice
            props["answer"] = {"type": "string", "minLength": 1, **({"maxLength": 400} if lengths else {})}
        else:  # the answer path is off: the grammar is the one it was before the field existed
            props.pop("answer", None)
    if kind == "load_skill":
        props["name"] = {"enum": list(skills)}
    if kind == "delegate":
        names = [t.name for t in tools]
        props["tools"] = {"type": "array", "items": {"enum": names}, "maxItems": 16}
    schema["additionalProperties"] = False
    return schema


def action_json_schema(
    tools: Sequence[ToolSpec],
    kinds: Sequence[str] = ACTION_KINDS,
    skills: Sequence[str] = (),
    batch_groups: Sequence[Sequence[str]] = (),
    *,
    lengths: bool = False,
    answers: bool = False,
) -> dict[str, Any]:
    """JSON schema of the actions allowed in one step.

    Args:
        tools: the tools exposed now; ``tool_call`` is dropped when there are none.
        kinds: allowed action kinds, in the order the prompt lists them.
        skills: loadable skill names; ``load_skill`` is dropped when there are none.
        batch_groups: tool names a batch takes all its calls from one of (fewer than two
            non-empty groups: any mix).
        lengths: keep every string length bound (an engine that enforces them cheaply); by
            default long ones are dropped for llama.cpp's GBNF converter.
        answers: ``finish`` may carry an ``answer`` (the harness's answer path is on).
    """
    unknown = [k for k in kinds if k not in ACTION_KINDS]
    if unknown:
        raise ContractError(f"unknown action kinds: {unknown}")
    defs: dict[str, Any] = {}
    variants = []
    for kind in kinds:
        if kind == "tool_call":
            if tools:
                variants.append(_tool_call_schema(tools, defs, batch_groups, lengths))
        elif kind == "load_skill":
            if skills:
                variants.append(_simple_schema(kind, skills, tools, lengths))
        elif kind == "delegate":
            if tools:
                variants.append(_simple_schema(kind, skills, tools, lengths))
        else:
            variants.append(_simple_schema(kind, skills, tools, lengths, answers))
    if not variants:
        raise ContractError("no action kind is possible in this step")
    schema: dict[str, Any] = variants[0] if len(variants) == 1 else {"oneOf": variants}
    if defs:
        schema = {**schema, "$defs": defs}
    return schema


def _choice_variant(tools: Sequence[ToolSpec], groups: Sequence[Sequence[str]] = ()) -> dict[str, Any]:
    """``{"kind":"tool_call","tools":[names]}``: which tools a batch calls, in call order, no arguments."""
    names = [t.name for t in tools]
    parts = [[n for n in g if n in names] for g in groups]
    parts = [p for p in parts if p]
    if len(parts) < 2:
        parts = [names]
    arrays = [{"type": "array", "items": {"enum": p}, "minItems": 1, "maxItems": MAX_BATCH} for p in parts]
    return {
        "type": "object",
        "properties": {"kind": {"const": "tool_call"}, "tools": arrays[0] if len(arrays) == 1 else {"anyOf": arrays}},
        "required": ["kind", "tools"],
        "additionalProperties": False,
    }


def choice_json_schema(
    action_schema: dict[str, Any], tools: Sequence[ToolSpec], batch_groups: Sequence[Sequence[str]] = ()
) -> dict[str, Any]:
    """The first decode of *choose, then fill*: ``action_schema`` (a step's, from
    :func:`action_json_schema`) with its tool call naming the tools only; other kinds stay whole.

    The tool call's grammar holds no argument schema, so the choice among tools is not steered
    by which tool's arguments are easiest to write; :func:`fill_json_schema` follows it.
    """
    variants = action_schema.get("oneOf", [action_schema])
    if not tools or not any(_is_tool_call(v) for v in variants):
        return action_schema
    choice = _choice_variant(tools, batch_groups)
    variants = [choice if _is_tool_call(v) else v for v in variants]
    defs = _referenced(variants, action_schema.get("$defs", {}))  # the simple kinds' own; none of the calls'
    out: dict[str, Any] = variants[0] if len(variants) == 1 else {"oneOf": variants}
    return {**out, "$defs": defs} if defs else out


def _is_tool_call(variant: dict[str, Any]) -> bool:
    return variant.get("properties", {}).get("kind") == {"const": "tool_call"}


def _referenced(node: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The ``$defs`` entries ``node`` refers to, directly or through each other."""
    keep: dict[str, Any] = {}
    todo = [node]
    while todo:
        text = json.dumps(todo.pop())
        for name in re.findall(r'"#/\$defs/([^"]+)"', text):
            if name in defs and name not in keep:
                keep[name] = defs[name]
                todo.append(defs[name])
    return keep


def chosen_tools(raw: str) -> list[str] | None:
    """The tool names a choice names, in call order; None when the choice is a whole action."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if isinstance(data, dict) and data.get("kind") == "tool_call" and isinstance(data.get("tools"), list):
        return [str(n) for n in data["tools"]]
    return None


def fill_json_schema(tools: Sequence[ToolSpec], chosen: Sequence[str], *, lengths: bool = False) -> dict[str, Any]:
    """The second decode of *choose, then fill*: one call per chosen name, in that order, each
    with its arguments under that tool's own schema (a tuple, so the names are forced).

    Raises:
        ContractError: a chosen name is not among ``tools``, or there are none or too many.
    """
    by_name = {t.name: t for t in tools}
    unknown = [n for n in chosen if n not in by_name]
    if unknown or not 1 <= len(chosen) <= MAX_BATCH:
        raise ContractError(f"cannot fill a call to {list(chosen)}: {len(chosen)} tool(s), unknown {unknown}")
    defs: dict[str, Any] = {}
    items = _call_variants([by_name[n] for n in chosen], defs, lengths)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "kind": {"const": "tool_call"},
            "calls": {"type": "array", "prefixItems": items, "items": False,
                      "minItems": len(items), "maxItems": len(items)},
        },
        "required": ["kind", "calls"],
        "additionalProperties": False,
    }
    return {**schema, "$defs": defs} if defs else schema


def parse_action(
    raw: str, tools: Sequence[ToolSpec] | None = None, kinds: Sequence[str] = ACTION_KINDS
) -> Action:
    """Validate raw planner output into an Action allowed in this step.

    A batch that spans batch groups is not rejected here: a planner that did not honour the
    grammar gets the policy that asked for the groups to decide on it, call by call.

    Raises:
        PlannerOutputError: not JSON, not an Action, a disallowed kind, or an unexposed tool.
    """
    try:
        action = ACTION_ADAPTER.validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise PlannerOutputError(raw, f"{loc}: {first['msg']}" if loc else first["msg"]) from exc
    if action.kind not in kinds:
        raise PlannerOutputError(raw, f"action kind {action.kind!r} is not allowed here")
    if tools is not None and isinstance(action, ToolCallAction):
        exposed = {t.name for t in tools}
        for call in action.calls:
            if call.name not in exposed:
                raise PlannerOutputError(raw, f"tool {call.name!r} is not exposed in this step")
    return action
