"""Worlds: tools acting on one state, with snapshot, restore and diff, so tasks can bring their own.

A world is a pydantic state model instance plus the tools that act on it. The sandbox phone is
one (:class:`SandboxWorld`); a task file's ``world:`` section names another (:class:`ModelWorld`:
app classes, ``@tool`` functions, factories, built over the task's state model). A task runs on
a :class:`TaskWorld`: the sandbox, its own world, or both side by side. Criteria address the
combined state by dotted path, as they address the phone's, so the verifier, the oracle replay
and the vacuity audit need to know nothing about which world a task has.

What an ``apps`` entry may be, told apart by type, never by name:

- a class: built as ``cls(state)``; its ``@tool`` methods act on that state (like sandbox apps);
  a class attribute ``world = "..."`` declares the world its tools belong to (``ToolSpec.world``:
  the identity skills and η notes are matched by), as ``name`` declares the app;
- a :class:`~pocketpilot.executor.tools.Tool` (a ``@tool`` function): used as it is;
- a list or tuple of these;
- any other callable: a factory ``make(state)`` returning a Tool or an iterable of Tools.

A class or factory that also takes a ``phone`` argument is given the world's :class:`Phone`: the
clock and power state of the phone its apps run on.

Beside the sandbox (a task keeping the phone and bringing apps), two rules keep every name
meaning one thing:

- a tool name both offer is the world's when the task says so (``world.override: true``, or a
  list of names); otherwise it is ambiguous, and exposing it is a :class:`WorldError` (left
  unexposed, the clash is harmless);
- a top-level state field both have is addressed under each world's name (``sandbox.cast``,
  ``world.cast``); a field only one has keeps its plain path (``settings.wifi``, ``plants``).

Once the phone is powered off, the world's tools fail with ``device_off`` as the phone's own do.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from ..contracts import ToolCall, ToolResult, ToolSpec
from ..errors import PocketPilotError, ToolFailure, WorldError
from ..executor.sandbox import PhoneState, SandboxPhone, StateChange, check_path
from ..executor.sandbox.diff import diff_values
from ..executor.tools import Tool, ToolRegistry

__all__ = [
    "DEVICE_OFF",
    "ModelWorld",
    "Phone",
    "SandboxWorld",
    "TaskWorld",
    "World",
    "WorldExecutor",
    "WorldState",
    "build_tools",
    "import_ref",
    "state_data",
]

WorldState = BaseModel | dict[str, Any]
"""A snapshot of a world: its state model instance, or (several worlds side by side) the merged dump."""


def state_data(state: WorldState | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON form criteria read: ``model_dump(mode="json")`` of a model, a dump as it is."""
    if isinstance(state, BaseModel):
        return state.model_dump(mode="json")
    return dict(state)


@runtime_checkable
class World(Protocol):
    """What a task needs of a world: its state model, snapshots of its state, and its tools."""

    name: str

    @property
    def state_model(self) -> type[BaseModel]: ...

    def snapshot(self) -> BaseModel: ...

    def restore(self, snapshot: BaseModel) -> None: ...

    def registry(self) -> ToolRegistry: ...

    def apps(self) -> dict[str, list[str]]:
        """App name -> its tool names (a task's ``tools:`` may name an app for all of them)."""
        ...


class SandboxWorld:
    """The sandbox phone as a world (the phone itself is unchanged; this only presents it)."""

    name = "sandbox"

    def __init__(self, phone: SandboxPhone | None = None) -> None:
        self.phone = phone if phone is not None else SandboxPhone()

    @property
    def state_model(self) -> type[BaseModel]:
        return PhoneState

    def snapshot(self) -> PhoneState:
        return self.phone.snapshot()

    def restore(self, snapshot: BaseModel) -> None:
        self.phone.restore(PhoneState.model_validate(snapshot.model_dump()))

    def registry(self) -> ToolRegistry:
        return self.phone.registry()

    def apps(self) -> dict[str, list[str]]:
        return {app: self.phone.tool_names(app) for app in self.phone.apps}

    def clock(self) -> datetime:
        """The phone's fixed clock (the harness shows it as evidence)."""
        return self.phone.state.now


DEVICE_OFF = "the phone is powered off; nothing can run until it is turned on"
"""The message of a ``device_off`` failure (the sandbox apps' own words)."""


class Phone:
    """What a world's apps may read of the phone they run on: its clock and whether it is on.

    A world beside the sandbox runs on the sandbox's phone (the :class:`TaskWorld` attaches it):
    its clock is the phone's, and it is off once ``power_off`` ran. A world on its own has no
    phone: the clock is its state's own ``now`` (None without one) and it is always on. The
    handle is read at each access, so a restored or powered-off phone is seen at once.
    """

    def __init__(self, own_clock: Callable[[], datetime | None] = lambda: None) -> None:
        self._own_clock = own_clock
        self._sandbox: SandboxPhone | None = None

    def attach(self, phone: SandboxPhone) -> None:
        """Run on ``phone`` from now on."""
        self._sandbox = phone

    @property
    def now(self) -> datetime | None:
        """The phone's clock (the world's own ``now`` when there is no phone)."""
        return self._sandbox.state.now if self._sandbox is not None else self._own_clock()

    @property
    def powered_on(self) -> bool:
        """False once the phone was powered off (always True without a phone)."""
        return self._sandbox is None or self._sandbox.state.device.powered_on

    def require_on(self) -> None:
        """Raise the phone's own ``device_off`` failure when it is off (for a tool run outside an executor).

        Raises:
            ToolFailure: ``device_off``.
        """
        if not self.powered_on:
            raise ToolFailure("device_off", DEVICE_OFF)


class _EmptyState(BaseModel):
    """The state of a world that brings tools only (nothing for criteria to read)."""

    model_config = ConfigDict(extra="forbid")


ToolSource = Any
"""An ``apps`` entry once imported: a class, a Tool, a list/tuple of those, or a factory."""


def _app_name(cls: type) -> str:
    declared = getattr(cls, "name", None)
    return declared if isinstance(declared, str) and declared else cls.__name__


def _declared_world(t: Tool, cls: type, label: str) -> Tool:
    """``t`` (bound to this instance) with the world its app class declares, unless it declares its own."""
    world = getattr(cls, "world", None)
    if not isinstance(world, str) or t.spec.world is not None:
        return t
    try:
        t.spec = ToolSpec.model_validate({**t.spec.model_dump(), "world": world})
    except ValidationError as exc:
        raise WorldError("world", f"{label}: class {cls.__name__} declares world {world!r}, not a world name") from exc
    return t


def _takes_phone(fn: Callable[..., Any]) -> bool:
    """Whether a class's constructor or a factory has a ``phone`` parameter (passed by keyword)."""
    try:
        param = inspect.signature(fn).parameters.get("phone")
    except (TypeError, ValueError):
        return False
    return param is not None and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)


def _built(fn: Callable[..., Any], state: BaseModel, phone: Phone | None) -> Any:
    return fn(state, phone=phone) if phone is not None and _takes_phone(fn) else fn(state)


def build_tools(source: ToolSource, state: BaseModel, label: str = "app",
                phone: Phone | None = None) -> list[tuple[str | None, Tool]]:
    """The tools ``source`` provides over ``state``, each with the app it belongs to (None: none).

    A class or factory with a ``phone`` parameter is given ``phone`` as well.

    Raises:
        WorldError: ``source`` is none of the accepted kinds, a class with no ``@tool`` method, or
            a factory that returned something other than tools.
    """
    if isinstance(source, Tool):
        return [(None, source)]
    if isinstance(source, (list, tuple)):
        return [pair for i, item in enumerate(source)
                for pair in build_tools(item, state, f"{label}[{i}]", phone)]
    if isinstance(source, type):
        instance = _built(source, state, phone)
        found = ToolRegistry.from_object(instance)
        if not found.names():
            raise WorldError("world", f"{label}: class {source.__name__} has no @tool methods")
        name = _app_name(source)
        return [(name, _declared_world(found[t], source, label)) for t in found.names()]
    if callable(source):
        made = _built(source, state, phone)
        items = [made] if isinstance(made, Tool) else list(made) if isinstance(made, Iterable) else None
        if items is None or not all(isinstance(t, Tool) for t in items):
            raise WorldError("world", f"{label}: factory {getattr(source, '__name__', source)!r} returned "
                                      f"{type(made).__name__}, not a Tool or a list of Tools")
        return [(None, t) for t in items]
    raise WorldError("world", f"{label}: {source!r} is not a class, a Tool, a list of them, or a factory")


@contextlib.contextmanager
def _search_path(roots: Sequence[Path]) -> Iterator[None]:
    """Put ``roots`` first on ``sys.path`` for one import, and take them off again."""
    added = [str(r) for r in roots if str(r) not in sys.path]
    sys.path[:0] = added
    importlib.invalidate_caches()
    try:
        yield
    finally:
        for entry in added:
            with contextlib.suppress(ValueError):
                sys.path.remove(entry)


def import_ref(ref: str, roots: Sequence[Path] = ()) -> Any:
    """The object ``module:attr`` names (``attr`` may be dotted), imported with ``roots`` on sys.path.

    Raises:
        WorldError: the reference is malformed, the module does not import (whatever it raised:
            a missing module, a syntax error, a tool whose declared semantics do not fit its
            signature), or it has no such attribute.
    """
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise WorldError("world", f"{ref!r} is not 'module:attr'")
    try:
        with _search_path(roots):
            module = importlib.import_module(module_name)
    except PocketPilotError as exc:
        raise WorldError("world", f"{ref!r}: importing {module_name!r} failed: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - a user's module may raise anything; it becomes one line
        raise WorldError("world", f"{ref!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise WorldError("world", f"{ref!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


class ModelWorld:
    """A world a task brings: a state model instance and the tools its apps build over it.

    Tools hold the state instance they were built with, so :meth:`restore` writes a snapshot's
    values into that same instance rather than swapping it.
    """

    name = "world"

    def __init__(self, state: BaseModel | None = None, apps: Sequence[ToolSource] = (), *,
                 concurrent: bool = False, labels: Sequence[str] | None = None) -> None:
        self.state = state if state is not None else _EmptyState()
        self.phone = Phone(self.clock)
        """The phone its apps run on (attached to the sandbox's when the task keeps it)."""
        self._registry = ToolRegistry(concurrent=concurrent)
        self._apps: dict[str, list[str]] = {}
        for i, source in enumerate(apps):
            label = labels[i] if labels is not None else f"apps[{i}]"
            try:
                built = build_tools(source, self.state, label, self.phone)
            except WorldError:
                raise
            except Exception as exc:  # noqa: BLE001 - a user's constructor or factory may raise anything
                raise WorldError("world", f"{label}: building its tools failed: {type(exc).__name__}: {exc}") from exc
            for app, t in built:
                if t.name in self._registry:
                    raise WorldError("world", f"{label}: duplicate tool name {t.name!r}")
                self._registry.add(t)
                if app is not None:
                    self._apps.setdefault(app, []).append(t.name)

    @property
    def state_model(self) -> type[BaseModel]:
        return type(self.state)

    def snapshot(self) -> BaseModel:
        return self.state.model_copy(deep=True)

    def restore(self, snapshot: BaseModel) -> None:
        fresh = self.state_model.model_validate(snapshot.model_dump())
        self.state.__dict__.update(fresh.__dict__)
        if fresh.__pydantic_extra__ is not None:
            self.state.__pydantic_extra__ = dict(fresh.__pydantic_extra__)
        self.state.__pydantic_fields_set__ = set(fresh.__pydantic_fields_set__)

    def registry(self) -> ToolRegistry:
        return self._registry

    def apps(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self._apps.items()}

    def clock(self) -> datetime | None:
        """The state's own ``now``, when its model has a datetime field of that name."""
        now = getattr(self.state, "now", None)
        return now if isinstance(now, datetime) else None


class TaskWorld:
    """The worlds one task runs on, side by side: one tool catalogue, one addressable state.

    A tool name two members offer belongs to the later one (the task's own world, after the
    sandbox) for the names ``overrides`` covers (True: all of them); any other shared name is
    ambiguous and cannot be exposed (:meth:`check_exposed`). A top-level state field two members
    have is addressed under each member's name (``sandbox.cast``, ``world.cast``); the rest keep
    their plain paths, so a criterion path names exactly one world's value either way.

    Raises:
        WorldError: ``overrides`` names a tool that is not shared, or a member's name (the
            namespace of shared fields) is also a top-level state field.
    """

    def __init__(self, members: Sequence[World], *, overrides: bool | Collection[str] = False) -> None:
        if not members:
            raise WorldError("world", "a task needs a world: the sandbox, its own apps, or both")
        self.members = list(members)
        offered: dict[str, list[World]] = {}
        for world in self.members:
            for name in world.registry().names():
                offered.setdefault(name, []).append(world)
        shared = {name for name, worlds in offered.items() if len(worlds) > 1}
        if not isinstance(overrides, bool):
            stray = [n for n in overrides if n not in shared]
            if stray:
                raise WorldError("world", f"override names {', '.join(map(repr, stray))}, which the sandbox and "
                                          f"the world do not both offer (shared: "
                                          f"{', '.join(sorted(shared)) or 'none'})")
        wins = shared if overrides is True else set(overrides or ()) & shared
        self._owner: dict[str, World] = {}
        self._ambiguous: dict[str, list[World]] = {}
        for name, worlds in offered.items():
            if name in shared and name not in wins:
                self._ambiguous[name] = worlds
            self._owner[name] = worlds[-1]
        self._field_owner: dict[str, World] = {}
        self._shared_fields: dict[str, list[World]] = {}
        for world in self.members:
            for field in world.state_model.model_fields:
                if field in self._shared_fields:
                    self._shared_fields[field].append(world)
                elif field in self._field_owner:
                    self._shared_fields[field] = [self._field_owner.pop(field), world]
                else:
                    self._field_owner[field] = world
        spaces = {w.name for worlds in self._shared_fields.values() for w in worlds}
        taken = sorted(spaces & set(self._field_owner))
        if taken or (self._shared_fields and len({w.name for w in self.members}) < len(self.members)):
            raise WorldError("world", f"state field(s) {', '.join(sorted(self._shared_fields))} are in several "
                                      "worlds, and their names cannot tell them apart"
                                      + (f" (a field is named {taken[0]!r})" if taken else ""))
        sandbox = self.sandbox
        for world in self.members:
            phone = getattr(world, "phone", None)
            if sandbox is not None and isinstance(phone, Phone):
                phone.attach(sandbox.phone)

    @property
    def sandbox(self) -> SandboxWorld | None:
        """The sandbox member, when the task keeps the phone."""
        return next((w for w in self.members if isinstance(w, SandboxWorld)), None)

    def powered_on(self) -> bool:
        """False once the sandbox phone was powered off (a world without the phone never is)."""
        sandbox = self.sandbox
        return sandbox is None or sandbox.phone.state.device.powered_on

    def tool_names(self) -> list[str]:
        """Every tool of every member, in member order (an ambiguous name once)."""
        return list(self._owner)

    def owner(self, name: str) -> World:
        """The member whose tool ``name`` is (KeyError for an unknown name)."""
        return self._owner[name]

    def ambiguous(self) -> dict[str, list[str]]:
        """Tool names several members offer and no override settles, with the members offering each."""
        return {name: [w.name for w in worlds] for name, worlds in self._ambiguous.items()}

    def check_exposed(self, names: Iterable[str]) -> None:
        """Check that no name in ``names`` is ambiguous.

        Raises:
            WorldError: naming the first ambiguous tool and how to settle it.
        """
        wanted = set(names)
        for name in self._owner:  # catalogue order: the same first culprit every time
            if name in wanted and name in self._ambiguous:
                who = " and ".join(w.name for w in self._ambiguous[name])
                raise WorldError("world", f"tool {name!r} is offered by both {who}: set world.override (true, "
                                          f"or a list naming {name!r}) to use the world's, or leave it unexposed")

    def apps(self) -> dict[str, list[str]]:
        """Every member's apps (an app name that two members use stands for both's tools)."""
        out: dict[str, list[str]] = {}
        for world in self.members:
            for app, names in world.apps().items():
                listed = out.setdefault(app, [])
                listed.extend(n for n in names if n not in listed)
        return out

    def specs(self) -> dict[str, ToolSpec]:
        """Every tool's declared spec by name (the verifier reads semantics from these)."""
        return {name: world.registry()[name].spec for name, world in self._owner.items()}

    def check_path(self, path: str) -> None:
        """Check that ``path`` can exist in this world's state.

        Raises:
            ValueError: naming the first segment that does not fit the state models.
        """
        head, _, rest = path.partition(".")
        owner = self._field_owner.get(head)
        if owner is not None:
            check_path(path, owner.state_model)
            return
        if head in self._shared_fields:
            where = " or ".join(f"{w.name}.{path}" for w in self._shared_fields[head])
            raise ValueError(f"{path!r}: several worlds have a field {head!r}; address it as {where}")
        member = next((w for w in self.members if w.name == head and
                       any(w in ws for ws in self._shared_fields.values())), None)
        if member is not None:
            field = rest.split(".", 1)[0]
            if field not in self._shared_fields or member not in self._shared_fields[field]:
                raise ValueError(f"{path!r}: under {head!r} are only the fields several worlds share "
                                 f"({', '.join(f for f, ws in self._shared_fields.items() if member in ws)})")
            check_path(rest, member.state_model)
            return
        fields = [*self._field_owner, *self._shared_fields]
        raise ValueError(f"{path!r}: the state has no field {head!r} (fields: {', '.join(fields)})")

    def snapshot(self) -> WorldState:
        """The state now, independent of later changes: the member's model, or the merged dump."""
        if len(self.members) == 1:
            return self.members[0].snapshot()
        return self.dump()

    def dump(self) -> dict[str, Any]:
        """The merged JSON form of every member's state (shared fields under each member's name)."""
        out: dict[str, Any] = {}
        for world in self.members:
            for key, value in world.snapshot().model_dump(mode="json").items():
                if key in self._shared_fields:
                    out.setdefault(world.name, {})[key] = value
                else:
                    out[key] = value
        return out

    def restore(self, snapshot: WorldState) -> None:
        """Put every member back to ``snapshot`` (one :meth:`snapshot` of this world)."""
        if isinstance(snapshot, BaseModel):
            if len(self.members) != 1:
                raise WorldError("world", "a model snapshot restores a world of one member only")
            self.members[0].restore(snapshot)
            return
        for world in self.members:
            space = snapshot.get(world.name, {})
            part = {}
            for k in world.state_model.model_fields:
                source = space if k in self._shared_fields else snapshot
                if k in source:
                    part[k] = source[k]
            try:
                world.restore(world.state_model.model_validate(part))
            except ValidationError as exc:
                raise WorldError("world", f"snapshot does not fit {world.name}: {exc.error_count()} error(s)") from exc

    def diff(self, before: WorldState, after: WorldState) -> list[StateChange]:
        """Every leaf-level change from ``before`` to ``after`` (see ``diff_states``)."""
        return diff_values(state_data(before), state_data(after))

    def clock(self) -> datetime | None:
        """The world's clock, if it has one: the phone's, else a member state's ``now``."""
        for world in self.members:
            read: Callable[[], datetime | None] | None = getattr(world, "clock", None)
            now = read() if read is not None else None
            if now is not None:
                return now
        return None

    def executor(self, tools: Sequence[str] | None = None) -> WorldExecutor:
        """An executor exposing ``tools`` (tool or app names; None: all)."""
        return WorldExecutor(self, tools)


class WorldExecutor:
    """Runs tool calls on a :class:`TaskWorld`, exposing all or some of its tools.

    Each call goes to its member's registry, so a member's own rule for concurrent calls
    (a sandbox phone or a non-thread-safe world sees one call at a time) holds. A call of a
    world's tool once the phone is off fails with ``device_off``, as a sandbox tool's does.

    Raises:
        WorldError: ``tools`` names a tool or app the world does not have, or exposes a tool
            name two members offer with no override settling it.
    """

    def __init__(self, world: TaskWorld, tools: Sequence[str] | None = None) -> None:
        self.world = world
        apps = world.apps()
        names: list[str] = []
        if tools is None:
            names = world.tool_names()
        else:
            unknown = []
            for name in tools:
                if name in apps:
                    names.extend(apps[name])
                elif name in world.tool_names():
                    names.append(name)
                else:
                    unknown.append(name)
            if unknown:
                raise WorldError("world", f"unknown tool(s) {', '.join(map(repr, unknown))}; "
                                          f"tools: {', '.join(world.tool_names())}")
        wanted = set(names)
        ordered = [n for n in world.tool_names() if n in wanted]
        world.check_exposed(ordered)
        self._routes: dict[str, ToolRegistry] = {}
        self._on_phone: set[str] = set()
        for member in world.members:
            sub = member.registry().subset(n for n in ordered if world.owner(n) is member)
            for n in sub.names():
                self._routes[n] = sub
                if not isinstance(member, SandboxWorld):
                    self._on_phone.add(n)
        self._order = ordered

    def tools(self) -> list[ToolSpec]:
        """Specs of the exposed tools, in catalogue order."""
        return [self._routes[n][n].spec for n in self._order]

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call; an unexposed tool is an ``unknown_tool`` failure, never an exception."""
        registry = self._routes.get(call.name)
        if registry is None:
            return ToolResult.failure(
                "unknown_tool", f"no tool named {call.name!r}; available: {', '.join(self._order)}"
            )
        if call.name in self._on_phone and not self.world.powered_on():
            # the sandbox's own tools refuse through their state; a world's apps run on the same phone
            return ToolResult.failure("device_off", DEVICE_OFF)
        return await registry.call(call)
