"""Task templates as data: which tools a template needs (by declared semantics), how it is phrased.

A template names a *family* (the shape of the task: one call, calls in order, a conditional, a
recovery, a clarification, a memory recall, a precondition, a hand-off) and, for each role the
family fills, a :class:`Selector` over the tools' declared semantics. No selector names a tool:
a world whose tools are named differently gets the same tasks. Phrasing variants, parameter
pools and distractors are data too (``templates/*.yaml``, ``templates/pools/*.yaml``), so adding
a family variant or a phrasing is an edit to a file, not to the generator.

Example (YAML)::

    id: setting-bool
    version: 1
    family: single_call
    group: tool_use
    capability: single_tool
    difficulty: easy
    weight: 40
    select:
      action: {effect: [setting], param_types: [boolean]}
    goal: ["{Action}.", "Please {action}.", "Can you {action}?"]
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..contracts import ToolSpec
from ..errors import TemplateError
from .spec import Capability, Group

__all__ = [
    "TEMPLATE_DIR",
    "Family",
    "Pools",
    "Selector",
    "Template",
    "TemplateSet",
    "load_templates",
]

TEMPLATE_DIR = Path(__file__).parent / "templates"

Family = Literal[
    "single_call",
    "multi_step",
    "ordering",
    "conditional",
    "recovery",
    "clarification",
    "memory_recall",
    "memory_reconcile",
    "precondition",
    "handoff_read",
    "handoff_id",
    "information",
]
"""The task shapes the generator knows; each fills its roles from the template's selectors."""

ParamType = Literal["boolean", "integer", "number", "string", "enum"]


class _T(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Selector(_T):
    """Which tools may fill a role, by declared semantics only (every given test must hold)."""

    effect: list[str] = Field(default_factory=list)
    """Any of these effects (empty: any effect)."""
    not_effect: list[str] = Field(default_factory=list)
    destructive: bool | None = None
    id_arg: bool | None = None
    """True: the tool declares a record-id argument; False: it does not."""
    name_arg: bool | None = None
    setting: bool | None = None
    """True: a setting tool with a declared key."""
    param_types: list[ParamType] = Field(default_factory=list)
    """Some parameter has one of these JSON-schema types (``enum``: an enumerated string)."""
    required_params: bool | None = None
    """True: the tool has required parameters; False: it takes none."""
    free_text: bool | None = None
    """True: a string parameter that is neither the id nor the name argument, nor patterned."""
    text_room: int | None = Field(default=None, ge=1)
    """A free-text parameter declared to hold at least this many characters (``maxLength``): room
    for a message, not a recipient, a place or a card number. A parameter that declares no bound
    does not qualify: nothing says what it holds."""

    def accepts(self, spec: ToolSpec) -> bool:
        """Whether ``spec`` fits every test of this selector."""
        props: dict[str, Any] = spec.parameters.get("properties") or {}
        required = spec.parameters.get("required") or []
        checks = [
            not self.effect or spec.effect in self.effect,
            spec.effect not in self.not_effect,
            self.destructive is None or spec.destructive == self.destructive,
            self.id_arg is None or (spec.id_arg is not None) == self.id_arg,
            self.name_arg is None or (spec.name_arg is not None) == self.name_arg,
            self.setting is None or (spec.setting is not None) == self.setting,
            not self.param_types or any(param_type(p) in self.param_types for p in props.values()),
            self.required_params is None or bool(required) == self.required_params,
            self.free_text is None or bool(free_text_params(spec)) == self.free_text,
            self.text_room is None or bool(free_text_params(spec, room=self.text_room)),
        ]
        return all(checks)


def param_type(schema: dict[str, Any]) -> str | None:
    """A parameter's kind for selection: ``enum`` for enumerated strings, else its JSON type."""
    if "enum" in schema:
        return "enum"
    if "type" in schema:
        return str(schema["type"])
    for option in schema.get("anyOf", []):
        if option.get("type") not in (None, "null"):
            return param_type(option)
    return None


def free_text_params(spec: ToolSpec, *, room: int | None = None) -> list[str]:
    """String parameters that carry free text (not the declared id or name argument, no pattern, no enum).

    ``room``: only those whose declared ``maxLength`` is at least this (see ``Selector.text_room``).
    """
    props: dict[str, Any] = spec.parameters.get("properties") or {}
    return [
        name for name, schema in props.items()
        if param_type(schema) == "string" and "pattern" not in schema and name not in (spec.id_arg, spec.name_arg)
        and (room is None or _max_length(schema) >= room)
    ]


def _max_length(schema: dict[str, Any]) -> int:
    """A string parameter's declared ``maxLength`` (0 where it declares none), through ``anyOf``."""
    if "maxLength" in schema:
        return int(schema["maxLength"])
    return max((_max_length(o) for o in schema.get("anyOf", []) if isinstance(o, dict)), default=0)


class Template(_T):
    """One template: a family, its roles' selectors, phrasing variants, and how many tasks it yields."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{1,30}$")
    version: int = Field(default=1, ge=1)
    family: Family
    group: Group
    capability: Capability
    difficulty: Literal["easy", "medium", "hard"] = "easy"
    weight: int = Field(default=10, ge=0)
    """Relative share of a generated suite."""
    select: dict[str, Selector] = Field(default_factory=dict)
    goal: list[str] = Field(min_length=1)
    """Goal phrasing variants; placeholders depend on the family (``{action}``, ``{Action}``, ...)."""
    memory: list[str] = Field(default_factory=list)
    """Memory phrasing variants (memory families)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Family options (e.g. ``steps`` of a multi-step task, ``branch`` of a conditional)."""
    max_steps_extra: int = Field(default=3, ge=0, le=20)
    """Steps beyond the oracle's own the planner gets."""
    criteria_keep: list[str] | None = None
    """Keep only the derived criteria of these kinds (None: all)."""
    criteria_extra: list[dict[str, Any]] = Field(default_factory=list)
    """Criteria added to every task of the template (checked like the derived ones)."""


class Pools(_T):
    """Seeded parameter pools: new names, free text, occasions, owners, candidate values by kind."""

    names: list[str] = Field(min_length=1)
    phrases: list[str] = Field(min_length=1)
    occasions: list[str] = Field(min_length=1)
    owners: list[str] = Field(min_length=1)
    strings: list[str] = Field(default_factory=list)
    """Candidate values for patterned or free strings (times, dates, units, expressions)."""
    numbers: list[float] = Field(default_factory=list)
    integers: list[int] = Field(default_factory=list)
    clauses: dict[str, list[str]] = Field(default_factory=dict)
    """Clause phrasing by call kind (``setting_bool``, ``setting_value``, ``create``, ...)."""
    nouns: dict[str, str] = Field(default_factory=dict)
    """Record nouns by state collection (``wallet.loyalty: loyalty card``) or by app
    (``notes: note``), where the collection's own key does not read as one."""
    generic_collections: list[str] = Field(default_factory=lambda: ["items"])
    """Collection keys that name no kind of record (``notes.items``): the app's noun is used."""


class TemplateSet(_T):
    """Templates plus their pools, with a content hash (the version a generated suite records)."""

    templates: list[Template]
    pools: Pools
    digest: str


def _read(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TemplateError(str(path), f"cannot read: {exc}") from exc


def _load(directory: Path) -> TemplateSet:
    if not directory.is_dir():
        raise TemplateError(str(directory), "not a folder of templates")
    sha = hashlib.sha256()
    templates: list[Template] = []
    for path in sorted(directory.glob("*.yaml")):
        raw = path.read_bytes()
        sha.update(path.name.encode() + b"\0" + raw)
        data = _read(path)
        items = data if isinstance(data, list) else [data]
        for item in items:
            try:
                templates.append(Template.model_validate(item))
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                raise TemplateError(str(path), f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from exc
    pool_data: dict[str, Any] = {}
    for path in sorted((directory / "pools").glob("*.yaml")):
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
        pool_data.update(_read(path) or {})
    try:
        pools = Pools.model_validate(pool_data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        raise TemplateError(str(directory / "pools"), f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from exc
    ids = [t.id for t in templates]
    if len(set(ids)) != len(ids):
        raise TemplateError(str(directory), "template ids repeat")
    if not templates:
        raise TemplateError(str(directory), "no templates")
    return TemplateSet(templates=templates, pools=pools, digest=sha.hexdigest()[:16])


@lru_cache(maxsize=4)
def _cached(directory: str) -> TemplateSet:
    return _load(Path(directory))


def load_templates(directory: str | Path | None = None) -> TemplateSet:
    """The templates and pools of ``directory`` (default: the bundled ``templates/``).

    Raises:
        TemplateError: an unreadable file, a template or pool that does not fit its model.
    """
    return _cached(str(Path(directory) if directory is not None else TEMPLATE_DIR))
