"""Turn any Python function, sync or async, into a typed tool.

The signature gives the argument model (and so the JSON schema the planner's grammar is built
from), the docstring gives the descriptions, and the return value or the exception becomes a
:class:`~pocketpilot.contracts.ToolResult`. The sandbox phone's tools are built the same way an
embedding app exposes its own capabilities.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from ..contracts import Effect, ToolCall, ToolResult, ToolSpec
from ..errors import ExecutorError, ToolDefinitionError, ToolFailure

__all__ = ["Tool", "ToolRegistry", "tool"]

logger = logging.getLogger(__name__)

_SECTION = re.compile(r"[A-Z][A-Za-z ]*:")
_ARG = re.compile(r"^(\s*)(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (first paragraph, {arg: description}).

    Only the first paragraph becomes the tool description: it is repeated in every prompt, so
    the rest of the docstring stays for humans.
    """
    if not doc:
        return "", {}
    summary: list[str] = []
    args: dict[str, str] = {}
    section, current, arg_indent = "summary", None, None
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        if _SECTION.fullmatch(stripped):
            section = "args" if stripped in {"Args:", "Arguments:", "Parameters:"} else "other"
            current = None
            continue
        if section == "summary":
            if stripped:
                summary.append(stripped)
            elif summary:
                section = "body"
        elif section == "args":
            match = _ARG.match(line)
            if match and (arg_indent is None or len(match.group(1)) <= arg_indent):
                arg_indent, current = len(match.group(1)), match.group(2)
                args[current] = match.group(3).strip()
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(summary), args


def _argument_model(fn: Callable[..., Any], name: str, arg_docs: dict[str, str]) -> type[BaseModel]:
    try:
        hints = get_type_hints(fn, include_extras=True)  # keep Annotated[..., Field()] constraints
    except Exception as exc:  # noqa: BLE001 - any failure here is a definition error
        raise ToolDefinitionError(f"tool {name!r}: cannot resolve type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn).parameters.items():
        if pname in {"self", "cls"}:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {name!r}: *args/**kwargs cannot be described to a planner")
        if pname not in hints:
            raise ToolDefinitionError(f"tool {name!r}: parameter {pname!r} has no type annotation")
        default = param.default
        if isinstance(default, FieldInfo):
            if default.description is None and pname in arg_docs:
                # FieldInfo ignores attribute writes after construction: merge instead.
                default = FieldInfo.merge_field_infos(default, description=arg_docs[pname])
            fields[pname] = (hints[pname], default)
        else:
            info: Any = ... if default is inspect.Parameter.empty else default
            fields[pname] = (hints[pname], FieldInfo(default=info, description=arg_docs.get(pname)))
    model_name = "".join(part.capitalize() for part in re.split(r"[_.-]", name)) + "Args"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


class Tool:
    """A typed, callable tool: spec for the planner, validation and normalization for the executor."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        destructive: bool = False,
        idempotent: bool | None = None,
        read_only: bool | None = None,
        open_world: bool = False,
        effect: Effect | None = None,
        id_arg: str | None = None,
        name_arg: str | None = None,
        setting: str | None = None,
    ) -> None:
        if not callable(fn):
            raise ToolDefinitionError(f"{fn!r} is not callable")
        self.fn = fn
        self.name = name or fn.__name__
        doc_description, arg_docs = _parse_docstring(fn.__doc__)
        self.description = description if description is not None else doc_description
        self.destructive = destructive
        self.idempotent = (not destructive) if idempotent is None else idempotent
        """Whether sending it twice is harmless (the adb action journal relies on this)."""
        self.args_model = _argument_model(fn, self.name, arg_docs)
        self._bound: Any = None
        try:
            self.spec = ToolSpec(
                name=self.name,
                description=self.description,
                parameters=self.args_model.model_json_schema(),
                destructive=destructive,
                idempotent=self.idempotent,
                read_only=(effect == "read") if read_only is None else read_only,
                open_world=open_world,
                effect=effect,
                id_arg=id_arg,
                name_arg=name_arg,
                setting=setting,
            )
        except ValidationError as exc:
            raise ToolDefinitionError(f"tool {self.name!r}: {_validation_message(exc)}") from exc

    def __get__(self, instance: Any, owner: type | None = None) -> Tool:
        """Bind to an instance, so a method decorated with ``@tool`` becomes that instance's tool."""
        if instance is None:
            return self
        bound = object.__new__(Tool)
        bound.__dict__.update(self.__dict__)
        bound._bound = instance
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation, no normalization)."""
        if self._bound is not None:
            return self.fn(self._bound, *args, **kwargs)
        return self.fn(*args, **kwargs)

    async def invoke(self, arguments: dict[str, Any]) -> ToolResult:
        """Validate ``arguments``, run the function off the event loop if it is sync, normalize."""
        try:
            parsed = self.args_model.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.failure("invalid_arguments", f"{self.name}: {_validation_message(exc)}")
        kwargs = {field: getattr(parsed, field) for field in type(parsed).model_fields}
        try:
            if inspect.iscoroutinefunction(self.fn):
                value = await self(**kwargs)
            else:
                value = await asyncio.to_thread(self, **kwargs)
                if inspect.isawaitable(value):
                    value = await value
        except ToolFailure as failure:
            return ToolResult.failure(failure.code, failure.message, _jsonable(failure.data))
        except ExecutorError:
            raise  # a lost device is the harness's to handle, not the planner's (some are LookupErrors)
        except (ValueError, TypeError, KeyError, LookupError, ArithmeticError) as exc:
            # Bad values that slipped past the schema are the planner's to fix, not a crash.
            return ToolResult.failure("invalid_arguments", f"{self.name}: {exc}")
        if isinstance(value, ToolResult):
            return value
        return ToolResult.success(_jsonable(value))


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    destructive: bool = False,
    idempotent: bool | None = None,
    read_only: bool | None = None,
    open_world: bool = False,
    effect: Effect | None = None,
    id_arg: str | None = None,
    name_arg: str | None = None,
    setting: str | None = None,
) -> Any:
    """Make a typed tool of a function or method: ``@tool`` or ``@tool(effect="delete", ...)``.

    The keyword arguments declare the tool's semantics (see
    :class:`~pocketpilot.contracts.ToolSpec`): MCP's ``read_only``, ``destructive``,
    ``idempotent`` and ``open_world``; the ``effect``; for record tools the ``id_arg`` and
    ``name_arg``; for setting tools the ``setting`` key. The harness's policies read these, never
    the name. ``read_only`` defaults to ``effect == "read"``, ``idempotent`` to not destructive.

    Raise :class:`~pocketpilot.errors.ToolFailure` inside the body to report a failure with a
    code; a ``ValueError``/``TypeError``/``LookupError`` becomes ``invalid_arguments``; any other
    exception is a bug and propagates.

    Raises:
        ToolDefinitionError: the declared semantics contradict each other or the signature
            (a read-only delete, an ``id_arg`` that is not a parameter).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(
            f, name=name, description=description, destructive=destructive, idempotent=idempotent,
            read_only=read_only, open_world=open_world, effect=effect, id_arg=id_arg, name_arg=name_arg,
            setting=setting,
        )

    return wrap(fn) if fn is not None else wrap


class ToolRegistry:
    """Named tools with routing and result normalization; an :class:`Executor` on its own."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    @classmethod
    def from_object(cls, obj: object) -> ToolRegistry:
        """Collect every ``@tool`` method of ``obj``, bound to it."""
        names: dict[str, None] = {}  # definition order, subclasses may override
        for klass in reversed(type(obj).__mro__):
            for attr, value in vars(klass).items():
                if isinstance(value, Tool):
                    names[attr] = None
        return cls(getattr(obj, attr) for attr in names)

    def add(self, item: Tool | Callable[..., Any]) -> Tool:
        """Register a tool (a plain function is wrapped with default settings)."""
        t = item if isinstance(item, Tool) else Tool(item)
        if t.name in self._tools:
            raise ToolDefinitionError(f"duplicate tool name {t.name!r}")
        self._tools[t.name] = t
        return t

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def tools(self) -> list[ToolSpec]:
        """Specs of every registered tool (the Executor protocol)."""
        return [t.spec for t in self._tools.values()]

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry exposing only ``names`` (unknown names are ignored by design: callers check)."""
        return ToolRegistry(self._tools[n] for n in names if n in self._tools)

    async def call(self, call: ToolCall) -> ToolResult:
        """Route one call; an unknown name is a tool failure the planner sees, not an exception."""
        t = self._tools.get(call.name)
        if t is None:
            return ToolResult.failure(
                "unknown_tool", f"no tool named {call.name!r}; available: {', '.join(self._tools)}"
            )
        result = await t.invoke(call.arguments)
        logger.debug("tool %s -> ok=%s", call.name, result.ok)
        return result


ToolFunction = Callable[..., Any | Awaitable[Any]]
