"""Load task files (YAML or JSON) and the bundled suite, rejecting anything a run would trip on.

Every problem becomes a :class:`~pocketpilot.errors.TaskSpecError` with a one-line reason:
unparseable text, a field that does not fit the spec, an unknown tool, a criterion path the
state has no room for, an initial state that does not validate, ids or goals shared across
splits (a test task leaking into dev would inflate every figure measured on it). A task's own
world is built once at load time (its modules imported, its state validated, its tools made),
so a module that does not import or a tool whose declared ``id_arg`` is not a parameter is a
:class:`~pocketpilot.errors.WorldError` before any planner loads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import TaskSpecError, WorldError
from ..executor.sandbox import PhoneState, SandboxPhone, default_state
from .spec import (
    ActionCountCriterion,
    ActionOrderCriterion,
    BudgetSection,
    CallCriterion,
    CheckCriterion,
    CountCriterion,
    DelegateCriterion,
    DelegationOrderCriterion,
    EitherCriterion,
    GuidanceDoc,
    LastCallCriterion,
    NoCallCriterion,
    NoErrorCriterion,
    NumberInTextCriterion,
    OracleStep,
    OrderCriterion,
    Split,
    StateCriterion,
    TaskSpec,
    UnchangedCriterion,
    WorldSpec,
)
from .verify import resolve_check
from .world import ModelWorld, SandboxWorld, TaskWorld, World, import_ref

__all__ = [
    "FOLDER_DEFAULTS",
    "FolderDefaults",
    "build_state",
    "build_world",
    "check_splits",
    "check_task",
    "exposed_tools",
    "folder_defaults",
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


def _model_world(spec: WorldSpec, roots: Sequence[Path], where: str) -> ModelWorld:
    """A fresh instance of the task's own world: its modules imported, its state validated.

    Raises:
        WorldError: naming the reference, field or tool at fault.
    """
    state: BaseModel | None = None
    if spec.state_model is not None:
        try:
            model = import_ref(spec.state_model, roots)
        except WorldError as exc:
            raise WorldError(where, f"world.state_model: {exc.reason}") from exc
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise WorldError(where, f"world.state_model {spec.state_model!r} is not a pydantic BaseModel class")
        try:
            state = model.model_validate(spec.initial_state or {})
        except ValidationError as exc:
            raise WorldError(where, f"world.initial_state does not fit {model.__name__}: {_one_line(exc)}") from exc
    sources: list[Any] = []
    labels: list[str] = []
    for i, ref in enumerate(spec.apps):
        label = f"world.apps[{i}] {ref!r}"
        try:
            sources.append(import_ref(ref, roots))
        except WorldError as exc:
            raise WorldError(where, f"world.apps[{i}]: {exc.reason}") from exc
        labels.append(label)
    try:
        return ModelWorld(state, sources, concurrent=spec.concurrent, labels=labels)
    except WorldError as exc:
        raise WorldError(where, exc.reason) from exc
    except Exception as exc:  # noqa: BLE001 - a user's app constructor or factory may raise anything
        raise WorldError(where, f"world.apps: building the world failed: {type(exc).__name__}: {exc}") from exc


def build_world(task: TaskSpec, source: str | None = None) -> TaskWorld:
    """A fresh world for one run of ``task``: the sandbox phone, the task's own world, or both.

    Raises:
        TaskSpecError: the sandbox's initial state does not validate.
        WorldError: the task's own world does not build.
    """
    where = source or task.id
    members: list[World] = []
    if task.world is None or task.world.keeps_sandbox:
        members.append(SandboxWorld(SandboxPhone(build_state(task, where))))
    if task.world is not None and task.world.apps:
        members.append(_model_world(task.world, task.roots, where))
    try:
        return TaskWorld(members, overrides=task.world.override if task.world is not None else False)
    except WorldError as exc:
        raise WorldError(where, exc.reason) from exc


@functools.lru_cache(maxsize=1)
def _sandbox_catalogue() -> TaskWorld:
    return TaskWorld([SandboxWorld(_CATALOGUE)])


def _catalogue(task: TaskSpec, where: str | None = None) -> TaskWorld:
    """The world whose tool and app names a task may use (its state is never run on)."""
    return _sandbox_catalogue() if task.world is None else build_world(task, where)


def exposed_tools(task: TaskSpec, world: TaskWorld | None = None) -> list[str]:
    """Tool names the task exposes, app names expanded, in catalogue order."""
    catalogue = world if world is not None else _catalogue(task)
    if task.tools == "all":
        return catalogue.tool_names()
    apps = catalogue.apps()
    wanted: set[str] = set()
    for name in task.tools:
        wanted.update(apps.get(name, [name]))
    return [t for t in catalogue.tool_names() if t in wanted]


def _criterion_tools(c: Any) -> list[tuple[str, bool]]:
    """The tools a criterion names, each with whether the task must expose it."""
    if isinstance(c, (CallCriterion, LastCallCriterion)):
        return [(c.tool, True)]
    if isinstance(c, CountCriterion):
        return [(c.tool, c.at_least is not None)]
    if isinstance(c, NoCallCriterion):
        return [(c.tool, False)]
    if isinstance(c, NoErrorCriterion):
        return [(c.tool, False)] if c.tool else []
    if isinstance(c, OrderCriterion):
        return [(c.before.tool, True), (c.after.tool, True)]
    if isinstance(c, DelegateCriterion):
        return [(t, True) for t in c.used] + [(t, False) for t in c.not_used]
    if isinstance(c, DelegationOrderCriterion):
        return [(t, True) for t in (*c.before.used, *c.after.used)]
    if isinstance(c, ActionCountCriterion):
        return [(c.tool, c.at_least is not None)] if c.tool else []
    if isinstance(c, ActionOrderCriterion):
        return [(p.tool, True) for p in (c.before, c.after) if p.tool]
    return []


def _check_fields(catalogue: TaskWorld, path: str | None, fields: list[str]) -> None:
    """Check that each of ``fields`` can exist under ``path`` (under its elements, for a list).

    Raises:
        ValueError: naming the first field that fits neither.
    """
    if path is not None:
        catalogue.check_path(path)
    for f in fields:
        tries = [f] if path is None else [f"{path}.{f}", f"{path}.0.{f}"]
        errors = []
        for candidate in tries:
            try:
                catalogue.check_path(candidate)
                break
            except ValueError as exc:
                errors.append(exc)
        else:
            raise errors[-1]


def check_task(task: TaskSpec, source: str | None = None) -> None:
    """Check what the schema alone cannot: the world, tools, paths, initial state, oracle.

    Raises:
        TaskSpecError: naming the first problem (a :class:`WorldError` for the task's own world).
    """
    where = source or task.id
    if task.world is not None and not task.world.keeps_sandbox:
        for field in ("initial_state", "seed"):
            if field in task.model_fields_set:
                raise TaskSpecError(where, f"{field} patches the sandbox phone, which this world leaves out "
                                           "(use world.initial_state)")
    catalogue = _catalogue(task, where)
    exposed = _check_exposure(task, catalogue, where)
    known = set(catalogue.tool_names())
    for i, c in enumerate(task.criteria):
        _check_criterion(c, task, catalogue, known, exposed, where, f"criteria[{i}]")
    for i, step in enumerate(task.oracle):
        _check_oracle_step(step, exposed, where, f"oracle[{i}]")
        if step.delegate is not None:
            for name in step.delegate.tools:
                if name not in exposed:
                    raise TaskSpecError(where, f"oracle[{i}]: delegates {name!r}, which the task does not expose")
            for j, sub in enumerate(step.delegate.steps):
                _check_oracle_step(sub, set(step.delegate.tools) or exposed, where, f"oracle[{i}].delegate.steps[{j}]")
    if task.world is None or task.world.keeps_sandbox:
        build_state(task, where)


def _check_exposure(task: TaskSpec, catalogue: TaskWorld, where: str) -> set[str]:
    """The tools the task exposes, after checking each named tool and domain exists."""
    known = set(catalogue.tool_names())
    apps = catalogue.apps()
    if task.tools != "all":
        for name in task.tools:
            if name not in known and name not in apps:
                raise TaskSpecError(where, f"unknown tool {name!r} in tools")
    for domain in task.domains:
        if domain not in apps:
            raise TaskSpecError(where, f"unknown domain {domain!r}; apps: {', '.join(apps)}")
    exposed = set(exposed_tools(task, catalogue))
    try:
        catalogue.check_exposed(exposed)
    except WorldError as exc:
        raise WorldError(where, exc.reason) from exc
    return exposed


def _check_criterion(c: Any, task: TaskSpec, catalogue: TaskWorld, known: set[str], exposed: set[str],
                     where: str, label: str) -> None:
    """One criterion's tools exist (and are exposed where it needs them), its paths and check resolve."""
    for name, must_expose in _criterion_tools(c):
        if name not in known:
            raise TaskSpecError(where, f"{label}: unknown tool {name!r}")
        if must_expose and name not in exposed:
            raise TaskSpecError(where, f"{label}: requires {name!r}, which the task does not expose")
    paths = [c.path] if isinstance(c, StateCriterion) else c.allow if isinstance(c, UnchangedCriterion) else []
    try:
        for path in paths:
            catalogue.check_path(path)
        if isinstance(c, (EitherCriterion, NumberInTextCriterion)):
            _check_fields(catalogue, c.path, c.fields)
    except ValueError as exc:
        raise TaskSpecError(where, f"{label}: bad path {exc}") from exc
    if isinstance(c, CheckCriterion):
        try:
            resolve_check(c, task.roots)
        except WorldError as exc:
            raise TaskSpecError(where, f"{label}: check {exc.reason}") from exc


def _check_oracle_step(step: OracleStep, exposed: set[str], where: str, label: str) -> None:
    names = [step.call] if step.call else [p.tool for p in step.batch or []]
    for name in names:
        if name not in exposed:
            raise TaskSpecError(where, f"{label}: calls {name!r}, which the task does not expose")


class FolderDefaults(BaseModel):
    """What a task folder's ``_defaults.yaml`` (or ``_defaults.json``) gives every task in it.

    Example (an app team's folder, its policy beside it)::

        guidance: [{file: operating-policy.md}]
        budget: {guidance: 7000}
        n_ctx: 16384

    A task's own field wins over the folder's (``budget`` section by section); a CLI flag wins
    over both (``--guidance-file`` replaces the guidance, ``--budget`` a section, ``--n-ctx``
    the window).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    guidance: list[GuidanceDoc] = Field(default_factory=list)
    budget: dict[BudgetSection, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    n_ctx: int | None = Field(default=None, ge=512)

    @field_validator("guidance", mode="before")
    @classmethod
    def _guidance_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, (str, dict)) else value


FOLDER_DEFAULTS = ("_defaults.yaml", "_defaults.json")
"""File names of a folder's defaults: never read as a task."""
_NO_DEFAULTS = FolderDefaults()


def _read_guidance(docs: Sequence[GuidanceDoc], base: Path, where: str, field: str) -> list[GuidanceDoc]:
    """``docs`` with each ``{file: ...}`` entry's text read, the path relative to ``base``."""
    out = []
    for i, doc in enumerate(docs):
        if doc.file is not None and doc.text is None:
            path = base / doc.file
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise TaskSpecError(where, f"{field}[{i}]: cannot read guidance file {str(path)!r}: "
                                           f"{exc.strerror or exc}") from exc
            if not text.strip():
                raise TaskSpecError(where, f"{field}[{i}]: guidance file {str(path)!r} is empty")
            doc = doc.model_copy(update={"text": text})
        out.append(doc)
    return out


@functools.lru_cache(maxsize=64)
def _folder_defaults_cached(folder: Path, stamp: tuple[str, float, int]) -> FolderDefaults:
    path = folder / stamp[0]
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_YAML_LOADER)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()
        raise TaskSpecError(str(path), f"not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                                       f"{' '.join(s.strip() for s in first[:3])}") from exc
    if not isinstance(data, dict):
        raise TaskSpecError(str(path), f"expected a mapping at top level, got {type(data).__name__}")
    try:
        defaults = FolderDefaults.model_validate(data)
    except ValidationError as exc:
        raise TaskSpecError(str(path), _one_line(exc)) from exc
    return defaults.model_copy(update={"guidance": _read_guidance(defaults.guidance, folder, str(path), "guidance")})


def folder_defaults(folder: str | Path) -> FolderDefaults:
    """The defaults a task folder gives its tasks (none when it has no ``_defaults.yaml``).

    Raises:
        TaskSpecError: the defaults file does not parse, has an unknown field, or names a
            guidance file that cannot be read.
    """
    base = Path(folder).resolve()
    found = [base / name for name in FOLDER_DEFAULTS if (base / name).is_file()]
    if not found:
        return _NO_DEFAULTS
    if len(found) > 1:
        raise TaskSpecError(str(base), f"both {FOLDER_DEFAULTS[0]} and {FOLDER_DEFAULTS[1]}: keep one")
    st = found[0].stat()
    return _folder_defaults_cached(base, (found[0].name, st.st_mtime, st.st_size))


def _apply_defaults(task: TaskSpec, defaults: FolderDefaults) -> TaskSpec:
    """The task with the folder's defaults under its own fields (its own win, budget per section)."""
    update: dict[str, Any] = {}
    if defaults.guidance and "guidance" not in task.model_fields_set:
        update["guidance"] = list(defaults.guidance)
    if defaults.budget:
        update["budget"] = {**defaults.budget, **task.budget}
    if defaults.n_ctx is not None and task.n_ctx is None:
        update["n_ctx"] = defaults.n_ctx
    if not update:
        return task
    out = task.model_copy(update=update)
    return out


def parse_task(data: Any, source: str, roots: Sequence[str | Path] = (),
               defaults: FolderDefaults | None = None) -> TaskSpec:
    """Validate already-parsed task data (a dict) into a checked :class:`TaskSpec`.

    ``roots``: folders a ``world:`` section's modules are imported from (kept on the spec); the
    first is also where a ``{file: ...}`` guidance entry is read from (default: the current
    folder). ``defaults``: the folder's, under the task's own fields.
    """
    if not isinstance(data, dict):
        raise TaskSpecError(source, f"expected a mapping at top level, got {type(data).__name__}")
    try:
        task = TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise TaskSpecError(source, _one_line(exc)) from exc
    if task.guidance:
        base = Path(roots[0]) if roots else Path.cwd()
        task = task.model_copy(update={"guidance": _read_guidance(task.guidance, base, source, "guidance")})
    if defaults is not None:
        task = _apply_defaults(task, defaults)
    imports = task.world is not None or any(isinstance(c, CheckCriterion) for c in task.criteria)
    if imports and roots:  # a world's modules, a team's checks: imported from the task's folders
        task = task.with_roots(tuple(dict.fromkeys(Path(r).resolve() for r in roots)))
    check_task(task, source)
    return task


def load_task(path: str | Path, roots: Sequence[str | Path] = ()) -> TaskSpec:
    """Load and check one task file (``.json`` as JSON, anything else as YAML).

    A ``world:`` section's modules import with the file's folder (then ``roots``) on sys.path,
    so a task folder may carry its own package. The folder's ``_defaults.yaml`` applies (see
    :class:`FolderDefaults`), whether the file runs alone or with its folder.

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
    return parse_task(data, str(p), (p.parent, *roots), defaults=folder_defaults(p.parent))


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


def _folder(base: Path) -> tuple[TaskSpec, ...]:
    """A folder's tasks, each file loaded once per process for as long as the folder's files are unchanged.

    A process that loads the same folder again (the bench's splits, a test session's loads of
    the generated and long-history suites) gets the specs it built before: building and checking
    each task's world is what a load costs. The key holds the bytes of every file in the folder
    (its tasks, defaults, guidance and world modules), so an edited folder is loaded anew.
    """
    digest = hashlib.blake2b(digest_size=16)
    for entry in sorted(base.iterdir()) if base.is_dir() else ():
        if entry.is_file():
            digest.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return _folder_cached(base, base.resolve(), digest.hexdigest())


@functools.lru_cache(maxsize=16)
def _folder_cached(base: Path, resolved: Path, digest: str) -> tuple[TaskSpec, ...]:
    files = [f for f in sorted(base.glob("*.yaml")) + sorted(base.glob("*.json")) if f.name not in FOLDER_DEFAULTS]
    return tuple(load_task(f, roots=(base, resolved.parent)) for f in files)


def bundled_task(task_id: str) -> TaskSpec | None:
    """One bundled task by id, read from its own file where the file is named after it.

    A single run needs one task, not the suite parsed and checked (a noticeable part of a
    demo's start); a task filed under another name is found in the whole suite.
    """
    root = resources.files("pocketpilot.tasks") / "data"
    with resources.as_file(root) as base:
        for suffix in (".yaml", ".json"):
            path = Path(base) / f"{task_id}{suffix}"
            if path.parent == Path(base) and path.is_file() and (task := load_task(path)).id == task_id:
                return task
    return next((t for t in _bundled() if t.id == task_id), None)


def load_suite(split: Split | None = None, directory: str | Path | None = None) -> list[TaskSpec]:
    """Load every task of the bundled suite (or of ``directory``), optionally one split only.

    A folder's tasks import their worlds' modules from the folder and its parent (so a
    ``tasks/`` folder beside the package it tests works).

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
        tasks = list(_folder(Path(directory)))
    check_splits(tasks)
    logger.debug("loaded %d tasks", len(tasks))
    return [t for t in tasks if split is None or t.split == split]
