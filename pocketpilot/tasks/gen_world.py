"""The generator's view of a world: tool specs, invoke, snapshot — the sandbox or a user's.

A generator that reached into the sandbox phone directly would produce tasks for the sandbox
only. It needs four things from a world, whatever its apps: the tools with their declared
semantics, which app each belongs to, a fresh run from the world's initial state plus a patch,
and the run's state as a JSON-able dict (diffed with :func:`~pocketpilot.executor.sandbox.diff_values`).
The sandbox phone is one :class:`GenWorld`; :class:`UserGenWorld` is a user's, named the way a
task file's ``world:`` section names it (:class:`~.spec.WorldSpec`) and built the way the loader
builds it (:class:`~.world.ModelWorld`), so what the generator validates is what a run gets.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..contracts import ToolCall, ToolResult, ToolSpec
from ..errors import WorldError
from ..executor.tools import ToolRegistry
from .spec import WorldSpec
from .words import WorldWords, load_words

__all__ = ["GenWorld", "SandboxGenWorld", "UserGenWorld", "WorldRun", "load_gen_world", "merge_patch"]


def merge_patch(base: Any, patch: Any) -> Any:
    """``patch`` deep-merged over ``base``, lists replaced whole (as the task loader merges ``initial_state``)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = merge_patch(base[key], value) if key in base else value
        return out
    return patch


class WorldRun:
    """One fresh run of a world: an executor over some of its tools and a way to read its state."""

    def __init__(self, registry: ToolRegistry, dump: Any) -> None:
        self._registry = registry
        self._dump = dump

    def tools(self) -> list[ToolSpec]:
        """Specs of the exposed tools (what an episode header records)."""
        return self._registry.tools()

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call; an unexposed tool fails as ``unknown_tool``, as in a real run."""
        return await self._registry.call(call)

    def dump(self) -> dict[str, Any]:
        """The current state as a JSON-able dict."""
        return self._dump()


class GenWorld(ABC):
    """What the generator needs from a world; implementations wrap the sandbox or a user's apps."""

    name: str = "world"

    @abstractmethod
    def tools(self) -> list[ToolSpec]:
        """Every tool of the world, with its declared semantics."""

    @abstractmethod
    def app_of(self, tool: str) -> str:
        """The app a tool belongs to (a task's domain)."""

    @abstractmethod
    def base(self) -> dict[str, Any]:
        """The world's initial state, dumped (a task's ``initial_state`` is a patch over it)."""

    @abstractmethod
    def start(self, patch: dict[str, Any] | None = None, tools: Sequence[str] | None = None) -> WorldRun:
        """A fresh run from the initial state with ``patch`` merged in, exposing ``tools`` (None: all)."""

    @abstractmethod
    def task_fields(self, tools: Sequence[str], patch: dict[str, Any] | None = None) -> dict[str, Any]:
        """What a task file needs to name this world, expose ``tools`` and start from ``patch``."""

    @abstractmethod
    def patch_of(self, task: dict[str, Any]) -> dict[str, Any]:
        """The start patch a task-file dict written by :meth:`task_fields` carries."""

    def domains(self, tools: Sequence[str]) -> list[str]:
        """The apps ``tools`` belong to (a task's ``domains``)."""
        return list(dict.fromkeys(self.app_of(t) for t in tools))

    def app_label(self, app: str) -> str:
        """How a person names ``app`` (its launcher label where the world declares one)."""
        return app

    def words(self) -> WorldWords:
        """The world's own words for its tools, apps and fields (none: said from declarations)."""
        return WorldWords()

    def apps(self) -> list[str]:
        """App names, in tool order."""
        return list(dict.fromkeys(self.app_of(t.name) for t in self.tools()))

    def check(self, task: dict[str, Any]) -> str | None:
        """A loader-level check of a finished task dict; a reason string when it is refused."""
        return None


class SandboxGenWorld(GenWorld):
    """The sandbox phone (``default_state(seed)``), one phone reused: each run swaps in a fresh state."""

    name = "sandbox"

    def __init__(self, seed: int = 0) -> None:
        from ..executor.sandbox import SandboxPhone, default_state

        self.seed = seed
        self._phone = SandboxPhone(default_state(seed))
        self._base = self._phone.state.model_dump(mode="json")
        self._specs = self._phone.registry().tools()

    def tools(self) -> list[ToolSpec]:
        return list(self._specs)

    def app_of(self, tool: str) -> str:
        return self._phone.app_of(tool)

    def app_label(self, app: str) -> str:
        found = self._phone.apps.get(app)
        return (found.label if found is not None else None) or app

    def words(self) -> WorldWords:
        from ..executor import sandbox

        return load_words(Path(sandbox.__file__).parent / "words.yaml")

    def base(self) -> dict[str, Any]:
        return self._base

    def start(self, patch: dict[str, Any] | None = None, tools: Sequence[str] | None = None) -> WorldRun:
        from ..executor.sandbox import PhoneState

        self._phone.state = PhoneState.model_validate(merge_patch(self._base, patch or {}))
        full = self._phone.registry()
        registry = full if tools is None else full.subset(tools)
        return WorldRun(registry, lambda: self._phone.state.model_dump(mode="json"))

    def task_fields(self, tools: Sequence[str], patch: dict[str, Any] | None = None) -> dict[str, Any]:
        # the sandbox loader expands app names, so a task lists the apps it is about
        fields: dict[str, Any] = {"tools": list(dict.fromkeys(self.app_of(t) for t in tools))}
        if patch:
            fields["initial_state"] = patch
        return fields

    def patch_of(self, task: dict[str, Any]) -> dict[str, Any]:
        return dict(task.get("initial_state") or {})

    def check(self, task: dict[str, Any]) -> str | None:
        from ..errors import TaskSpecError
        from .loader import parse_task

        try:
            parse_task(task, task.get("id", "generated"))
        except TaskSpecError as exc:
            return exc.reason
        return None


class UserGenWorld(GenWorld):
    """A user's world: its ``world:`` section's apps over its state model, built as the loader builds it."""

    def __init__(self, spec: WorldSpec, *, name: str = "world", roots: Sequence[Path] = ()) -> None:
        from .world import ModelWorld, import_ref

        if spec.state_model is None or not spec.apps:
            raise WorldError("world", "a generated world needs apps and a state_model")
        self.spec, self.name, self.roots = spec, name, tuple(roots)
        model = import_ref(spec.state_model, self.roots)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise WorldError("world", f"state_model {spec.state_model!r} is not a pydantic model class")
        self._model: type[BaseModel] = model
        self._sources = [import_ref(ref, self.roots) for ref in spec.apps]
        self._labels = [f"world.apps[{i}] {ref!r}" for i, ref in enumerate(spec.apps)]
        self._model_world = ModelWorld
        try:
            self._base = model.model_validate(spec.initial_state or {}).model_dump(mode="json")
        except ValidationError as exc:
            raise WorldError("world", f"initial_state does not fit {model.__name__}: {exc.errors()[0]['msg']}") from exc
        first = ModelWorld(model.model_validate(self._base), self._sources, labels=self._labels)
        self._specs = first.registry().tools()
        self._app_of = {t: app for app, names in first.apps().items() for t in names}

    def tools(self) -> list[ToolSpec]:
        return list(self._specs)

    def app_of(self, tool: str) -> str:
        return self._app_of.get(tool, tool)  # a tool function belongs to no app: it stands alone

    def domains(self, tools: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(self._app_of[t] for t in tools if t in self._app_of))

    def base(self) -> dict[str, Any]:
        return self._base

    def start(self, patch: dict[str, Any] | None = None, tools: Sequence[str] | None = None) -> WorldRun:
        state = self._model.model_validate(merge_patch(self._base, patch or {}))
        world = self._model_world(state, self._sources, labels=self._labels)
        registry = world.registry()
        return WorldRun(registry if tools is None else registry.subset(tools), lambda: state.model_dump(mode="json"))

    def task_fields(self, tools: Sequence[str], patch: dict[str, Any] | None = None) -> dict[str, Any]:
        # a world without the sandbox starts from its own initial_state: the patch goes there
        section = self.spec.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        section["initial_state"] = merge_patch(self.spec.initial_state or {}, patch or {})
        return {"tools": list(tools), "world": section}

    def patch_of(self, task: dict[str, Any]) -> dict[str, Any]:
        return dict((task.get("world") or {}).get("initial_state") or {})

    def check(self, task: dict[str, Any]) -> str | None:
        from ..errors import TaskSpecError
        from .loader import parse_task

        try:
            parse_task(task, task.get("id", "generated"), roots=self.roots)
        except TaskSpecError as exc:
            return exc.reason
        return None


def load_gen_world(ref: str | None) -> GenWorld:
    """The sandbox (None or ``sandbox``), a world YAML/JSON file, or a ``pkg.mod:attr`` world section.

    Raises:
        WorldError: the reference, file or section cannot be loaded.
    """
    from .world import import_ref

    if ref in (None, "sandbox"):
        return SandboxGenWorld()
    assert ref is not None
    path = Path(ref)
    roots: list[Path] = [Path.cwd()]
    if path.suffix.lower() in (".yaml", ".yml", ".json") and path.is_file():
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        data = data.get("world", data) if isinstance(data, dict) else data
        name, roots = path.stem, [path.resolve().parent, *roots]
    else:
        data = import_ref(ref, roots)
        name = ref.rpartition(":")[2].lower()
    if isinstance(data, WorldSpec):
        return UserGenWorld(data, name=name, roots=roots)
    try:
        return UserGenWorld(WorldSpec.model_validate(data), name=name, roots=roots)
    except ValidationError as exc:
        raise WorldError("world", f"{ref}: not a world section: {exc.errors()[0]['msg']}") from exc
