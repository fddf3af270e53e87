"""The small world interface the task generator works against: tool specs, invoke, snapshot.

A generator that reached into the sandbox phone directly would produce tasks for the sandbox
only. It needs four things from a world, whatever its apps: the tools with their declared
semantics, which app each belongs to, a fresh run from the world's initial state plus a patch,
and the run's state as a JSON-able dict (diffed with :func:`~pocketpilot.executor.sandbox.diff_dumps`).
The sandbox phone is one :class:`World`; :class:`ObjectWorld` is a user's, named the way a
task file's ``world:`` section names it (``apps`` as ``pkg.mod:attr`` references, a
``state_model``, an ``initial_state``).
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..contracts import ToolCall, ToolResult, ToolSpec
from ..errors import WorldError
from ..executor.tools import Tool, ToolRegistry

__all__ = ["ObjectWorld", "SandboxWorld", "World", "WorldRun", "WorldSpec", "load_world", "merge_patch"]


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


class World(ABC):
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
    def task_fields(self, tools: Sequence[str]) -> dict[str, Any]:
        """What a task file needs to name this world and expose ``tools`` (``tools``, ``world``)."""

    def apps(self) -> list[str]:
        """App names, in tool order."""
        return list(dict.fromkeys(self.app_of(t.name) for t in self.tools()))

    def check(self, task: dict[str, Any]) -> str | None:
        """A loader-level check of a finished task dict; a reason string when it is refused."""
        return None


class SandboxWorld(World):
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

    def base(self) -> dict[str, Any]:
        return self._base

    def start(self, patch: dict[str, Any] | None = None, tools: Sequence[str] | None = None) -> WorldRun:
        from ..executor.sandbox import PhoneState

        self._phone.state = PhoneState.model_validate(merge_patch(self._base, patch or {}))
        full = self._phone.registry()
        registry = full if tools is None else full.subset(tools)
        return WorldRun(registry, lambda: self._phone.state.model_dump(mode="json"))

    def task_fields(self, tools: Sequence[str]) -> dict[str, Any]:
        # the sandbox loader expands app names, so a task lists the apps it is about
        return {"tools": list(dict.fromkeys(self.app_of(t) for t in tools))}

    def check(self, task: dict[str, Any]) -> str | None:
        from ..errors import TaskSpecError
        from .loader import parse_task

        try:
            parse_task(task, task.get("id", "generated"))
        except TaskSpecError as exc:
            return exc.reason
        return None


class WorldSpec(BaseModel):
    """A user's world as a task file's ``world:`` section names it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    apps: list[str] = Field(min_length=1)
    """``pkg.mod:attr`` references: app classes (built as ``cls(state)``), ``@tool`` functions,
    or factories called with the state that return an object with ``@tool`` methods."""
    state_model: str
    """``pkg.mod:attr`` of a pydantic model of the whole state."""
    initial_state: dict[str, Any] = Field(default_factory=dict)
    sandbox: bool = False


def _resolve(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise WorldError(ref, "expected a reference of the form pkg.module:attr")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise WorldError(ref, f"cannot import {module}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise WorldError(ref, f"{module} has no attribute {attr}") from exc
    return obj


class ObjectWorld(World):
    """A user's world: its app classes, tool functions or factories over one pydantic state."""

    def __init__(self, spec: WorldSpec, *, name: str = "world") -> None:
        self.spec, self.name = spec, name
        model = _resolve(spec.state_model)
        if not (inspect.isclass(model) and issubclass(model, BaseModel)):
            raise WorldError(spec.state_model, "state_model must be a pydantic model class")
        self._model: type[BaseModel] = model
        self._apps = [(ref, _resolve(ref)) for ref in spec.apps]
        try:
            self._base = model.model_validate(spec.initial_state).model_dump(mode="json")
        except ValidationError as exc:
            raise WorldError(spec.state_model, f"initial_state does not validate: {exc.errors()[0]['msg']}") from exc
        registry, _ = self._build(self._model.model_validate(self._base))
        self._specs = registry.tools()
        self._app_of = dict(self._owner)

    def _build(self, state: BaseModel) -> tuple[ToolRegistry, BaseModel]:
        registry = ToolRegistry()
        owner: list[tuple[str, str]] = []
        for ref, obj in self._apps:
            app = str(getattr(obj, "name", None) or ref.rpartition(":")[2].split(".")[-1]).lower()
            if isinstance(obj, Tool):
                tools = [obj]
            else:
                made = obj(state) if callable(obj) else obj
                if isinstance(made, Tool):
                    tools = [made]
                else:
                    found = ToolRegistry.from_object(made)
                    tools = [found[n] for n in found.names()]
                if not inspect.isclass(obj):
                    app = str(getattr(made, "name", app)).lower()
            for t in tools:
                registry.add(t)
                owner.append((t.name, app))
        self._owner = owner
        return registry, state

    def tools(self) -> list[ToolSpec]:
        return list(self._specs)

    def app_of(self, tool: str) -> str:
        return self._app_of[tool]

    def base(self) -> dict[str, Any]:
        return self._base

    def start(self, patch: dict[str, Any] | None = None, tools: Sequence[str] | None = None) -> WorldRun:
        state = self._model.model_validate(merge_patch(self._base, patch or {}))
        registry, state = self._build(state)
        registry = registry if tools is None else registry.subset(tools)
        return WorldRun(registry, lambda: state.model_dump(mode="json"))

    def task_fields(self, tools: Sequence[str]) -> dict[str, Any]:
        return {"tools": list(tools), "world": self.spec.model_dump(mode="json")}


def load_world(ref: str | None) -> World:
    """The sandbox (None or ``sandbox``), a world YAML/JSON file, or a ``pkg.mod:attr`` world section.

    Raises:
        WorldError: the reference, file or section cannot be loaded.
    """
    if ref in (None, "sandbox"):
        return SandboxWorld()
    assert ref is not None
    path = Path(ref)
    if path.suffix.lower() in (".yaml", ".yml", ".json") and path.is_file():
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data = data.get("world", data) if isinstance(data, dict) else data
        name = path.stem
    else:
        data = _resolve(ref)
        name = ref.rpartition(":")[2].lower()
    if isinstance(data, WorldSpec):
        return ObjectWorld(data, name=name)
    try:
        return ObjectWorld(WorldSpec.model_validate(data), name=name)
    except ValidationError as exc:
        raise WorldError(ref, f"not a world section: {exc.errors()[0]['msg']}") from exc
