"""The one contract: action → feedback → verification.

Every part of the SDK speaks these pydantic models. The Action union is both the schema the
planner's decoding grammar is generated from and the type its output is validated into, so
prompt, grammar and parser cannot drift apart.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    TypeAdapter,
    field_validator,
    model_serializer,
    model_validator,
)

__all__ = [
    "ACTION_ADAPTER",
    "ACTION_KINDS",
    "CONFIRM_EFFECTS",
    "DESTRUCTIVE_EFFECTS",
    "IDEMPOTENT_EFFECTS",
    "Action",
    "AskUser",
    "ChatMessage",
    "CriterionResult",
    "DecodePhase",
    "Delegate",
    "Effect",
    "Episode",
    "EpisodeHeader",
    "EvalSettings",
    "Finish",
    "LoadSkill",
    "MemorySearch",
    "MemoryWrite",
    "Notice",
    "PlannerInfo",
    "PlannerTurn",
    "Refuse",
    "RetrievedMemory",
    "SamplerSettings",
    "Step",
    "StopReason",
    "ToolCall",
    "ToolCallAction",
    "ToolEffect",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "Verdict",
    "digest",
    "spec_for_call",
    "utcnow",
]

MAX_BATCH = 4
"""Most independent calls one tool_call step may hold (a parallel batch)."""


def utcnow() -> datetime:
    """Timezone-aware now, the only clock the contract records."""
    return datetime.now(UTC)


class _Contract(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- tools


Effect = Literal["read", "create", "update", "delete", "setting", "send", "purchase", "navigate"]
"""What a tool call does to the user's world, as its tool declares it (never guessed from a name)."""

CONFIRM_EFFECTS: frozenset[str] = frozenset({"send", "delete", "purchase"})
"""Effects that need the user's confirmation even when the tool does not call itself destructive."""

_SEMANTICS = (
    "read_only", "destructive", "idempotent", "open_world", "effect", "id_arg", "name_arg", "setting",
)

_DECLARED_ONLY = ("effect_by_arg", "fixable_errors", "artifact_fields", "name_fields", "id_field")
"""ToolSpec fields a dump, an export and η carry only when a tool declares them."""

IDEMPOTENT_EFFECTS: frozenset[str] = frozenset({"read", "setting"})
"""Effects a repeat of which has, by their nature, no further effect: the idempotent default.

- ``read``: it changes nothing, so neither does a second one.
- ``setting``: the call carries the value it sets (wifi on, brightness 40); a second one finds
  that value already set. A toggle that carries no value declares ``idempotent=False``.
- ``navigate``: not idempotent; moves are relative (back, scroll), a repeat goes one further.
- ``update``: not idempotent; an update may append, increment or move (MCP's
  ``idempotentHint`` default). One that only assigns the values it carries declares ``True``.
- ``create``, ``send``, ``purchase``: not idempotent; a repeat is a second record, message or
  payment. This is what the adb journal keys on: it resends only idempotent calls after a
  dropped connection, so a wrong default here sends a message twice.
- ``delete``: not idempotent; a delete by position or query takes another record the second time.
- undeclared: not idempotent unless read-only (MCP's default).

A destructive tool is not idempotent unless it says so: a repeat of what cannot be undone is
not assumed harmless."""

DESTRUCTIVE_EFFECTS: frozenset[str] = frozenset({"delete"})
"""Effects destructive by default: a deleted record is gone. A delete the user can undo (to a
trash) declares ``destructive=False``. Sends and purchases are confirmed by their effect
(``CONFIRM_EFFECTS``) without being declared destructive; an undeclared effect is not destructive
here (the MCP importer applies MCP's own default, destructive, itself)."""

_DEFAULTED = ("read_only", "destructive", "idempotent")


_BOOL: TypeAdapter[bool] = TypeAdapter(bool)


def _flag(value: Any) -> bool | None:
    """A declared boolean as pydantic reads it (None: not a boolean; validation will say so)."""
    try:
        return _BOOL.validate_python(value)
    except ValueError:
        return None


def _semantics_before(data: Any) -> Any:
    """Fill what the declaration leaves out from its effect: the one table of defaults.

    Every route to a ToolSpec or a ToolEffect (``@tool``, ``Tool.from_schema``, a dict, a YAML
    file, an OpenAI export, a world's tools) comes through here, so they agree. What is
    declared, ``True``, ``False``, wins; ``None`` means not declared. ``read_only`` defaults
    to ``effect == "read"``, ``destructive`` to an effect in ``DESTRUCTIVE_EFFECTS``,
    ``idempotent`` to read-only, or an effect in ``IDEMPOTENT_EFFECTS`` on a tool that is not
    destructive.
    """
    if not isinstance(data, dict):
        return data
    data = {k: v for k, v in data.items() if not (k in _DEFAULTED and v is None)}
    effect = data.get("effect")
    read_only = _flag(data.setdefault("read_only", effect == "read"))
    destructive = _flag(data.setdefault("destructive", effect in DESTRUCTIVE_EFFECTS and not read_only))
    data.setdefault("idempotent", bool(read_only) or (effect in IDEMPOTENT_EFFECTS and not destructive))
    by_arg = data.get("effect_by_arg")
    if isinstance(by_arg, dict):
        # a bare effect is shorthand for {"effect": ...}; the tool's open_world holds unless stated
        world = data.get("open_world", False)
        data["effect_by_arg"] = {
            arg: {value: _by_value(eff, world) for value, eff in values.items()}
            if isinstance(values, dict) else values
            for arg, values in by_arg.items()
        }
    return data


def _by_value(effect: Any, open_world: Any) -> Any:
    if isinstance(effect, str):
        effect = {"effect": effect}
    if isinstance(effect, dict) and "open_world" not in effect:
        effect = {**effect, "open_world": open_world}
    return effect


def _arg_key(value: Any) -> str:
    """How an argument's value is looked up in ``effect_by_arg`` (JSON for what is not a string)."""
    return value if isinstance(value, str) else json.dumps(value)


def _arg_values(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> set[str] | None:
    """The values an argument's schema allows, as ``effect_by_arg`` keys (None: any value)."""
    if depth > 8 or not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _arg_values(defs.get(ref.removeprefix("#/$defs/"), {}), defs, depth + 1)
    if "enum" in schema:
        return {_arg_key(v) for v in schema["enum"]}
    if "const" in schema:
        return {_arg_key(schema["const"])}
    if schema.get("type") == "boolean":
        return {"true", "false"}
    if schema.get("type") == "null":
        return {"null"}
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list):
        allowed: set[str] = set()
        for branch in branches:
            values = _arg_values(branch, defs, depth + 1)
            if values is None:
                return None
            allowed |= values
        return allowed
    return None


def _check_semantics(read_only: bool, destructive: bool, effect: str | None) -> None:
    if read_only and destructive:
        raise ValueError("a read-only tool cannot be destructive")
    if read_only and effect not in (None, "read"):
        raise ValueError(f"a read-only tool cannot have effect {effect!r}")
    if effect == "read" and not read_only:
        raise ValueError("effect 'read' means read_only")


def _needs_confirmation(destructive: bool, effect: str | None) -> bool:
    return destructive or effect in CONFIRM_EFFECTS


def _effect_label(destructive: bool, effect: str | None) -> str:
    if effect in CONFIRM_EFFECTS:
        return str(effect)
    return "destructive" if destructive else str(effect or "undeclared")


class ToolSpec(_Contract):
    """A tool the planner may call: name, description, JSON schema of its arguments, and its
    declared semantics.

    The semantics are MCP's tool annotations (``readOnlyHint``, ``destructiveHint``,
    ``idempotentHint``, ``openWorldHint``) plus the effect and the record/setting arguments the
    harness's policies key on: policies read these fields, never the tool's name, so a tool set
    that names its tools differently is guarded the same way.
    """

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    world: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    """The world the tool belongs to, as the world that builds it declares it (``sandbox`` for
    the sandbox phone's tools); None: undeclared (a plain registry, an MCP server). Skills and
    η notes written for a world apply only to tools that declare it: a tool of another world
    that happens to share a name is a different tool, and a team that wants a world's skills
    for its own tools declares that world here."""
    destructive: bool = False
    """Changes something the user cannot undo (power off, send a message, delete): gated by
    the confirmation policy (MCP ``destructiveHint``)."""
    result_schema: dict[str, Any] | None = None
    read_only: bool = False
    """Changes nothing in its environment (MCP ``readOnlyHint``)."""
    idempotent: bool = False
    """A repeat with the same arguments has no further effect (MCP ``idempotentHint``): the adb
    action journal resends only these after a dropped connection."""
    open_world: bool = False
    """Reaches beyond the device's own state: other people, networks, shops (MCP ``openWorldHint``)."""
    effect: Effect | None = None
    """What a call does; None: not declared (a tap's effect depends on what it hits, so the
    executor classifies each call, see ``ToolEffect``)."""
    id_arg: str | None = None
    """For a record tool: the argument that holds the record's id (``note_id``)."""
    name_arg: str | None = None
    """For a record tool: the argument that holds the record's human name (``title``)."""
    setting: str | None = None
    """For a setting tool (effect ``setting``): the setting's key (``wifi``)."""
    effect_by_arg: dict[str, dict[str, ToolEffect]] = Field(default_factory=dict)
    """For a tool that reads or writes by an argument (``talkback(action=query|enable)``): one
    argument's values, each with the semantics a call with that value has
    (``{"action": {"query": "read", "enable": "setting"}}``; a bare effect takes its defaults
    and the tool's ``open_world``). A call with a value not listed has the tool's declared
    semantics, so declare the tool as its strictest value. Every consumer reads a call's
    semantics through :meth:`for_arguments` (:func:`spec_for_call`), as it reads a tap's
    classified effect."""
    fixable_errors: list[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]] = Field(
        default_factory=list)
    """Error codes of this tool, beyond the generic ones (``invalid_arguments``, ``not_found``,
    ``precondition_failed``), whose message says how to go on (``unsupported_unit``: the
    converter names the pairs it has, a skill the route around it). A refusal right after one
    is sent back once (the ``send_back`` policy); a code a tool does not declare is not."""
    artifact_fields: list[str] = Field(default_factory=list)
    """Top-level fields of its results that name a product or a handle a later step passes on
    (``id``, ``file``; an ``fnmatch`` pattern such as ``*_id`` for a family of them): a
    confirmed sub-agent hands these on to its parent. A tool that declares none hands on none,
    whatever its fields are called."""
    name_fields: list[str] = Field(default_factory=list)
    """Fields of the records its results hold that name a record for a person (``name``,
    ``title``), in the order a name is preferred: a later call that passes such a record's id
    where a name belongs is told the name (the ``id_for_name`` policy). A tool that declares
    none gives its records no names."""
    id_field: str | None = None
    """The field of the records its results hold that is a record's id (``id``, ``note_id``):
    what makes a dict in a result (the result itself, or an item of a listing) a record a later
    call may refer to. Its records are named by ``name_fields``; a tool that declares no id field
    returns no records to the ``id_for_name`` policy, whatever its fields are called. One field,
    not a pattern, and not one of its ``name_fields`` (an id that is a record's name is no mix-up)."""

    @model_validator(mode="before")
    @classmethod
    def _read_only_by_effect(cls, data: Any) -> Any:
        return _semantics_before(data)

    @model_validator(mode="after")
    def _consistent(self) -> ToolSpec:
        _check_semantics(self.read_only, self.destructive, self.effect)
        props = self.parameters.get("properties") or {}
        for field in ("id_arg", "name_arg"):
            arg = getattr(self, field)
            if arg is not None and arg not in props:
                raise ValueError(f"{field} {arg!r} is not a parameter of {self.name}")
        if self.setting is not None and self.effect != "setting":
            raise ValueError("only a tool with effect 'setting' has a setting key")
        self._check_id_field()
        self._check_effect_by_arg(props)
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave out what a tool does not declare of ``_DECLARED_ONLY``: a trace or export of
        a tool without them reads byte for byte as before the fields existed.
        """
        data = handler(self)
        if isinstance(data, dict):
            for field in _DECLARED_ONLY:
                if not getattr(self, field):
                    data.pop(field, None)
        return data

    def _check_id_field(self) -> None:
        field = self.id_field
        if field is None:
            return
        if not field.strip() or field != field.strip() or len(field) > 64:
            raise ValueError(f"id_field {field!r} is not a field's name (1 to 64 characters, no surrounding space)")
        if any(c in field for c in "*?[]"):
            raise ValueError(f"id_field {field!r} is one field's name, not a pattern")
        if field in self.name_fields:
            raise ValueError(f"id_field {field!r} is also one of name_fields: a record's id is not its name")

    def _check_effect_by_arg(self, props: dict[str, Any]) -> None:
        if len(self.effect_by_arg) > 1:
            raise ValueError(f"effect_by_arg maps the values of one argument, not {len(self.effect_by_arg)} "
                             f"({', '.join(map(repr, self.effect_by_arg))})")
        for arg, by_value in self.effect_by_arg.items():
            if arg not in props:
                raise ValueError(f"effect_by_arg: {arg!r} is not a parameter of {self.name}")
            if not by_value:
                raise ValueError(f"effect_by_arg: no value of {arg!r} is mapped")
            allowed = _arg_values(props[arg], self.parameters.get("$defs") or {})
            for value, effect in by_value.items():
                if allowed is not None and value not in allowed:
                    raise ValueError(f"effect_by_arg: {value!r} is not a value of {arg!r} "
                                     f"(one of {', '.join(map(repr, sorted(allowed)))})")
                if self.read_only and not effect.read_only:
                    raise ValueError(f"effect_by_arg: a read-only tool cannot have {arg}={value!r} "
                                     f"do {effect.effect or 'a change'}")

    @property
    def changes_state(self) -> bool:
        """Whether a call may change the world: everything not declared read-only.

        The one reading of the declaration that the handoff review, the verifier and the loop
        guard share; each decides for itself what an unknown tool (no spec) counts as.
        """
        return not self.read_only

    @property
    def needs_confirmation(self) -> bool:
        """Destructive, or an effect the user must approve (send, delete, purchase)."""
        return _needs_confirmation(self.destructive, self.effect)

    def effect_label(self) -> str:
        """How a confirmation prompt names what a call does: its effect, or "destructive"."""
        return _effect_label(self.destructive, self.effect)

    def semantics(self) -> dict[str, Any]:
        """The declared semantics as a plain dict (the ``x-pocketpilot`` extension of an export).

        ``effect_by_arg``, ``fixable_errors``, ``artifact_fields``, ``name_fields`` and
        ``id_field`` are there only when declared: a tool without them exports (and hashes into
        η) as it did before the fields existed.
        """
        out = {k: getattr(self, k) for k in _SEMANTICS}
        for field in _DECLARED_ONLY[1:]:
            value = getattr(self, field)
            if value:
                out[field] = list(value) if isinstance(value, list) else value
        if self.effect_by_arg:
            out["effect_by_arg"] = {
                arg: {value: e.model_dump(mode="json", exclude={"detail"}) for value, e in m.items()}
                for arg, m in self.effect_by_arg.items()
            }
        return out

    def with_effect(self, effect: ToolEffect) -> ToolSpec:
        """This spec with one call's classified semantics in place of the declared ones.

        The setting key stays only on a call that is a setting change (a ``query`` of a
        setting tool changes no setting), and ``effect_by_arg`` goes: the call's semantics are
        settled, and the copy is a consistent spec (one that validates again).
        """
        update = effect.model_dump(exclude={"detail"})
        update["effect_by_arg"] = {}
        if effect.effect != "setting":
            update["setting"] = None
        return self.model_copy(update=update)

    def for_arguments(self, arguments: Mapping[str, Any]) -> ToolSpec:
        """The semantics of a call with ``arguments``: the declared ones, or those its
        ``effect_by_arg`` maps the argument's value (or the schema's default for it) to.
        """
        for arg, by_value in self.effect_by_arg.items():
            if arg in arguments:
                value = arguments[arg]
            else:
                schema = (self.parameters.get("properties") or {}).get(arg) or {}
                if "default" not in schema:
                    continue
                value = schema["default"]
            try:
                effect = by_value.get(_arg_key(value))
            except (TypeError, ValueError):  # not JSON: no mapped value can match it
                effect = None
            if effect is not None:
                return self.with_effect(effect)
        return self

    def to_openai(self) -> dict[str, Any]:
        """Export in the OpenAI ``tools=[...]`` format; the semantics (and the declared ``world``,
        if any) ride in the ``x-pocketpilot`` key.
        """
        function: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        extra = self.semantics() | ({"world": self.world} if self.world is not None else {})
        return {"type": "function", "function": function, "x-pocketpilot": extra}

    @classmethod
    def from_openai(cls, tool: dict[str, Any]) -> ToolSpec:
        """Import one entry of an OpenAI ``tools`` list (or a bare function object).

        Raises:
            ValueError: no function name, or an ``x-pocketpilot`` extension that is not an
                object or declares inconsistent semantics.
        """
        function = tool.get("function", tool)
        if "name" not in function:
            raise ValueError("OpenAI tool has no function name")
        extra = tool.get("x-pocketpilot") or {}
        if not isinstance(extra, dict):
            raise ValueError("x-pocketpilot must be an object")
        return cls(
            name=function["name"],
            description=function.get("description", ""),
            parameters=function.get("parameters") or {"type": "object", "properties": {}},
            **{k: extra[k] for k in (*_SEMANTICS, *_DECLARED_ONLY, "world") if k in extra},
        )


class ToolEffect(_Contract):
    """What one call would do, classified by the executor before it runs.

    A tap's tool declares no effect: on a device it is what the tapped element triggers (a tap
    on "Send" is a send). The harness confirms by this classification, so no route through
    another tool or the UI reaches a send the declared tool would have had confirmed.
    """

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    effect: Effect | None = None
    detail: str = ""
    """What the classification saw (``tap on "Send SMS" #send_message_button_icon``)."""

    @model_validator(mode="before")
    @classmethod
    def _read_only_by_effect(cls, data: Any) -> Any:
        return _semantics_before(data)

    @model_validator(mode="after")
    def _consistent(self) -> ToolEffect:
        _check_semantics(self.read_only, self.destructive, self.effect)
        return self

    @property
    def needs_confirmation(self) -> bool:
        """Destructive, or an effect the user must approve (send, delete, purchase)."""
        return _needs_confirmation(self.destructive, self.effect)

    def effect_label(self) -> str:
        """How a confirmation prompt names what the call does."""
        return _effect_label(self.destructive, self.effect)

    @classmethod
    def declared(cls, spec: ToolSpec) -> ToolEffect:
        """The semantics ``spec`` declares, as a classification."""
        return cls(read_only=spec.read_only, destructive=spec.destructive, idempotent=spec.idempotent,
                   open_world=spec.open_world, effect=spec.effect)


ToolSpec.model_rebuild()


class ToolError(_Contract):
    """Why a tool call failed, in the shape real tools report it."""

    code: str
    message: str


class ToolResult(_Contract):
    """Normalized feedback of one tool call: ``{ok, data, error: {code, message}}``."""

    ok: bool
    data: Any = None
    error: ToolError | None = None
    simulated: bool = False
    """True when the response came from the LLM-simulated backend, not a real app."""

    @classmethod
    def success(cls, data: Any = None) -> ToolResult:
        """A successful result carrying ``data``."""
        return cls(ok=True, data=data)

    @classmethod
    def failure(cls, code: str, message: str, data: Any = None) -> ToolResult:
        """A failed result with an error code and a human-readable message."""
        return cls(ok=False, data=data, error=ToolError(code=code, message=message))


# --------------------------------------------------------------------------- actions


class ToolCall(_Contract):
    """One typed call of an exposed tool."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def key(self) -> str:
        """Canonical identity of the call (name + sorted arguments), for repeat detection."""
        return f"{self.name}:{json.dumps(self.arguments, sort_keys=True, default=str)}"


def spec_for_call(specs: Mapping[str, ToolSpec], call: ToolCall) -> ToolSpec | None:
    """The semantics ``call`` has: its tool's spec, by the value of the argument that selects
    its effect (``effect_by_arg``); None when ``specs`` has no such tool.

    The one reading every consumer of a call's semantics shares (the policies, the verifier,
    the handoff review, the journal), so a ``query`` of a setting tool is a read to all of them.
    """
    spec = specs.get(call.name)
    return None if spec is None else spec.for_arguments(call.arguments)


class ToolCallAction(_Contract):
    """Call one tool, or several independent ones that run as one parallel batch."""

    kind: Literal["tool_call"] = "tool_call"
    calls: list[ToolCall] = Field(min_length=1, max_length=MAX_BATCH)


class MemorySearch(_Contract):
    """Search memory; the hits come back as evidence, never as instructions."""

    kind: Literal["memory_search"] = "memory_search"
    query: str = Field(min_length=1, max_length=200)
    tier: Literal["user", "episodic", "long_term", "prospective"] | None = None
    k: int = Field(default=5, ge=1, le=20)


class MemoryWrite(_Contract):
    """Write a memory candidate; it becomes authoritative only after verification."""

    kind: Literal["memory_write"] = "memory_write"
    content: str = Field(min_length=1, max_length=500)
    tier: Literal["user", "episodic", "long_term", "prospective"] = "episodic"
    category: str | None = Field(default=None, max_length=40)


class LoadSkill(_Contract):
    """Load a skill: its procedure and tools stay exposed for the rest of the session."""

    kind: Literal["load_skill"] = "load_skill"
    name: str = Field(min_length=1, max_length=64)


class Delegate(_Contract):
    """Start a sub-agent with its own instruction and tools, and wait for its confirmed result."""

    kind: Literal["delegate"] = "delegate"
    instruction: str = Field(min_length=1, max_length=500)
    tools: list[str] = Field(default_factory=list, max_length=16)
    artifacts: dict[str, str] = Field(default_factory=dict)
    """File names, ids and other values the child needs, passed explicitly."""


class AskUser(_Contract):
    """Ask the user for missing information instead of guessing."""

    kind: Literal["ask_user"] = "ask_user"
    question: str = Field(min_length=1, max_length=300)


class Refuse(_Contract):
    """Decline an unsafe or impossible request."""

    kind: Literal["refuse"] = "refuse"
    reason: str = Field(min_length=1, max_length=300)


class Finish(_Contract):
    """Claim completion, or answer the user's question; the task verifier decides whether it holds."""

    kind: Literal["finish"] = "finish"
    summary: str = Field(min_length=1, max_length=400)
    answer: str | None = Field(default=None, min_length=1, max_length=400)
    """The answer to a question the request asked (offered when the harness's answer path is on):
    a request about the past is done when it is answered, not only when a tool confirms it."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave ``answer`` out when there is none: a finish without one dumps as before the field."""
        data = handler(self)
        if isinstance(data, dict) and data.get("answer", "") is None:
            data.pop("answer")
        return data

    @property
    def said(self) -> str:
        """Everything the finish says to the user: the answer, then the summary."""
        return f"{self.answer}\n{self.summary}" if self.answer else self.summary


Action = Annotated[
    ToolCallAction | MemorySearch | MemoryWrite | LoadSkill | Delegate | AskUser | Refuse | Finish,
    Field(discriminator="kind"),
]
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
ACTION_KINDS: tuple[str, ...] = (
    "tool_call",
    "memory_search",
    "memory_write",
    "load_skill",
    "delegate",
    "ask_user",
    "refuse",
    "finish",
)


# --------------------------------------------------------------------------- planner records


class SamplerSettings(_Contract):
    """Decoding settings, recorded per step as the behaviour policy's metadata."""

    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int = Field(default=40, ge=0)
    min_p: float = Field(default=0.0, ge=0.0, le=1.0)
    repeat_penalty: float = Field(default=1.0, gt=0.0)
    max_tokens: int = Field(default=256, ge=1)
    seed: int = 0


class EvalSettings(_Contract):
    """What a local model's greedy output depends on besides the prompt and the weights.

    Logits differ in the last bits with the batch a token was evaluated in and, on some
    kernels, with the thread count; near a tie that flips a greedy choice. Recorded so two
    runs can be compared, and so a run can be reproduced with the same settings.
    """

    n_ctx: int
    n_threads: int
    n_batch: int
    n_ubatch: int
    llama_cpp_version: str | None = None
    constraint: Literal["gbnf", "llguidance"] = "gbnf"
    """Which engine held decoding to the action grammar."""
    fast_forward: bool = False
    """Grammar-forced tokens evaluated as one batch instead of sampled one at a time."""
    reproducible: bool = False
    """Only the stable prefix is reused from the KV cache; the rest of every prompt is
    evaluated in batches aligned to multiples of ``n_batch`` (its last token alone), so the
    evaluation order depends on the prompt alone, not on what happened to be cached."""
    repack: bool = False
    """The weights were interleaved at load for llama.cpp's repacked K-quant kernels."""
    batch_invariant: bool = False
    """Small batches (fast-forward's) take the one-token kernels: their logits are bit-identical."""
    flash_attn: bool = False
    """llama.cpp's flash attention kernels (another summation order than the default's)."""
    kv_type: str = "f16"
    """The KV cache's element type (K and V): ``f16``, or a quantized ``q8_0``/``q4_0``."""
    think_tokens: int = 0
    """Think, then act: the most tokens of reasoning before the action (0: none)."""
    choose_then_fill: bool = False
    """A tool call decoded in two phases: the tools first, then their arguments."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave the decoding options out while off: settings without them dump as before they existed."""
        return _without_defaults(handler(self), _EVAL_OPTIONS)


class PlannerInfo(_Contract):
    """Which policy produced the actions: backend, model file, hash, quantization, sampler."""

    backend: str
    model: str
    model_sha256: str | None = None
    quant_type: str | None = None
    sampler: SamplerSettings = Field(default_factory=SamplerSettings)
    adapter: str | None = None
    """A LoRA adapter applied on top of the model, if any."""
    output_mode: str | None = None
    """How decoding was held to the action schema: ``grammar`` (in-process llama.cpp), or the
    structured-output mode an OpenAI-compatible server was found to honour (``json_schema``,
    ``json_object_schema``, ``tool_choice``, ``json_object``, ``prompt``)."""
    eval: EvalSettings | None = None
    """In-process backends: the evaluation settings greedy decoding depends on."""


class DecodePhase(_Contract):
    """One constrained decode of a turn decoded in phases (think, then act; choose, then fill)."""

    name: Literal["thought", "choice", "fill", "action"]
    tokens: int = 0
    """Tokens this phase produced (a delimiter the planner inserted before it not counted)."""
    passes: int = 0
    """Model passes, an inserted delimiter's included."""
    decode_s: float = 0.0
    finish: str = "stop"


class PlannerTurn(_Contract):
    """What one planner call produced, beyond the action itself."""

    raw: str
    prefix_tokens: int = 0
    """Where the prompt was split: the stable prefix evaluated (or restored) on its own first."""
    prefix: Literal["none", "warm", "restored", "evaluated"] = "none"
    """How the prefix got into the KV cache this call (``restored``: from the disk cache)."""
    prefix_s: float = 0.0
    """Seconds spent restoring or evaluating the prefix."""
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    """Prompt tokens actually run through the model (the rest came from the KV cache)."""
    kv_reused: int = 0
    """Prompt tokens kept from the live KV cache (neither restored nor evaluated this call)."""
    eval_splits: list[int] = Field(default_factory=list)
    """Positions where each batch of this call's prompt evaluation began (the prefix's
    batches, then the rest's; the last prompt token is always its own pass). With
    ``prefix_tokens`` and ``kv_reused`` this is the evaluation order greedy output depends on."""
    completion_tokens: int = 0
    forced_tokens: int = 0
    """Completion tokens the grammar forced and that were evaluated as a batch (fast-forward)."""
    forced_rejected: int = 0
    """Forced tokens dropped because greedy decoding would have split those bytes differently."""
    decode_passes: int = 0
    """Model passes spent decoding (a forced batch is one)."""
    decode_s: float = 0.0
    """Seconds decoding, from the last prompt token's pass to the end of the action."""
    constraint_s: float = 0.0
    """Seconds of that in the constraint engine choosing valid tokens (llguidance only)."""
    token_ids: list[int] = Field(default_factory=list)
    token_logprobs: list[float] = Field(default_factory=list)
    finish_reason: str = "stop"
    latency_s: float = 0.0
    thought: str | None = None
    """The planner's short reasoning before its action (think, then act), when it wrote one."""
    phases: list[DecodePhase] = Field(default_factory=list)
    """The decodes of a turn decoded in phases, in order (empty: one decode of the whole action)."""
    memo: bool = False
    """Served from the decode memo (:mod:`pocketpilot.harness.planners.decode_memo`), not decoded:
    ``latency_s`` is the lookup's and the seconds and evaluation counts are zero; the output and
    its tokens are the stored decode's. Latency figures must leave such turns out."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave ``thought``, ``phases`` and ``memo`` out when unset: a decoded one-decode turn dumps as before they existed."""
        return _without_defaults(handler(self), _TURN_PHASES)


_EVAL_OPTIONS = {"flash_attn": False, "kv_type": "f16", "think_tokens": 0, "choose_then_fill": False}
_TURN_PHASES: dict[str, Any] = {"thought": None, "phases": [], "memo": False}


def _without_defaults(data: Any, defaults: Mapping[str, Any]) -> Any:
    """``data`` (a model's dump) without the listed fields where they hold their default."""
    if isinstance(data, dict):
        for name, default in defaults.items():
            if name in data and data[name] == default:
                del data[name]
    return data


# --------------------------------------------------------------------------- episodes


class RetrievedMemory(_Contract):
    """A memory shown to the planner as evidence, with where it came from."""

    id: str
    tier: str
    content: str
    score: float
    provenance: dict[str, Any] = Field(default_factory=dict)


StopReason = Literal[
    "finish",
    "ask_user",
    "refuse",
    "max_steps",
    "max_tokens",
    "max_seconds",
    "planner_error",
    "cancelled",
    "device_lost",
    "denied",
]


class Notice(str):
    """A message the harness tells the planner with a step: its text, who said it and a stable code.

    The planner reads only the text, so a notice is that text (a ``str``: feedback, exports
    and every reader of words stay as they were); the policy and the code are what programs
    read, so rewording a notice never changes what a reader attributes to it. A trace written
    before notices carried fields holds plain strings: they read as notices with neither.
    """

    policy: str
    code: str

    def __new__(cls, text: str, *, policy: str = "", code: str = "") -> Notice:
        """The notice ``text``, said by ``policy`` under ``code`` (both empty for an old trace's string)."""
        self = super().__new__(cls, text)
        self.policy, self.code = policy, code
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_notice, (str(self), self.policy, self.code))

    @property
    def text(self) -> str:
        """The words the planner read."""
        return str(self)

    def __repr__(self) -> str:
        return f"Notice({str(self)!r}, policy={self.policy!r}, code={self.code!r})"

    @classmethod
    def of(cls, text: str, *, policy: str, code: str) -> Notice:
        """``text`` with its speaker and code; a notice that already names its policy keeps both."""
        if isinstance(text, Notice) and text.policy:
            return text
        return cls(text, policy=policy, code=code)

    @classmethod
    def _validate(cls, value: Any) -> Notice:
        if isinstance(value, Notice):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping) and isinstance(value.get("text"), str):
            return cls(value["text"], policy=str(value.get("policy") or ""), code=str(value.get("code") or ""))
        raise ValueError("a notice is a string or an object with text, policy and code")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            cls._validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda n: {"policy": getattr(n, "policy", ""), "code": getattr(n, "code", ""), "text": str(n)}),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> dict[str, Any]:
        return {"anyOf": [{"type": "string"},
                          {"type": "object", "required": ["text"],
                           "properties": {"policy": {"type": "string"}, "code": {"type": "string"},
                                          "text": {"type": "string"}}}]}


def _notice(text: str, policy: str, code: str) -> Notice:
    return Notice(text, policy=policy, code=code)


class Step(_Contract):
    """One planner decision and everything the environment answered."""

    index: int = Field(ge=0)
    context_digest: str
    """sha256 of the assembled prompt messages: two steps saw the same context iff equal."""
    action: Action | None = None
    """None when the planner's output could not be parsed (see ``error``)."""
    results: list[ToolResult] = Field(default_factory=list)
    """One per call of a tool_call action, in call order; the observation of other actions."""
    planner: PlannerTurn | None = None
    retrieved: list[RetrievedMemory] = Field(default_factory=list)
    notices: list[Notice] = Field(default_factory=list)
    """Harness messages fed back with the results (repeated-failure warnings, denials), each
    with the policy that said it and a stable code; a plain string reads as a notice."""
    error: ToolError | None = None
    """A step-level error: unparseable output, an action the harness rejected."""
    started_at: datetime = Field(default_factory=utcnow)
    duration_s: float = 0.0
    children: list[Episode] = Field(default_factory=list)
    """Episodes of sub-agents started by a delegate action, nested in the parent's trace."""
    system_prompt: str | None = None
    """The system message this step's context began with, recorded on the first planner step
    and again whenever it changed (a loaded skill); None: the same as the step before. Kept
    verbatim because re-rendering it later (another version's rules, another guidance filter)
    would export a prompt the planner never saw."""
    tools_added: list[ToolSpec] = Field(default_factory=list)
    """Tools this step's context exposed beyond the header's and earlier steps' (a loaded
    skill's), so every tool a later step calls has its spec in the trace."""
    interventions: list[str] = Field(default_factory=list)
    """Names of the harness policies whose outcome changed something in this step (a hold, a
    rewrite, a stop, a notice, advice, a stop action sent back), each once, in the order they
    acted. Under greedy decoding a policy absent from every step of a run could not have changed
    it: what the policy ablation (``bench/bench_ablation.py``) reruns on. Empty in traces older
    than the field."""


class CriterionResult(_Contract):
    """One completion criterion and whether the evidence met it."""

    name: str
    passed: bool
    detail: str = ""
    kind: str | None = None
    """The criterion's kind (``state``, ``call``, ``check``, ...) for readers that group results;
    None in traces older than this field and for verdicts no task criterion produced."""
    tool: str | None = None
    """The tool a ``call`` or ``no_call`` criterion is about: what readers (the failure
    diagnosis) attribute to, instead of parsing the criterion's name or detail."""
    missing: bool = False
    """True when the criterion failed because its tool was never called at all."""


class Verdict(_Contract):
    """The task verifier's judgement of an episode."""

    success: bool
    criteria: list[CriterionResult] = Field(default_factory=list)

    @property
    def progress(self) -> float:
        """Share of criteria met (the verified progress CARE shapes rewards with)."""
        if not self.criteria:
            return 1.0 if self.success else 0.0
        return sum(c.passed for c in self.criteria) / len(self.criteria)


class EpisodeHeader(_Contract):
    """Every version and hash needed to reproduce or train on an episode."""

    episode_id: str
    request: str
    task_id: str | None = None
    planner: PlannerInfo
    harness_config: dict[str, Any] = Field(default_factory=dict)
    eta_version: str | None = None
    """Content hash of the Scenario Adapter's harness configuration η the run used."""
    skills: list[str] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    kinds: list[str] = Field(default_factory=list)
    """The action kinds offered to the planner (empty in traces older than this field)."""
    preamble: list[dict[str, str]] = Field(default_factory=list)
    """Messages (role, content) the context held between the system message and the request:
    earlier conversation, recalled evidence. Fixed for the run, so recorded once."""
    pocketpilot_version: str = ""
    started_at: datetime = Field(default_factory=utcnow)
    parent_episode_id: str | None = None
    memory_retrieval: str | None = None
    """How memory was searched: ``hybrid (<embedder>)`` or ``keyword-only``; None without memory."""
    policies: list[dict[str, Any]] = Field(default_factory=list)
    """The harness policies in force, in order, with their parameters (``[{"name", "params"}]``)."""
    turn: int = 0
    """Which request of a conversation this run answered (0: the first or only one)."""
    recalled: list[RetrievedMemory] = Field(default_factory=list)
    """Memories the session recalled for the request before its first step, with provenance
    (shown in the preamble's evidence; empty when nothing was recalled)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave ``recalled`` out when empty: a header without recall reads as before the field."""
        data = handler(self)
        if isinstance(data, dict) and data.get("recalled", None) == []:
            data.pop("recalled")
        return data

    @field_validator("episode_id")
    @classmethod
    def _nonempty(cls, value: str) -> str:
        if not value:
            raise ValueError("episode_id must not be empty")
        return value


class Episode(_Contract):
    """One run: header, steps, why it stopped, and the verdict."""

    header: EpisodeHeader
    steps: list[Step] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    stop_detail: str = ""
    verdict: Verdict | None = None
    ended_at: datetime | None = None

    @property
    def final_action(self) -> Action | None:
        """The last parsed action, if any (finish, ask_user, refuse, ...)."""
        for step in reversed(self.steps):
            if step.action is not None:
                return step.action
        return None

    def tool_calls(self) -> list[tuple[int, ToolCall, ToolResult | None]]:
        """Every tool call in order as (step index, call, result)."""
        out: list[tuple[int, ToolCall, ToolResult | None]] = []
        for step in self.steps:
            if isinstance(step.action, ToolCallAction):
                for i, call in enumerate(step.action.calls):
                    out.append((step.index, call, step.results[i] if i < len(step.results) else None))
        return out

    def usage(self) -> dict[str, int]:
        """Token totals over the planner turns of this episode (children excluded)."""
        turns = [s.planner for s in self.steps if s.planner is not None]
        return {
            "prompt_tokens": sum(t.prompt_tokens for t in turns),
            "prompt_tokens_evaluated": sum(t.prompt_tokens_evaluated for t in turns),
            "completion_tokens": sum(t.completion_tokens for t in turns),
        }



class ChatMessage(BaseModel):
    """One message of the assembled context (OpenAI-style roles).

    A contract, not a harness detail: tasks seed earlier conversation with it, planners read
    it, and the trace's preamble records it.
    """

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    section: str = "history"
    """Which budgeted section of the context the message belongs to."""
    step: Step | None = Field(default=None, exclude=True)
    """On the two history messages of a step (its action, its feedback): the recorded step, so
    a backend with a structured chat format (OpenAI ``tool_calls``) can rebuild the turn from
    the parsed action and the per-call results. Excluded from dumps: context digests and
    text-only prompts see role and content alone."""


Step.model_rebuild()
ChatMessage.model_rebuild()


def digest(obj: Any) -> str:
    """sha256 of a JSON-serializable object in canonical form."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(data).hexdigest()
