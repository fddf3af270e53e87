"""A call that passed a record's id where a name belongs is told the name, and run with it if repeated.

A small planner looks a contact up and then passes the returned ``id`` ("c7") to a tool that
takes a name; the tool answers not_found and the planner repeats the lookup,
hint or no hint. An argument equal to the id of a record an earlier step returned, in a
call that failed with not_found or invalid_arguments, gets the record's name as the value to
pass instead. The tool that returned the record declares both: the field that is a record's id
(``ToolSpec.id_field``) and, in the order a name is preferred, the fields that name it
(``ToolSpec.name_fields``); a tool that leaves either undeclared returns no records here, whatever
its fields are called. Not in the argument the tool declares as its id
(``id_arg``); where it declares a ``name_arg``, only that argument is read. Sent again, the
call's intent is not in doubt (the id is the record it looked up), only its spelling: the named form runs instead, the step
records the call as run (the raw planner output keeps what was asked) and a notice says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...contracts import Notice, ToolCall, ToolCallAction, ToolResult, ToolSpec
from ._text import call_text, records
from .base import ALLOW, Advice, BasePolicy, CallDecision, Rewrite, RunView, StepReport

__all__ = ["IdForName"]

class IdForName(BasePolicy):
    """Hint the name behind a mistaken id; run the named form when the call is sent again."""

    name = "id_for_name"

    def __init__(self) -> None:
        super().__init__()
        self._named: dict[str, ToolCall] = {}

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        named = self._named.get(call.key())
        if named is None:
            return ALLOW
        return Rewrite(named, Notice(f"{call_text(call)} failed before because it passes an id; the harness ran "
                                     f"{call_text(named)} instead, as the earlier hint said.",
                                     policy=self.name, code="ran_named_form"))

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        notices = []
        for call, result in zip(report.calls, report.results, strict=False):
            hint = self._hint(call, result, run)
            if hint is not None:
                text, named = hint
                notices.append(Notice(text, policy=self.name, code="id_for_name"))
                self._named[call.key()] = named
        return Advice(notices=notices) if notices else None

    @staticmethod
    def _hint(call: ToolCall, result: ToolResult, run: RunView) -> tuple[str, ToolCall] | None:
        if result.error is None or result.error.code not in ("not_found", "invalid_arguments"):
            return None
        known: dict[str, tuple[dict, Sequence[str]]] = {}
        for step in run.steps:
            calls = step.action.calls if isinstance(step.action, ToolCallAction) else []
            for c, r in zip(calls, step.results, strict=False):
                source = run.tools.get(c.name)
                if r.ok and source is not None and source.id_field is not None and source.name_fields:
                    for rec in records(r.data, source.id_field):
                        known.setdefault(str(rec[source.id_field]), (rec, source.name_fields))
        spec = run.tools.get(call.name)
        for arg, value in call.arguments.items():
            if spec is not None and (arg == spec.id_arg or (spec.name_arg is not None and arg != spec.name_arg)):
                # the tool declares where an id belongs and where a name does: an id in its id
                # argument is no mix-up (a wrong record there is a lookup mistake the error names)
                continue
            found = known.get(str(value)) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
            if found is None:
                continue
            rec, name_fields = found
            for field_name in name_fields:
                better = rec.get(field_name)
                if isinstance(better, str) and better and better != str(value):
                    named = ToolCall(name=call.name, arguments={**call.arguments, arg: better})
                    return (
                        f"{value!r} is the id of {better!r}; {call.name} wants a {field_name} in {arg!r}, "
                        f"not an id: call {call_text(named)}.",
                        named,
                    )
        return None
