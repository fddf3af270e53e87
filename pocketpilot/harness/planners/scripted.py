"""A planner that replays a fixed list of actions: tests, demos, and replays of recorded traces."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError

from ...contracts import ACTION_ADAPTER, Action, PlannerInfo, PlannerTurn
from ...errors import PlannerBackendError, PlannerOutputError
from ..action_schema import parse_action
from ..base import PlannerOutput, PlanRequest

__all__ = ["ScriptedPlanner"]


class ScriptedPlanner:
    """Returns the given actions in order; a raw string item is parsed like model output.

    Raw strings let tests feed malformed output through the same validation path a real
    model's text takes. Running past the end raises PlannerBackendError.

    With ``validate=False`` an action is returned even when it names a tool or a kind this
    step does not offer (a raw string must still be a well-formed action): a planner whose
    output nobody constrained, such as a remote model without grammar, or one following an
    injected instruction. The session's own checks then stand alone, and tests can show
    they hold.
    """

    def __init__(
        self,
        actions: Iterable[Action | dict[str, Any] | str],
        name: str = "scripted",
        *,
        validate: bool = True,
    ) -> None:
        self.validate = validate
        self._items: list[Action | str] = [
            ACTION_ADAPTER.validate_python(a) if isinstance(a, dict) else a for a in actions
        ]
        self._next = 0
        self._info = PlannerInfo(backend="scripted", model=name)
        self.requests: list[PlanRequest] = []
        """Every request seen, for assertions about the assembled context."""

    @property
    def info(self) -> PlannerInfo:
        """Backend identity recorded in traces."""
        return self._info

    @property
    def remaining(self) -> int:
        """Actions not yet replayed."""
        return len(self._items) - self._next

    def count_tokens(self, text: str) -> int:
        """Rough count (4 characters a token): budgets in tests only need monotonicity."""
        return max(1, len(text) // 4)

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        """The next scripted action, validated against this step's tools and kinds."""
        self.requests.append(request)
        if self._next >= len(self._items):
            raise PlannerBackendError("scripted planner has no more actions")
        item = self._items[self._next]
        self._next += 1
        raw = item if isinstance(item, str) else json.dumps(item.model_dump(mode="json"))
        try:
            if self.validate:
                action = parse_action(raw, request.tools, request.kinds)
            elif isinstance(item, str):
                action = _parse_unchecked(raw)
            else:
                action = item
        except PlannerOutputError as exc:
            raise PlannerOutputError(raw, exc.reason, PlannerTurn(raw=raw, finish_reason="error")) from exc
        return PlannerOutput(action=action, turn=PlannerTurn(raw=raw, completion_tokens=self.count_tokens(raw)))

    async def load(self) -> None:
        """Nothing to prepare."""

    async def aclose(self) -> None:
        """Nothing to release."""

    @classmethod
    def from_actions(cls, actions: Sequence[Action]) -> ScriptedPlanner:
        """Replay the actions of a recorded episode."""
        return cls(actions, name="replay")


def _parse_unchecked(raw: str) -> Action:
    """A well-formed action, whatever tools and kinds it names."""
    try:
        return ACTION_ADAPTER.validate_json(raw)
    except ValidationError as exc:
        raise PlannerOutputError(raw, f"not a valid action: {exc.errors()[0]['msg']}") from exc
