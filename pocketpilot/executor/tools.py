"""Turn any Python function, sync or async, into a typed tool.

The signature gives the argument model (and so the JSON schema the planner's grammar is built
from), the docstring gives the descriptions, and the return value or the exception becomes a
:class:`~pocketpilot.contracts.ToolResult`. The sandbox phone's tools are built the same way an
embedding app exposes its own capabilities.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from ..contracts import Effect, ToolCall, ToolError, ToolResult, ToolSpec
from ..errors import ExecutorError, ToolDefinitionError, ToolFailure

__all__ = ["EffectByArg", "ResultClassifier", "Tool", "ToolRegistry", "tool"]

logger = logging.getLogger(__name__)

ResultClassifier = Callable[[Any], "ToolError | None"]
"""Reads a tool's returned value; a ToolError when the world meant it as a failure."""

EffectByArg = Mapping[str, Mapping[str, Any]]
"""``{argument: {value: effect or ToolEffect fields}}`` (see ``ToolSpec.effect_by_arg``)."""

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


def _definition_message(exc: ValidationError) -> str:
    """A declaration's errors on one line: where (if a field) and what, without pydantic's prefix."""
    parts = []
    for err in exc.errors(include_url=False):
        msg = str(err["msg"]).removeprefix("Value error, ")
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


class Tool:
    """A typed, callable tool: spec for the planner, validation and normalization for the executor."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        read_only: bool | None = None,
        open_world: bool = False,
        effect: Effect | None = None,
        id_arg: str | None = None,
        name_arg: str | None = None,
        setting: str | None = None,
        effect_by_arg: EffectByArg | None = None,
        fixable_errors: Sequence[str] = (),
        artifact_fields: Sequence[str] = (),
        name_fields: Sequence[str] = (),
        id_field: str | None = None,
        concurrent: bool | None = None,
        classify: ResultClassifier | None = None,
    ) -> None:
        if not callable(fn):
            raise ToolDefinitionError(f"{fn!r} is not callable")
        self.fn = fn
        self.concurrent = concurrent
        """Whether its calls may run at the same time as others of its world (None: the world says)."""
        self.classify = classify
        """Tells a failure the world reports as a plain value ("Failed to set ...") from a success."""
        self.name = name or fn.__name__
        doc_description, arg_docs = _parse_docstring(fn.__doc__)
        self.description = description if description is not None else doc_description
        self.args_model = _argument_model(fn, self.name, arg_docs)
        self._bound: Any = None
        self._declare(self.args_model.model_json_schema(), destructive=destructive, idempotent=idempotent,
                      read_only=read_only, open_world=open_world, effect=effect, id_arg=id_arg, name_arg=name_arg,
                      setting=setting, effect_by_arg=effect_by_arg, fixable_errors=fixable_errors,
                      artifact_fields=artifact_fields, name_fields=name_fields, id_field=id_field)

    def _declare(self, parameters: dict[str, Any], *, destructive: bool | None = None, idempotent: bool | None = None,
                 read_only: bool | None = None, open_world: bool = False, effect: Effect | None = None,
                 id_arg: str | None = None, name_arg: str | None = None, setting: str | None = None,
                 effect_by_arg: EffectByArg | None = None, fixable_errors: Sequence[str] = (),
                 artifact_fields: Sequence[str] = (), name_fields: Sequence[str] = (),
                 id_field: str | None = None) -> None:
        """The spec the planner and the harness's policies read, from the declared semantics.

        What is left out (None) takes ToolSpec's defaults by effect, the one table every
        route to a spec shares (``pocketpilot.contracts.IDEMPOTENT_EFFECTS``): a send is not
        idempotent, a delete is destructive, unless the tool says otherwise.
        """
        try:
            self.spec = ToolSpec(
                name=self.name,
                description=self.description,
                parameters=parameters,
                destructive=destructive,
                idempotent=idempotent,
                read_only=read_only,
                open_world=open_world,
                effect=effect,
                id_arg=id_arg,
                name_arg=name_arg,
                setting=setting,
                effect_by_arg=dict(effect_by_arg or {}),
                fixable_errors=list(fixable_errors),
                artifact_fields=list(artifact_fields),
                name_fields=list(name_fields),
                id_field=id_field,
            )
        except ValidationError as exc:
            raise ToolDefinitionError(f"tool {self.name!r}: {_definition_message(exc)}") from exc
        self.destructive = self.spec.destructive
        self.idempotent = self.spec.idempotent
        """Whether sending it twice is harmless (the adb action journal relies on this; a call
        whose effect an argument selects has its own: ``spec.for_arguments``)."""

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
        """Validate ``arguments``, run the function off the event loop if it is sync, normalize.

        The function gets the arguments the planner gave (validated), not every default filled
        in: its own defaults apply, and a wrapper can tell "not given" from "given as default".
        Whatever it raises becomes a failed result with the exception's type and message: a
        tool's bug ends that call, never the session.
        """
        try:
            parsed = self.args_model.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.failure("invalid_arguments", f"{self.name}: {_validation_message(exc)}")
        return await self._run({f: getattr(parsed, f) for f in self._given(parsed)})

    def _given(self, parsed: BaseModel) -> list[str]:
        # a signature default that is a pydantic Field() means nothing to the function itself
        return [f for f in type(parsed).model_fields if f in parsed.model_fields_set or f in self._field_defaults]

    @property
    def _field_defaults(self) -> frozenset[str]:
        cached = self.__dict__.get("_fd")
        if cached is None:
            try:
                params = inspect.signature(self.fn).parameters.values()
            except (TypeError, ValueError):
                params = []  # type: ignore[assignment]
            cached = frozenset(p.name for p in params if isinstance(p.default, FieldInfo))
            self.__dict__["_fd"] = cached
        return cached

    async def _run(self, kwargs: dict[str, Any]) -> ToolResult:
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
        except Exception as exc:  # noqa: BLE001 - a tool's bug is that call's failure, not the session's
            logger.warning("tool %s raised %s", self.name, type(exc).__name__, exc_info=True)
            return ToolResult.failure("tool_error", f"{self.name}: {type(exc).__name__}: {exc}")
        if isinstance(value, ToolResult):
            return value
        if self.classify is not None:
            error = self.classify(value)
            if error is not None:
                return ToolResult(ok=False, data=_jsonable(value), error=error)
        return ToolResult.success(_jsonable(value))

    @classmethod
    def from_schema(
        cls,
        name: str,
        parameters: dict[str, Any],
        handler: Callable[..., Any],
        *,
        description: str = "",
        **semantics: Any,
    ) -> Tool:
        """A tool from a name, a JSON schema and a handler: MCP tools, OpenAI-format tools, a
        foreign Python API. No signature to forge: the handler gets the validated arguments as
        keyword arguments, only those the planner gave. ``semantics`` are the ``@tool``
        keywords (``effect``, ``destructive``, ``effect_by_arg``, ``concurrent``, ``classify``...),
        with the same defaults by effect.

        Raises:
            ToolDefinitionError: the schema is not a valid JSON schema for an object.
        """
        return _SchemaTool(name, parameters, handler, description=description, **semantics)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    read_only: bool | None = None,
    open_world: bool = False,
    effect: Effect | None = None,
    id_arg: str | None = None,
    name_arg: str | None = None,
    setting: str | None = None,
    effect_by_arg: EffectByArg | None = None,
    fixable_errors: Sequence[str] = (),
    artifact_fields: Sequence[str] = (),
    name_fields: Sequence[str] = (),
    id_field: str | None = None,
    concurrent: bool | None = None,
    classify: ResultClassifier | None = None,
) -> Any:
    """Make a typed tool of a function or method: ``@tool`` or ``@tool(effect="delete", ...)``.

    The keyword arguments declare the tool's semantics (see
    :class:`~pocketpilot.contracts.ToolSpec`): MCP's ``read_only``, ``destructive``,
    ``idempotent`` and ``open_world``; the ``effect``; for record tools the ``id_arg`` and
    ``name_arg``; for setting tools the ``setting`` key. The harness's policies read these, never
    the name. What is left out follows from the effect (``ToolSpec``'s one table of defaults):
    ``read_only`` is ``effect == "read"``; a ``delete`` is destructive; only a read and a
    ``setting`` are idempotent, so a default-declared send, purchase or create is never resent
    after a dropped connection. Declare ``idempotent=True`` on an update that only assigns
    values, ``destructive=False`` on a delete the user can undo.

    ``effect_by_arg`` is for a tool that reads or writes by an argument:
    ``@tool(effect="setting", setting="talkback", effect_by_arg={"action": {"query": "read"}})``
    makes ``talkback(action="query")`` a read to every policy, the verifier and the journal,
    while ``action="enable"`` keeps the declared setting semantics. A value may map to a bare
    effect or to a ToolEffect's fields (``{"effect": "delete", "destructive": False}``).

    ``fixable_errors`` names the error codes of the tool, beyond the generic ones, whose message
    says how to fix the call (``@tool(fixable_errors=["unsupported_unit"])``): a refusal right
    after one is sent back once, as after an ``invalid_arguments``. ``artifact_fields`` names the
    result fields a confirmed sub-agent hands on (``["id", "*_id"]``), ``name_fields`` the record
    fields that name a record (``["title"]``) and ``id_field`` the record field that is its id
    (``"id"``): a tool that declares none gets none of what they serve.

    Raise :class:`~pocketpilot.errors.ToolFailure` inside the body to report a failure with a
    code; a ``ValueError``/``TypeError``/``LookupError`` becomes ``invalid_arguments``; any other
    exception becomes ``tool_error`` with its type and message. ``classify`` turns a returned
    value the world means as a failure into one. ``concurrent`` says whether its calls may run
    at the same time as others (default: what its registry, the world, declares).

    Raises:
        ToolDefinitionError: the declared semantics contradict each other or the signature
            (a read-only delete, an ``id_arg`` that is not a parameter, an ``effect_by_arg``
            naming an argument or a value the signature does not have, an ``id_field`` that
            is a pattern or one of the ``name_fields``, or no effect).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(
            f, name=name, description=description, destructive=destructive, idempotent=idempotent,
            read_only=read_only, open_world=open_world, effect=effect, id_arg=id_arg, name_arg=name_arg,
            setting=setting, effect_by_arg=effect_by_arg, fixable_errors=fixable_errors,
            artifact_fields=artifact_fields, name_fields=name_fields, id_field=id_field, concurrent=concurrent,
            classify=classify,
        )

    return wrap(fn) if fn is not None else wrap


class ToolRegistry:
    """Named tools with routing and result normalization; an :class:`Executor` on its own."""

    def __init__(self, tools: Iterable[Tool] = (), *, concurrent: bool = False) -> None:
        """``concurrent``: whether this world's calls may run at the same time (a batch's calls
        otherwise run one after another, in the batch's order). A world that is not
        thread-safe, which is most, must not see two calls at once; a tool may override.
        """
        self._tools: dict[str, Tool] = {}
        self.concurrent = concurrent
        self._serial = _PerLoopLock()
        for t in tools:
            self.add(t)

    @classmethod
    def from_object(cls, obj: object, *, concurrent: bool = False) -> ToolRegistry:
        """Collect every ``@tool`` method of ``obj``, bound to it (``concurrent``: see ``__init__``)."""
        names: dict[str, None] = {}  # definition order, subclasses may override
        for klass in reversed(type(obj).__mro__):
            for attr, value in vars(klass).items():
                if isinstance(value, Tool):
                    names[attr] = None
        return cls((getattr(obj, attr) for attr in names), concurrent=concurrent)

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
        sub = ToolRegistry((self._tools[n] for n in names if n in self._tools), concurrent=self.concurrent)
        sub._serial = self._serial  # one world: its calls are serialized together
        return sub

    async def call(self, call: ToolCall) -> ToolResult:
        """Route one call; an unknown name is a tool failure the planner sees, not an exception."""
        t = self._tools.get(call.name)
        if t is None:
            return ToolResult.failure(
                "unknown_tool", f"no tool named {call.name!r}; available: {', '.join(self._tools)}"
            )
        if t.concurrent if t.concurrent is not None else self.concurrent:
            result = await t.invoke(call.arguments)
        else:
            async with self._serial.get():
                result = await t.invoke(call.arguments)
        logger.debug("tool %s -> ok=%s", call.name, result.ok)
        return result


ToolFunction = Callable[..., Any | Awaitable[Any]]


class _PerLoopLock:
    """An asyncio lock per event loop (a registry outlives ``asyncio.run`` calls; a lock does not)."""

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    def get(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()  # FIFO: a batch's calls keep their order
        return lock


@functools.lru_cache(maxsize=1024)
def _check_schema(canonical: str) -> None:
    """Check a parameters schema against the metaschema, once per distinct schema.

    The check costs milliseconds (the metaschema is walked through its references) and a world
    that is rebuilt per task (an outside suite's fresh instances) builds the same tools again
    and again; a schema that fails raises, and failures are not cached.
    """
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(json.loads(canonical))


class _SchemaTool(Tool):
    """A tool whose arguments are described by a JSON schema instead of a Python signature."""

    def __init__(self, name: str, parameters: dict[str, Any], handler: Callable[..., Any], *,
                 description: str = "", **semantics: Any) -> None:
        import jsonschema

        if not callable(handler):
            raise ToolDefinitionError(f"tool {name!r}: the handler {handler!r} is not callable")
        schema = dict(parameters or {"type": "object", "properties": {}})
        schema.setdefault("type", "object")
        if schema.get("type") != "object":
            raise ToolDefinitionError(f"tool {name!r}: parameters must describe an object, not {schema.get('type')!r}")
        try:
            try:
                canonical = json.dumps(schema, sort_keys=True)
            except (TypeError, ValueError):  # not plain JSON: checked as it is, uncached
                jsonschema.Draft202012Validator.check_schema(schema)
            else:
                _check_schema(canonical)
        except jsonschema.SchemaError as exc:
            raise ToolDefinitionError(f"tool {name!r}: invalid parameters schema: {exc.message}") from exc
        self._validator = jsonschema.Draft202012Validator(schema)
        self.fn = handler
        self.name = name
        self.description = description
        self.concurrent = semantics.pop("concurrent", None)
        self.classify = semantics.pop("classify", None)
        self.args_model = None  # type: ignore[assignment]
        self._bound = None
        unknown = set(semantics) - {"destructive", "idempotent", "read_only", "open_world", "effect", "id_arg",
                                    "name_arg", "setting", "effect_by_arg", "fixable_errors",
                                    "artifact_fields", "name_fields", "id_field"}
        if unknown:
            raise ToolDefinitionError(f"tool {name!r}: unknown semantics {sorted(unknown)}")
        self._declare(schema, **semantics)

    async def invoke(self, arguments: dict[str, Any]) -> ToolResult:
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            where = ".".join(str(p) for p in errors[0].path) or "(arguments)"
            return ToolResult.failure("invalid_arguments", f"{self.name}: {where}: {errors[0].message}")
        return await self._run(dict(arguments))
