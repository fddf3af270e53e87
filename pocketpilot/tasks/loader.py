"""Load task files (YAML or JSON) and the bundled suite, rejecting anything a run would trip on.

Every problem becomes a :class:`~pocketpilot.errors.TaskSpecError` with a one-line reason:
unparseable text, a field that does not fit the spec, an unknown tool, a criterion path the
state has no room for, an initial state that does not validate, ids or goals shared across
splits (a test task leaking into dev would inflate every figure measured on it).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import TaskSpecError
from ..executor.sandbox import PhoneState, SandboxPhone, check_path, default_state
from .spec import (
    CallCriterion,
    NoCallCriterion,
    OracleStep,
    OrderCriterion,
    Split,
    StateCriterion,
    TaskSpec,
    UnchangedCriterion,
)

__all__ = [
    "build_state",
    "check_splits",
    "check_task",
    "exposed_tools",
    "load_suite",
    "load_task",
    "parse_task",
]

logger = logging.getLogger(__name__)

_SPLITS = ("dev", "evolve", "test")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it (10x faster on the bundled suite)."""
_CATALOGUE = SandboxPhone()  # tool and app names only; its state is never used


def _one_line(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:3]:
        loc = ".".join(str(p) for p in err["loc"]) or "(task)"
        parts.append(f"{loc}: {err['msg']}")
    more = f" (+{exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
    return "; ".join(parts) + more


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = _merge(base[key], value) if key in base else value
        return out
    return patch


def build_state(task: TaskSpec, source: str | None = None) -> PhoneState:
    """The task's starting world: ``initial_state`` deep-merged over ``default_state(seed)``.

    Raises:
        TaskSpecError: if the merged state does not validate.
    """
    base = default_state(task.seed).model_dump(mode="json")
    try:
        return PhoneState.model_validate(_merge(base, task.initial_state))
    except ValidationError as exc:
        raise TaskSpecError(source or task.id, f"initial_state: {_one_line(exc)}") from exc


def exposed_tools(task: TaskSpec) -> list[str]:
    """Tool names the task exposes, app names expanded, in catalogue order."""
    if task.tools == "all":
        return _CATALOGUE.tool_names()
    wanted: set[str] = set()
    for name in task.tools:
        wanted.update(_CATALOGUE.tool_names(name) if name in _CATALOGUE.apps else [name])
    return [t for t in _CATALOGUE.tool_names() if t in wanted]


def check_task(task: TaskSpec, source: str | None = None) -> None:
    """Check what the schema alone cannot: tools, paths, initial state, oracle.

    Raises:
        TaskSpecError: naming the first problem.
    """
    where = source or task.id
    known = set(_CATALOGUE.tool_names())
    if task.tools != "all":
        for name in task.tools:
            if name not in known and name not in _CATALOGUE.apps:
                raise TaskSpecError(where, f"unknown tool {name!r} in tools")
    for domain in task.domains:
        if domain not in _CATALOGUE.apps:
            raise TaskSpecError(where, f"unknown domain {domain!r}; apps: {', '.join(_CATALOGUE.apps)}")
    exposed = set(exposed_tools(task))
    for i, c in enumerate(task.criteria):
        label = f"criteria[{i}]"
        tools: list[tuple[str, bool]] = []
        if isinstance(c, CallCriterion):
            tools = [(c.tool, True)]
        elif isinstance(c, NoCallCriterion):
            tools = [(c.tool, False)]
        elif isinstance(c, OrderCriterion):
            tools = [(c.before.tool, True), (c.after.tool, True)]
        for name, must_expose in tools:
            if name not in known:
                raise TaskSpecError(where, f"{label}: unknown tool {name!r}")
            if must_expose and name not in exposed:
                raise TaskSpecError(where, f"{label}: requires {name!r}, which the task does not expose")
        paths = (
            [c.path]
            if isinstance(c, StateCriterion)
            else c.allow
            if isinstance(c, UnchangedCriterion)
            else []
        )
        for path in paths:
            try:
                check_path(path)
            except ValueError as exc:
                raise TaskSpecError(where, f"{label}: bad path {exc}") from exc
    for i, step in enumerate(task.oracle):
        _check_oracle_step(step, exposed, where, f"oracle[{i}]")
        if step.delegate is not None:
            for name in step.delegate.tools:
                if name not in exposed:
                    raise TaskSpecError(where, f"oracle[{i}]: delegates {name!r}, which the task does not expose")
            for j, sub in enumerate(step.delegate.steps):
                _check_oracle_step(sub, set(step.delegate.tools) or exposed, where, f"oracle[{i}].delegate.steps[{j}]")
    build_state(task, where)


def _check_oracle_step(step: OracleStep, exposed: set[str], where: str, label: str) -> None:
    names = [step.call] if step.call else [p.tool for p in step.batch or []]
    for name in names:
        if name not in exposed:
            raise TaskSpecError(where, f"{label}: calls {name!r}, which the task does not expose")


def parse_task(data: Any, source: str) -> TaskSpec:
    """Validate already-parsed task data (a dict) into a checked :class:`TaskSpec`."""
    if not isinstance(data, dict):
        raise TaskSpecError(source, f"expected a mapping at top level, got {type(data).__name__}")
    try:
        task = TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise TaskSpecError(source, _one_line(exc)) from exc
    check_task(task, source)
    return task


def load_task(path: str | Path) -> TaskSpec:
    """Load and check one task file (``.json`` as JSON, anything else as YAML).

    Raises:
        TaskSpecError: with a one-line reason for any problem, the file name included.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskSpecError(str(p), f"cannot read: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if p.suffix.lower() == ".json" else yaml.load(text, Loader=_YAML_LOADER)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()
        raise TaskSpecError(
            str(p),
            f"not valid {'JSON' if p.suffix.lower() == '.json' else 'YAML'}: "
            f"{' '.join(s.strip() for s in first[:3])}",
        ) from exc
    return parse_task(data, str(p))


def check_splits(tasks: Iterable[TaskSpec]) -> None:
    """Refuse a suite whose ids repeat, or whose splits share a goal.

    Raises:
        TaskSpecError: naming both tasks.
    """
    ids: dict[str, TaskSpec] = {}
    goals: dict[str, TaskSpec] = {}
    for task in tasks:
        if task.id in ids:
            raise TaskSpecError(
                "suite", f"task id {task.id!r} appears twice ({ids[task.id].split}, {task.split})"
            )
        ids[task.id] = task
        key = " ".join(task.goal.lower().split())
        other = goals.get(key)
        if other is not None and other.split != task.split:
            raise TaskSpecError(
                "suite", f"{task.id!r} ({task.split}) repeats the goal of {other.id!r} ({other.split})"
            )
        goals.setdefault(key, task)


@functools.lru_cache(maxsize=1)
def _bundled() -> tuple[TaskSpec, ...]:
    """The bundled suite, parsed and checked once per process (specs are frozen, so sharing is safe)."""
    root = resources.files("pocketpilot.tasks") / "data"
    with resources.as_file(root) as base:
        files = sorted(Path(base).glob("*.yaml")) + sorted(Path(base).glob("*.json"))
        return tuple(load_task(f) for f in files)


def load_suite(split: Split | None = None, directory: str | Path | None = None) -> list[TaskSpec]:
    """Load every task of the bundled suite (or of ``directory``), optionally one split only.

    The whole suite is loaded and checked before filtering, so split isolation holds no matter
    which split is asked for.

    Raises:
        TaskSpecError: for any invalid file, or ids/goals shared across splits.
    """
    if split is not None and split not in _SPLITS:
        raise TaskSpecError("suite", f"unknown split {split!r}; splits: {', '.join(_SPLITS)}")
    if directory is None:
        tasks = list(_bundled())
    else:
        files = sorted(Path(directory).glob("*.yaml")) + sorted(Path(directory).glob("*.json"))
        tasks = [load_task(f) for f in files]
    check_splits(tasks)
    logger.debug("loaded %d tasks", len(tasks))
    return [t for t in tasks if split is None or t.split == split]
