"""Verifier building blocks: judge an episode from the final state and the calls it made.

Each criterion yields one :class:`~pocketpilot.contracts.CriterionResult` whose ``detail`` says
why it failed (or what satisfied it), so a failed verdict reads as a diagnosis.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..contracts import (
    AskUser,
    CriterionResult,
    Delegate,
    Episode,
    Finish,
    Refuse,
    ToolCall,
    ToolResult,
    ToolSpec,
    Verdict,
    spec_for_call,
)
from ..executor.sandbox import MISSING, resolve_path
from ..executor.sandbox.diff import diff_values
from ..handoff import review_handoff
from .forms import ValueForm, says_value
from .spec import (
    ActionCountCriterion,
    ActionOrderCriterion,
    ActionPattern,
    AnswerCriterion,
    CallCriterion,
    CallPattern,
    CheckCriterion,
    CountCriterion,
    Criterion,
    DelegateCriterion,
    DelegationOrderCriterion,
    DelegationPattern,
    EitherCriterion,
    LastCallCriterion,
    NoCallCriterion,
    NoErrorCriterion,
    NoParentCallCriterion,
    NumberInTextCriterion,
    OrderCriterion,
    StateCriterion,
    StopCriterion,
    TaskSpec,
    UnchangedCriterion,
)
from .world import WorldState, import_ref, state_data

__all__ = ["check_criterion", "matches", "numbers_in", "resolve_check", "verify"]

_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0](?=\d{3}\b)")


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, default=str) if value is not MISSING else "<missing>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def matches(actual: Any, expected: Any, forms: Mapping[str, ValueForm] | None = None) -> bool:
    """Whether ``actual`` matches ``expected`` the way criteria compare values.

    A dict matches as a subset (each expected key matches recursively); a string expected of a
    string actual matches by case-insensitive containment; a bool or number by equality (a bool
    never equals a number); anything else by equality. A key of an expected dict with a declared
    form in ``forms`` matches text that says its value in any of the form's equivalent forms.
    """
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _field_matches(actual[k], v, (forms or {}).get(k)) for k, v in expected.items()
        )
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.lower() in actual.lower()
    return _equal(actual, expected)


def _equal(actual: Any, expected: Any) -> bool:
    """Equality where a bool never equals a number (``True == 1`` would let a bug pass)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return bool(actual == expected)


def _field_matches(actual: Any, expected: Any, form: ValueForm | None) -> bool:
    """One field of a record: by its declared form where it is text that may say the value."""
    if form is not None and isinstance(actual, str) and isinstance(expected, str):
        return says_value(form, expected, actual)
    return matches(actual, expected)


def _contains(actual: Any, expected: Any, forms: Mapping[str, ValueForm] | None = None) -> bool:
    if isinstance(actual, list):
        return any(matches(item, expected, forms) for item in actual)
    if isinstance(actual, str) and isinstance(expected, str):
        return expected.lower() in actual.lower()
    if isinstance(actual, dict):
        return matches(actual, expected, forms)
    return False


def _call_matches(call: ToolCall, pattern: CallPattern) -> bool:
    return call.name == pattern.tool and matches(call.arguments, pattern.args)


Position = tuple[int, ...]
"""Where a call happened: ``(step,)`` in the episode, ``(step, child_step)`` inside a sub-agent."""


def _calls(episode: Episode) -> list[tuple[Position, ToolCall, ToolResult | None]]:
    """Every tool call in order, sub-agents' calls included at their parent's delegate step.

    A sub-agent acts on the same world, so its calls count as the episode's evidence; their
    position keeps the order inside the child, and a parent step before the delegation sorts
    before them.
    """
    out: list[tuple[Position, ToolCall, ToolResult | None]] = []
    for step in episode.steps:
        for i, call in _step_calls(step):
            out.append(((step.index,), call, step.results[i] if i < len(step.results) else None))
        for child in step.children:
            for pos, call, res in _calls(child):
                out.append(((step.index, *pos), call, res))
    return out


def _step_calls(step: Any) -> list[tuple[int, ToolCall]]:
    action = step.action
    calls = getattr(action, "calls", None) if action is not None and action.kind == "tool_call" else None
    return list(enumerate(calls or []))


def _where(pos: Position) -> str:
    return f"step {pos[0]}" + "".join(f".{p}" for p in pos[1:])


def _added(value: Any, before: Any) -> Any:
    """The elements of list ``value`` that ``before`` lacked (by ``id`` where elements have one)."""
    if not isinstance(value, list):
        return value
    old = before if isinstance(before, list) else []
    ids = {e.get("id") for e in old if isinstance(e, dict) and "id" in e}
    return [e for e in value
            if not (isinstance(e, dict) and "id" in e and e["id"] in ids) and not any(_equal(e, o) for o in old)]


def _state(c: StateCriterion, final: dict[str, Any], initial: dict[str, Any] | None = None) -> CriterionResult:
    value = resolve_path(final, c.path)
    if c.created and value is not MISSING:
        value = _added(value, resolve_path(initial or {}, c.path))
    test = c.test
    if test == "equals":
        ok = value is not MISSING and _equal(value, c.equals)
        want = f"== {_short(c.equals)}"
    elif test == "one_of":
        ok = value is not MISSING and any(_equal(value, v) for v in c.one_of or [])
        want = f"in {_short(c.one_of)}"
    elif test == "contains":
        ok = value is not MISSING and _contains(value, c.contains, c.forms)
        said = f" ({', '.join(c.forms)} in any declared form)" if c.forms else ""
        want = f"contains {'a new ' if c.created else ''}{_short(c.contains)}{said}"
    elif test == "between":
        lo, hi = c.between or (0.0, 0.0)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = number and lo <= value <= hi
        want = f"between {lo:g} and {hi:g}"
    else:
        ok = value is not MISSING and not _contains(value, c.not_contains)
        want = f"does not contain {_short(c.not_contains)}"
    name = c.name or f"state {c.path} {want}"
    return CriterionResult(name=name, passed=ok, detail=f"{c.path} is {_short(value)}")


def _outcome(result: ToolResult | None) -> str:
    if result is None:
        return "no result"
    return "ok" if result.ok else (result.error.code if result.error else "failed")


def _call(c: CallCriterion, episode: Episode) -> CriterionResult:
    name = c.name or f"call {c.label()}" + ("" if c.ok is True else f" (ok={c.ok})") + (
        f" x{c.min_count}" if c.min_count > 1 else ""
    )
    same_tool = [(call, res) for _, call, res in _calls(episode) if call.name == c.tool]
    hits = [
        (call, res)
        for call, res in same_tool
        if matches(call.arguments, c.args) and (c.ok is None or (res is not None and res.ok == c.ok))
    ]
    if len(hits) >= c.min_count:
        return CriterionResult(name=name, passed=True, detail=f"{len(hits)} matching call(s)")
    if not same_tool:
        return CriterionResult(name=name, passed=False, detail=f"{c.tool} was never called", missing=True)
    seen = "; ".join(f"{_short(call.arguments, 80)} -> {_outcome(res)}" for call, res in same_tool[:3])
    return CriterionResult(name=name, passed=False, detail=f"{len(hits)} of {c.min_count} needed; calls seen: {seen}")


def _no_call(c: NoCallCriterion, episode: Episode) -> CriterionResult:
    name = c.name or f"no call {c.label()}"
    bad = [(i, call) for i, call, _ in _calls(episode) if _call_matches(call, c)]
    if not bad:
        return CriterionResult(name=name, passed=True, detail="never attempted")
    pos, call = bad[0]
    return CriterionResult(
        name=name, passed=False, detail=f"attempted at {_where(pos)}: {_short(call.arguments, 80)}"
    )


def _first_ok(episode: Episode, pattern: CallPattern) -> Position | None:
    for step, call, res in _calls(episode):
        if _call_matches(call, pattern) and res is not None and res.ok:
            return step
    return None


def _judge_order(name: str, labels: tuple[str, str], first: Position | None, then: Position | None,
                 missing: str) -> CriterionResult:
    """Whether ``first`` came strictly before ``then`` (one judgement for calls and for actions)."""
    before, after = labels
    if first is None:
        return CriterionResult(name=name, passed=False, detail=f"{missing}{before}")
    if then is None:
        return CriterionResult(name=name, passed=False, detail=f"{missing}{after}")
    if first < then:
        return CriterionResult(name=name, passed=True, detail=f"{_where(first)} before {_where(then)}")
    how = "in the same parallel batch as" if first == then else "after"
    return CriterionResult(name=name, passed=False,
                           detail=f"{before} ({_where(first)}) came {how} {after} ({_where(then)})")


def _order(c: OrderCriterion, episode: Episode) -> CriterionResult:
    name = c.name or f"order {c.before.label()} before {c.after.label()}"
    return _judge_order(name, (c.before.label(), c.after.label()), _first_ok(episode, c.before),
                        _first_ok(episode, c.after), "no successful ")


def _allowed(path: str, allow: list[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in allow)


def _unchanged(c: UnchangedCriterion, initial: dict[str, Any], final: dict[str, Any]) -> CriterionResult:
    name = c.name or ("nothing else changed" + (f" (allowed: {', '.join(c.allow)})" if c.allow else ""))
    extra = [ch for ch in diff_values(initial, final) if not _allowed(ch.path, c.allow)]
    if not extra:
        return CriterionResult(name=name, passed=True, detail="no other change")
    shown = "; ".join(f"{ch.path}: {_short(ch.before, 40)} -> {_short(ch.after, 40)}" for ch in extra[:4])
    more = f" (+{len(extra) - 4} more)" if len(extra) > 4 else ""
    return CriterionResult(name=name, passed=False, detail=f"unexpected change(s): {shown}{more}")


def _stop_reason(episode: Episode) -> str | None:
    if episode.stop_reason is not None:
        return episode.stop_reason
    action = episode.final_action
    if isinstance(action, (Finish, AskUser, Refuse)):
        return action.kind
    return None


def _stop(c: StopCriterion, episode: Episode) -> CriterionResult:
    name = c.name or f"stop by {' or '.join(c.reason)}"
    reason = _stop_reason(episode)
    return CriterionResult(name=name, passed=reason in c.reason, detail=f"stopped by {reason}")


def _normalize(text: str) -> str:
    return _THOUSANDS.sub("", text).lower()


def _answer(c: AnswerCriterion, episode: Episode) -> CriterionResult:
    parts = []
    if c.all_of:
        parts.append(" and ".join(map(repr, c.all_of)))
    if c.any_of:
        parts.append("one of " + ", ".join(map(repr, c.any_of)))
    name = c.name or f"answer mentions {' and '.join(parts)}"
    action = episode.final_action
    if not isinstance(action, Finish):
        kind = action.kind if action is not None else "nothing"
        return CriterionResult(name=name, passed=False, detail=f"the episode ended with {kind}, not finish")
    told = action.said  # the answer (the harness's answer path) and the summary: all the finish says
    text = _normalize(told)

    def said(value: str) -> bool:
        return says_value(c.form, value, told) if c.form is not None else _normalize(value) in text

    missing = [s for s in c.all_of if not said(s)]
    any_ok = not c.any_of or any(said(s) for s in c.any_of)
    if not missing and any_ok:
        return CriterionResult(name=name, passed=True, detail="found in the summary")
    why = f"missing {missing}" if missing else f"none of {c.any_of}"
    return CriterionResult(name=name, passed=False, detail=f"{why} in summary {_short(action.summary, 100)}")


def _tools_used(child: Episode | None) -> tuple[set[str], set[str]]:
    """The tools a sub-agent called successfully, and every tool it attempted."""
    if child is None:
        return set(), set()
    calls = _calls(child)
    return {call.name for _, call, res in calls if res is not None and res.ok}, {call.name for _, call, _ in calls}


def _delegation_matches(step: Any, instruction: str | None, artifacts: dict[str, str], used: list[str]) -> bool:
    child = step.children[0] if step.children else None
    ok_used, _ = _tools_used(child)
    return ((instruction is None or instruction.lower() in step.action.instruction.lower())
            and matches(step.action.artifacts, artifacts) and all(t in ok_used for t in used))


def _delegated(c: DelegateCriterion, episode: Episode) -> CriterionResult:
    name = c.name or "delegated" + (f" {c.instruction!r}" if c.instruction else "") + (
        f" with artifacts {_short(c.artifacts, 60)}" if c.artifacts else ""
    ) + (f" passing {', '.join(c.artifact_values)}" if c.artifact_values else "") + (
        f" using {', '.join(c.used)}" if c.used else ""
    ) + (f" without {', '.join(c.not_used)}" if c.not_used else "")
    seen: list[str] = []
    hits = 0
    for step in episode.steps:
        if not isinstance(step.action, Delegate):
            continue
        child = step.children[0] if step.children else None
        # the harness's own judgement of the hand-off: a child that finished after a denied or
        # failed call did not do the work, whatever its finish says
        confirmed = child is not None and review_handoff(child).confirmed
        ok_instr = c.instruction is None or c.instruction.lower() in step.action.instruction.lower()
        values = [v.lower() for v in step.action.artifacts.values()]
        ok_art = matches(step.action.artifacts, c.artifacts) and all(
            any(want.lower() in v for v in values) for want in c.artifact_values
        )
        ok_used, attempted = _tools_used(child)
        missing = [t for t in c.used if t not in ok_used]
        forbidden = sorted(t for t in c.not_used if t in attempted)
        if ok_instr and ok_art and (confirmed or not c.confirmed) and not missing and not forbidden:
            hits += 1
        tools_note = (f", did not use {', '.join(missing)}" if missing else "") + (
            f", used {', '.join(forbidden)}" if forbidden else "")
        seen.append(f"step {step.index}: artifacts {_short(step.action.artifacts, 60)}, confirmed={confirmed}"
                    f"{tools_note}")
    if hits >= c.min_count:
        return CriterionResult(name=name, passed=True, detail=f"{hits} matching delegation(s)")
    detail = "; ".join(seen[:3]) if seen else "no delegate action"
    return CriterionResult(name=name, passed=False, detail=detail)


def _count(c: CountCriterion, episode: Episode) -> CriterionResult:
    bounds = [f">= {c.at_least}"] if c.at_least is not None else []
    bounds += [f"<= {c.at_most}"] if c.at_most is not None else []
    which = "" if c.ok is None else " successful" if c.ok else " failed"
    name = c.name or f"count{which} {c.label()} {' and '.join(bounds)}"
    n = sum(1 for _, call, res in _calls(episode)
            if _call_matches(call, c) and (c.ok is None or (res is not None and res.ok == c.ok)))
    ok = (c.at_least is None or n >= c.at_least) and (c.at_most is None or n <= c.at_most)
    return CriterionResult(name=name, passed=ok, detail=f"{n} matching call(s)")


def _changes_state(call: ToolCall, specs: Mapping[str, ToolSpec]) -> bool:
    """Whether ``call`` may change the world, by its tool's declared spec for these arguments
    (an unknown tool changes nothing).
    """
    spec = spec_for_call(specs, call)
    return spec is not None and spec.changes_state


def _last_call(c: LastCallCriterion, episode: Episode, specs: Mapping[str, ToolSpec]) -> CriterionResult:
    name = c.name or f"last state-changing call is {c.label()}"
    changing = [(pos, call, res) for pos, call, res in _calls(episode) if _changes_state(call, specs)]
    if not changing:
        return CriterionResult(name=name, passed=False, detail="no state-changing call")
    pos, call, res = changing[-1]
    together = [other.name for p, other, _ in changing[:-1] if p == pos]
    if together:  # calls of one parallel batch are simultaneous: none of them came last
        return CriterionResult(name=name, passed=False, detail=f"{call.name} ran in one parallel batch with "
                                                              f"{', '.join(together)} at {_where(pos)}")
    ok = _call_matches(call, c) and (not c.ok or (res is not None and res.ok))
    what = f"{call.name}({_short(call.arguments, 60)}) at {_where(pos)} -> {_outcome(res)}"
    return CriterionResult(name=name, passed=ok, detail=f"last state-changing call: {what}")


def _no_error(c: NoErrorCriterion, episode: Episode) -> CriterionResult:
    name = c.name or f"no {c.tool + ' ' if c.tool else ''}call failed with {c.code}"
    bad = [(pos, call) for pos, call, res in _calls(episode)
           if res is not None and not res.ok and res.error is not None and res.error.code == c.code
           and (c.tool is None or call.name == c.tool)]
    if not bad:
        return CriterionResult(name=name, passed=True, detail=f"no {c.code} failure")
    pos, call = bad[0]
    return CriterionResult(name=name, passed=False, detail=f"{call.name} failed with {c.code} at {_where(pos)}"
                                                          + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""))


def _first_delegation(episode: Episode, pattern: DelegationPattern) -> int | None:
    for step in episode.steps:
        if isinstance(step.action, Delegate) and _delegation_matches(
                step, pattern.instruction, pattern.artifacts, pattern.used):
            return step.index
    return None


def _delegation_order(c: DelegationOrderCriterion, episode: Episode) -> CriterionResult:
    name = c.name or f"order {c.before.label()} before {c.after.label()}"
    first, then = _first_delegation(episode, c.before), _first_delegation(episode, c.after)
    if first is None:
        return CriterionResult(name=name, passed=False, detail=f"no {c.before.label()}")
    if then is None:
        return CriterionResult(name=name, passed=False, detail=f"no {c.after.label()}")
    if first < then:
        return CriterionResult(name=name, passed=True, detail=f"step {first} before step {then}")
    return CriterionResult(name=name, passed=False, detail=f"{c.before.label()} (step {first}) came after or with "
                                                          f"{c.after.label()} (step {then})")


# ---------------------------------------------------------------- either field, numbers in text


def _records(final: dict[str, Any], initial: dict[str, Any] | None, path: str | None,
             created: bool) -> tuple[list[tuple[str, Any]], Any]:
    """The records ``fields`` are read under: the state root, the value at ``path``, or each
    element of it when it is a list (only those this run added, with ``created``); and the value.
    """
    if path is None:
        return [("", final)], final
    value = resolve_path(final, path)
    if value is MISSING:
        return [], value
    if created:
        value = _added(value, resolve_path(initial or {}, path))
    if isinstance(value, list):
        return [(f"{path}.{i}", e) for i, e in enumerate(value)], value
    return [(path, value)], value


def _candidates(final: dict[str, Any], initial: dict[str, Any] | None, path: str | None, fields: list[str],
                created: bool) -> tuple[list[tuple[str, Any]], Any]:
    """Every (path, value) the test looks at, and the value at ``path`` (for the detail)."""
    records, value = _records(final, initial, path, created)
    if not fields:
        return records, value
    out = []
    for where, record in records:
        for f in fields:
            found = resolve_path(record, f)
            if found is not MISSING:
                out.append((f"{where}.{f}" if where else f, found))
    return out, value


def _value_test(test: str, value: Any, c: Any) -> bool:
    if test == "equals":
        return _equal(value, c.equals)
    if test == "one_of":
        return any(_equal(value, v) for v in c.one_of or [])
    if test == "contains":
        return _contains(value, c.contains)
    lo, hi = c.between
    return isinstance(value, (int, float)) and not isinstance(value, bool) and lo <= value <= hi


def _want(test: str, c: Any) -> str:
    if test == "equals":
        return f"== {_short(c.equals)}"
    if test == "one_of":
        return f"in {_short(c.one_of)}"
    if test == "contains":
        return f"contains {_short(c.contains)}"
    return f"between {c.between[0]:g} and {c.between[1]:g}"


def _either(c: EitherCriterion, final: dict[str, Any], initial: dict[str, Any] | None) -> CriterionResult:
    test = c.test
    where = (f"{'a new element of ' if c.created else ''}{c.path}: " if c.path else "")
    name = c.name or f"either {where}{' or '.join(c.fields)} {_want(test, c)}"
    seen, value = _candidates(final, initial, c.path, c.fields, c.created)
    hit = next(((p, v) for p, v in seen if _value_test(test, v, c)), None)
    if hit is not None:
        return CriterionResult(name=name, passed=True, detail=f"{hit[0]} is {_short(hit[1])}")
    if not seen:
        what = ("no new element" if c.created and value is not MISSING
                else f"{c.path or 'the state'} has none of them")
        detail = f"{what} ({c.path} is {_short(value)})" if c.path else what
        return CriterionResult(name=name, passed=False, detail=detail)
    shown = "; ".join(f"{p} is {_short(v, 60)}" for p, v in seen[:4])
    more = f" (+{len(seen) - 4} more)" if len(seen) > 4 else ""
    return CriterionResult(name=name, passed=False, detail=shown + more)


_NUMBER = re.compile(r"(?:(?<![\w.])-)?\d+(?:\.\d+)?")


def numbers_in(text: str) -> list[float]:
    """The numbers written in ``text``: thousands separators ignored, a minus only where it starts one."""
    return [float(m.group()) for m in _NUMBER.finditer(_THOUSANDS.sub("", text))]


def _number_in_text(c: NumberInTextCriterion, final: dict[str, Any],
                    initial: dict[str, Any] | None) -> CriterionResult:
    lo, hi = c.between
    fields = f" ({' or '.join(c.fields)})" if c.fields else ""
    name = c.name or f"a number between {lo:g} and {hi:g} in {'a new ' if c.created else ''}{c.path}{fields}"
    seen, value = _candidates(final, initial, c.path, c.fields, c.created)
    texts = [(p, v) for p, v in seen if isinstance(v, str)]
    found: list[str] = []
    for where, text in texts:
        numbers = numbers_in(text)
        hit = next((n for n in numbers if lo <= n <= hi), None)
        if hit is not None:
            return CriterionResult(name=name, passed=True, detail=f"{where} holds {hit:g}: {_short(text, 80)}")
        found += [f"{n:g}" for n in numbers]
    if not texts:
        return CriterionResult(name=name, passed=False, detail=f"no text at {c.path} (it is {_short(value, 80)})")
    numbers = ", ".join(found[:6]) if found else "none"
    return CriterionResult(name=name, passed=False, detail=f"numbers in {len(texts)} text(s): {numbers}")


# ---------------------------------------------------------------- every kind of action


def _actions(episode: Episode, by_parent: bool = True) -> list[tuple[Position, str, Any, bool, bool]]:
    """Every action in order as (position, kind, action or call, by the parent, took effect),
    sub-agents' at their delegation's step (after it: a delegation precedes its sub-agent's work).
    """
    out: list[tuple[Position, str, Any, bool, bool]] = []
    for step in episode.steps:
        action = step.action
        if action is None:
            continue
        if action.kind == "tool_call":
            for i, call in _step_calls(step):
                res = step.results[i] if i < len(step.results) else None
                out.append(((step.index,), "tool_call", call, by_parent, res is not None and res.ok))
        else:
            took = step.error is None and all(r.ok for r in step.results)
            out.append(((step.index,), action.kind, action, by_parent, took))
        for child in step.children:
            for pos, kind, item, _, took in _actions(child, by_parent=False):
                out.append(((step.index, *pos), kind, item, False, took))
    return out


def _action_text(kind: str, action: Any) -> str:
    if kind == "memory_search":
        return action.query
    if kind == "memory_write":
        return action.content
    if kind == "load_skill":
        return action.name
    if kind == "delegate":
        return action.instruction
    return ""


def _action_matches(kind: str, item: Any, by_parent: bool, took: bool, p: ActionPattern) -> bool:
    if kind != p.looks_for or (p.by == "parent" and not by_parent) or (p.by == "sub_agent" and by_parent):
        return False
    if p.ok is not None and took != p.ok:
        return False
    if kind == "tool_call":
        return (p.tool is None or item.name == p.tool) and matches(item.arguments, p.args)
    return p.text is None or p.text.lower() in _action_text(kind, item).lower()


def _action_count(c: ActionCountCriterion, episode: Episode) -> CriterionResult:
    bounds = [f">= {c.at_least}"] if c.at_least is not None else []
    bounds += [f"<= {c.at_most}"] if c.at_most is not None else []
    which = "" if c.ok is None else " taking effect" if c.ok else " refused or failed"
    name = c.name or f"count{which} {c.label()} {' and '.join(bounds)}"
    hits = [pos for pos, kind, item, parent, took in _actions(episode)
            if _action_matches(kind, item, parent, took, c)]
    n = len(hits)
    ok = (c.at_least is None or n >= c.at_least) and (c.at_most is None or n <= c.at_most)
    where = f" (at {', '.join(_where(p) for p in hits[:4])})" if hits else ""
    return CriterionResult(name=name, passed=ok, detail=f"{n} matching action(s){where}")


def _first_action(episode: Episode, pattern: ActionPattern) -> Position | None:
    return next((pos for pos, kind, item, parent, took in _actions(episode)
                 if _action_matches(kind, item, parent, took, pattern)), None)


def _action_order(c: ActionOrderCriterion, episode: Episode) -> CriterionResult:
    name = c.name or f"order {c.before.label()} before {c.after.label()}"
    return _judge_order(name, (c.before.label(), c.after.label()), _first_action(episode, c.before),
                        _first_action(episode, c.after), "no ")


def _no_parent_call(c: NoParentCallCriterion, episode: Episode) -> CriterionResult:
    name = c.name or "the parent made no call itself"
    own = [(pos, item) for pos, kind, item, parent, _ in _actions(episode) if kind == "tool_call" and parent]
    if not own:
        by_children = sum(1 for _, kind, _, parent, _ in _actions(episode) if kind == "tool_call" and not parent)
        return CriterionResult(name=name, passed=True, detail=f"all {by_children} call(s) by sub-agents")
    pos, call = own[0]
    more = f" (+{len(own) - 1} more)" if len(own) > 1 else ""
    return CriterionResult(name=name, passed=False, detail=f"the parent called {call.name} at {_where(pos)}{more}")


# ---------------------------------------------------------------- a team's own check


def resolve_check(c: CheckCriterion, roots: Sequence[Path] = ()) -> Callable[..., Any]:
    """The callable a ``check`` criterion names.

    Raises:
        WorldError: the reference does not import, or names something that is not callable.
    """
    from ..errors import WorldError

    fn = import_ref(c.ref, roots)
    if not callable(fn) or isinstance(fn, type):
        raise WorldError("check", f"{c.ref!r} is a {type(fn).__name__}, not a function")
    return fn


def _takes(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _check(c: CheckCriterion, final: dict[str, Any], initial: WorldState | Mapping[str, Any], episode: Episode,
           roots: Sequence[Path]) -> CriterionResult:
    name = c.name or f"check {c.ref}"
    try:
        fn = resolve_check(c, roots)
        extra = {"initial": copy.deepcopy(state_data(initial))} if _takes(fn, "initial") else {}
        out = fn(copy.deepcopy(final), episode.model_copy(deep=True), **c.args, **extra)
    except Exception as exc:  # noqa: BLE001 - a team's check may raise anything: it failed, the verdict stands
        return CriterionResult(name=name, passed=False, detail=f"the check raised {type(exc).__name__}: {exc}")
    if inspect.isawaitable(out):
        close = getattr(out, "close", None)
        if close is not None:
            close()
        return CriterionResult(name=name, passed=False, detail="the check is async; a check is a plain function")
    if isinstance(out, bool):
        return CriterionResult(name=name, passed=out, detail="passed" if out else "failed")
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], bool):
        return CriterionResult(name=name, passed=out[0], detail=str(out[1]))
    return CriterionResult(name=name, passed=False,
                           detail=f"the check returned {_short(out, 60)}, not a bool or (bool, detail)")


def _specs(episode: Episode, tools: Mapping[str, ToolSpec] | None) -> Mapping[str, ToolSpec]:
    """The declared specs calls are judged by: the world's, else those the episode recorded."""
    if tools is not None:
        return tools
    return {t.name: t for t in episode.header.tools or []}


def check_criterion(
    criterion: Criterion,
    initial: WorldState | Mapping[str, Any],
    final: WorldState | Mapping[str, Any],
    episode: Episode,
    *,
    final_dump: dict[str, Any] | None = None,
    tools: Mapping[str, ToolSpec] | None = None,
    roots: Sequence[Path] = (),
) -> CriterionResult:
    """Evaluate one criterion against the evidence; the result names the criterion's kind.

    ``initial`` and ``final`` are the world's states (a state model, or its JSON dump);
    ``tools`` the world's tool specs, whose declared semantics say which calls change state
    (default: the specs the episode's header recorded); ``roots`` where a ``check``'s module
    is imported from (the task's folders).
    """
    result = _judge(criterion, initial, final, episode, final_dump, tools, roots)
    tool = criterion.tool if isinstance(criterion, (CallCriterion, NoCallCriterion)) else None
    return result.model_copy(update={"kind": criterion.kind, "tool": tool})


def _judge(criterion: Criterion, initial: WorldState | Mapping[str, Any], final: WorldState | Mapping[str, Any],
           episode: Episode, final_dump: dict[str, Any] | None, tools: Mapping[str, ToolSpec] | None,
           roots: Sequence[Path]) -> CriterionResult:
    if isinstance(criterion, CheckCriterion):
        return _check(criterion, final_dump if final_dump is not None else state_data(final), initial, episode,
                      roots)
    if isinstance(criterion, (EitherCriterion, NumberInTextCriterion)):
        final_data = final_dump if final_dump is not None else state_data(final)
        initial_data = state_data(initial) if criterion.created else None
        if isinstance(criterion, EitherCriterion):
            return _either(criterion, final_data, initial_data)
        return _number_in_text(criterion, final_data, initial_data)
    if isinstance(criterion, ActionCountCriterion):
        return _action_count(criterion, episode)
    if isinstance(criterion, ActionOrderCriterion):
        return _action_order(criterion, episode)
    if isinstance(criterion, NoParentCallCriterion):
        return _no_parent_call(criterion, episode)
    if isinstance(criterion, StateCriterion):
        initial_dump = state_data(initial) if criterion.created else None
        return _state(criterion, final_dump if final_dump is not None else state_data(final), initial_dump)
    if isinstance(criterion, CallCriterion):
        return _call(criterion, episode)
    if isinstance(criterion, NoCallCriterion):
        return _no_call(criterion, episode)
    if isinstance(criterion, OrderCriterion):
        return _order(criterion, episode)
    if isinstance(criterion, UnchangedCriterion):
        return _unchanged(criterion, state_data(initial), final_dump if final_dump is not None else state_data(final))
    if isinstance(criterion, CountCriterion):
        return _count(criterion, episode)
    if isinstance(criterion, LastCallCriterion):
        return _last_call(criterion, episode, _specs(episode, tools))
    if isinstance(criterion, NoErrorCriterion):
        return _no_error(criterion, episode)
    if isinstance(criterion, DelegationOrderCriterion):
        return _delegation_order(criterion, episode)
    if isinstance(criterion, StopCriterion):
        return _stop(criterion, episode)
    if isinstance(criterion, DelegateCriterion):
        return _delegated(criterion, episode)
    return _answer(criterion, episode)


def verify(task: TaskSpec, initial: WorldState | Mapping[str, Any], final: WorldState | Mapping[str, Any],
           episode: Episode, *, tools: Mapping[str, ToolSpec] | None = None) -> Verdict:
    """Judge ``episode`` against every criterion of ``task``; success means all passed.

    ``tools``: the world's tool specs (see :func:`check_criterion`).
    """
    dump = state_data(final)
    results = [check_criterion(c, initial, final, episode, final_dump=dump, tools=tools, roots=task.roots)
               for c in task.criteria]
    return Verdict(success=all(r.passed for r in results), criteria=results)
