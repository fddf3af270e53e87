"""BFCL multi-turn (base category) as a pocketpilot world: tools, tasks and BFCL's own verifier.

Everything BFCL-specific is read from the bfcl-eval wheel at run time (tasks, function docs,
ground truth, the stateful API classes and ``multi_turn_checker``); nothing of BFCL's data is
committed here. What this adapter adds is what a world plugging into pocketpilot must say
itself: the JSON schema of each function in the form the executor validates, and each
function's semantics, declared in ``bfcl_semantics.json`` beside this module (the world's own
declaration, as an MCP server's tool annotations are; nothing is inferred from names).

Fidelity to BFCL, and where it differs:

- A task's worlds are its ``involved_classes``, instantiated and loaded with
  ``_load_scenario(deepcopy(initial_config[cls]), long_context=False)`` (stateless classes are
  not loaded), exactly as ``multi_turn_utils.execute_multi_turn_func_call`` does. The model's
  worlds and the ground truth's worlds are separate instances that persist across turns.
- After each turn with ground-truth calls, BFCL's own ``state_checker`` and
  ``response_checker`` (imported from the wheel) compare the worlds and the execution results,
  and an empty model turn fails as BFCL's "empty_turn_model_response" does. A turn without
  ground truth is not checked (BFCL's base category runs no irrelevance check), though the
  model's calls in it still change its worlds.
- Execution results are rendered as BFCL renders them (a string as is, a dict as
  ``json.dumps``, anything else ``str``, an exception as ``Error during execution: ...``).
  A call whose arguments fail the JSON schema never reaches the world here; BFCL would have
  run it (Python checks no types). Such a call changes nothing in either case except when a
  wrongly typed value would have worked, which only a model run can hit.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..contracts import ToolCall, ToolError
from ..executor.tools import Tool, ToolRegistry
from .errors import SuiteDataError
from .wheel import BfclWheel

__all__ = [
    "CATEGORY",
    "BfclSuite",
    "BfclTask",
    "BfclWorld",
    "FunctionDoc",
    "FunctionSemantics",
    "TurnCheck",
    "bfcl_result_text",
    "classify_result",
    "load_semantics",
    "parse_call",
    "to_json_schema",
]

CATEGORY = "multi_turn_base"
_TASKS = f"data/BFCL_v4_{CATEGORY}.json"
_ANSWERS = f"data/possible_answer/BFCL_v4_{CATEGORY}.json"
_DOCS = "data/multi_turn_func_doc/"
_CONFIG = "bfcl_eval.constants.executable_backend_config"
_CHECKER = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"

_TYPES = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
    "any": "string",
}
"""BFCL's type names to JSON schema's: the subset of its ``GORILLA_TO_OPENAPI`` map the
multi-turn docs use (``any`` becomes ``string`` there too)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BfclTask(_Frozen):
    """One multi-turn task: the user's turns, the worlds' initial state, the ground truth."""

    id: str
    turns: list[str] = Field(min_length=1)
    """Each turn's user message (a turn's several user messages joined by blank lines)."""
    initial_config: dict[str, Any]
    involved_classes: list[str] = Field(min_length=1)
    ground_truth: list[list[str]]
    """Per turn, the calls as BFCL writes them (``cd(folder='document')``); may be empty."""


class FunctionDoc(_Frozen):
    """One function as BFCL documents it, with the JSON schema the executor validates against."""

    name: str
    class_name: str
    description: str
    parameters: dict[str, Any]


Effect = Literal["read", "create", "update", "delete", "setting", "send", "purchase", "navigate"]


class FunctionSemantics(_Frozen):
    """The declared semantics of one function (ToolSpec's vocabulary; see ``bfcl_semantics.json``)."""

    effect: Effect
    destructive: bool = False
    idempotent: bool | None = None
    open_world: bool = False
    id_arg: str | None = None
    name_arg: str | None = None
    setting: str | None = None

    def tool_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`Tool.from_schema` (``read_only`` follows the effect)."""
        return self.model_dump(exclude_none=True)


class TurnCheck(_Frozen):
    """BFCL's judgement of one turn."""

    turn: int
    checked: bool
    """False for a turn without ground-truth calls (nothing to compare, as in BFCL)."""
    valid: bool
    error_type: str | None = None
    error_message: str | None = None
    details: str | None = None
    """The differences BFCL reported, as text (capped: world states can be large)."""


def to_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A BFCL parameter schema (``"type": "dict"``, ``"float"``, ``"default": "None"``) as JSON schema.

    Types map as BFCL maps them for OpenAI-style tools. A default of the string ``"None"`` is
    BFCL's spelling of Python's None and is dropped (the function's own default applies when
    the argument is left out). Objects with declared properties accept no others: a Python
    signature rejects an unknown keyword too.
    """
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            out["type"] = _TYPES.get(str(value), "string")
        elif key == "properties":
            out["properties"] = {k: to_json_schema(v) for k, v in value.items()}
        elif key == "items":
            out["items"] = to_json_schema(value) if isinstance(value, dict) else value
        elif key == "default" and value == "None":
            continue
        else:
            out[key] = copy.deepcopy(value)
    if "type" not in out:
        out["type"] = "string"
    if out["type"] == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def bfcl_result_text(value: Any) -> str:
    """An execution result as BFCL's ``execute_multi_turn_func_call`` records it.

    BFCL's response check compares these strings, so they must match its rendering exactly.
    """
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def classify_result(value: Any) -> ToolError | None:
    """BFCL's worlds report failures as ``{"error": ...}`` return values, not exceptions."""
    if isinstance(value, dict) and "error" in value:
        return ToolError(code="world_error", message=str(value["error"]))
    return None


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """A ground-truth call string (``mv(source='a', destination='b')``) as (name, args, kwargs).

    Parsed with ``ast`` and ``literal_eval``, never ``eval``: the ground truth holds literals only.

    Raises:
        SuiteDataError: not a single call of a plain name with literal arguments.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError("not a call of a plain name")
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
        if len(kwargs) != len(node.keywords):
            raise ValueError("**kwargs in a ground-truth call")
    except (SyntaxError, ValueError) as exc:
        raise SuiteDataError(f"ground-truth call {text!r}: {exc}") from exc
    return node.func.id, args, kwargs


def _json_safe(value: Any) -> Any:
    """A returned value the trace can hold: the math world returns mpmath numbers (floats to JSON)."""
    return json.loads(json.dumps(value, default=lambda o: float(o) if hasattr(o, "__float__") else str(o)))


@contextlib.contextmanager
def _importable(root: Path) -> Iterator[None]:
    """The extracted ``bfcl_eval`` on ``sys.path`` only while its modules are imported."""
    entry = str(root)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def load_semantics() -> dict[str, FunctionSemantics]:
    """The declared semantics of every BFCL multi-turn function, by function name."""
    raw = json.loads(resources.files(__package__).joinpath("bfcl_semantics.json").read_text("utf-8"))
    out: dict[str, FunctionSemantics] = {}
    for class_name, functions in raw["classes"].items():
        for name, spec in functions.items():
            try:
                out[name] = FunctionSemantics.model_validate(spec)
            except ValidationError as exc:
                raise SuiteDataError(f"bfcl_semantics.json: {class_name}.{name}: {exc}") from exc
    return out


class BfclSuite:
    """The base category of one bfcl-eval wheel: tasks, function docs, semantics, worlds."""

    def __init__(self, wheel: BfclWheel) -> None:
        self.wheel = wheel
        root = wheel.source_root()
        self._root = root
        with _importable(root):
            self._config = importlib.import_module(_CONFIG)
            self.checker = importlib.import_module(_CHECKER)
            """BFCL's ``multi_turn_checker`` (its ``state_checker`` and ``response_checker`` judge turns)."""
        self.semantics = load_semantics()

    @classmethod
    def fetch(cls, cache: Path | None = None, *, download: bool = True) -> BfclSuite:
        """The suite of the cached (or freshly downloaded) wheel."""
        return cls(BfclWheel.fetch(cache, download=download))

    @cached_property
    def tasks(self) -> list[BfclTask]:
        """Every task of the category, in the wheel's order, with its ground truth."""
        answers = {a["id"]: a["ground_truth"] for a in self.wheel.jsonl(_ANSWERS)}
        out = []
        for entry in self.wheel.jsonl(_TASKS):
            try:
                turns = [
                    "\n\n".join(m["content"] for m in turn if m.get("role") == "user")
                    for turn in entry["question"]
                ]
                out.append(
                    BfclTask(
                        id=entry["id"],
                        turns=turns,
                        initial_config=entry.get("initial_config") or {},
                        involved_classes=entry["involved_classes"],
                        ground_truth=answers[entry["id"]],
                    )
                )
            except (KeyError, ValidationError) as exc:
                raise SuiteDataError(f"{_TASKS}: entry {entry.get('id')!r}: {exc}") from exc
            if len(out[-1].ground_truth) != len(out[-1].turns):
                raise SuiteDataError(
                    f"{entry['id']}: {len(turns)} turns but {len(out[-1].ground_truth)} answer turns"
                )
        return out

    def select(self, ids: Sequence[str] | None = None, limit: int | None = None) -> list[BfclTask]:
        """Tasks by id (in the given order) or the first ``limit``."""
        if ids:
            by_id = {t.id: t for t in self.tasks}
            missing = [i for i in ids if i not in by_id]
            if missing:
                raise SuiteDataError(f"no such task(s): {', '.join(missing)}")
            chosen = [by_id[i] for i in ids]
        else:
            chosen = list(self.tasks)
        return chosen[:limit] if limit is not None else chosen

    @cached_property
    def docs(self) -> dict[str, list[FunctionDoc]]:
        """Function docs per class, schemas converted to JSON schema."""
        out: dict[str, list[FunctionDoc]] = {}
        for class_name, file_name in self._config.MULTI_TURN_FUNC_DOC_FILE_MAPPING.items():
            if class_name not in self.classes_in_category:
                continue
            out[class_name] = [
                FunctionDoc(
                    name=d["name"],
                    class_name=class_name,
                    description=d.get("description", ""),
                    parameters=to_json_schema(d.get("parameters") or {"type": "dict", "properties": {}}),
                )
                for d in self.wheel.jsonl(_DOCS + file_name)
            ]
        return out

    @cached_property
    def classes_in_category(self) -> frozenset[str]:
        """The classes the category's tasks involve (the memory and web-search worlds are not among them)."""
        return frozenset(c for t in self.tasks for c in t.involved_classes)

    def world_class(self, class_name: str) -> type:
        """The stateful API class ``class_name``, imported from the extracted wheel."""
        try:
            module_name = self._config.CLASS_FILE_PATH_MAPPING[class_name]
        except KeyError as exc:
            raise SuiteDataError(f"unknown BFCL class {class_name!r}") from exc
        with _importable(self._root):
            module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
        if not isinstance(cls, type):
            raise SuiteDataError(f"{module_name}.{class_name} is not a class")
        return cls

    def world(self, task: BfclTask) -> BfclWorld:
        """Fresh instances of the task's classes, loaded with its initial state."""
        return BfclWorld(self, task)

    def is_stateless(self, class_name: str) -> bool:
        """Classes BFCL never loads a scenario into."""
        return class_name in self._config.STATELESS_CLASSES


class BfclWorld:
    """One run's instances of a task's classes, their tools, and what was executed on them.

    The model's calls reach the instances through :attr:`registry` (serial: the classes are not
    thread-safe); the ground truth's calls go through :meth:`execute` as BFCL's evaluator makes
    them. Either way :attr:`results` collects the BFCL-rendered result of every executed call.
    """

    def __init__(self, suite: BfclSuite, task: BfclTask) -> None:
        self.task = task
        self.instances: dict[str, Any] = {}
        for class_name in task.involved_classes:
            instance = suite.world_class(class_name)()
            if not suite.is_stateless(class_name):
                instance._load_scenario(
                    copy.deepcopy(task.initial_config.get(class_name, {})), long_context=False
                )
            self.instances[class_name] = instance
        self.results: list[str] = []
        self._suite = suite
        self._methods: dict[str, Callable[..., Any]] = {}
        self._docs: list[FunctionDoc] = []
        for class_name in task.involved_classes:
            for doc in suite.docs[class_name]:
                if doc.name in self._methods:
                    raise SuiteDataError(f"{task.id}: function {doc.name!r} in two classes")
                method = getattr(self.instances[class_name], doc.name, None)
                if method is None:
                    raise SuiteDataError(f"{class_name} has no method {doc.name!r} (documented)")
                self._methods[doc.name] = method
                self._docs.append(doc)

    @cached_property
    def registry(self) -> ToolRegistry:
        """The world's functions as tools, serial (the classes are not thread-safe).

        Built on first use: the ground truth's worlds never need tools.
        """
        tools = []
        for doc in self._docs:
            semantics = self._suite.semantics.get(doc.name)
            if semantics is None:
                raise SuiteDataError(f"bfcl_semantics.json declares nothing for {doc.class_name}.{doc.name}")
            tools.append(
                Tool.from_schema(
                    doc.name,
                    doc.parameters,
                    self._handler(doc.name),
                    description=doc.description,
                    classify=classify_result,
                    **semantics.tool_kwargs(),
                )
            )
        return ToolRegistry(tools, concurrent=False)

    def _handler(self, name: str) -> Callable[..., Any]:
        def handler(**kwargs: Any) -> Any:
            return _json_safe(self._call(name, [], kwargs))

        handler.__name__ = name
        return handler

    def _call(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        try:
            value = self._methods[name](*args, **kwargs)
        except Exception as exc:
            self.results.append(f"Error during execution: {exc}")
            raise
        self.results.append(bfcl_result_text(value))
        return value

    def execute(self, call: str) -> str:
        """Run one ground-truth call string directly, as BFCL's evaluator does; its rendered result."""
        name, args, kwargs = parse_call(call)
        if name not in self._methods:
            text = f"Error during execution: name '{name}' is not defined"
            self.results.append(text)
            return text
        try:
            self._call(name, args, kwargs)
        except Exception:  # noqa: BLE001, S110 - recorded as BFCL records it, like its eval() loop
            pass
        return self.results[-1]

    def tool_call(self, call: str) -> ToolCall:
        """A ground-truth call string as the ToolCall a planner would emit (positional args named)."""
        name, args, kwargs = parse_call(call)
        method = self._methods.get(name)
        if method is None:
            raise SuiteDataError(f"{self.task.id}: ground truth calls unknown function {name!r}")
        if args:
            params = [
                p
                for p in inspect.signature(method).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            kwargs = {**{p.name: a for p, a in zip(params, args, strict=False)}, **kwargs}
        return ToolCall(name=name, arguments=json.loads(json.dumps(kwargs)))


class TurnJudge:
    """Judges the model's worlds against the ground truth's, turn by turn, with BFCL's checker.

    The ground truth runs on worlds of its own, one turn at a time, as BFCL's evaluator runs it.
    """

    def __init__(self, suite: BfclSuite, task: BfclTask, model: BfclWorld) -> None:
        self.suite = suite
        self.task = task
        self.model = model
        self.truth = BfclWorld(suite, task)
        self.checks: dict[int, TurnCheck] = {}
        self._ran = 0

    def judge(self, turn: int, model_calls: int) -> TurnCheck:
        """BFCL's verdict on ``turn`` after the model made ``model_calls`` calls in it (cached per turn)."""
        if turn in self.checks:
            return self.checks[turn]
        if turn != self._ran:
            raise SuiteDataError(
                f"{self.task.id}: turns are judged in order (asked {turn}, next {self._ran})"
            )
        truth_calls = self.task.ground_truth[turn]
        truth_results = [self.truth.execute(c) for c in truth_calls]
        self._ran += 1
        if not truth_calls:
            check = TurnCheck(turn=turn, checked=False, valid=True)
        elif model_calls == 0:
            check = TurnCheck(
                turn=turn,
                checked=True,
                valid=False,
                error_type="multi_turn:empty_turn_model_response",
                error_message=f"Model response list is empty for turn {turn}",
            )
        else:
            check = self._compare(turn, truth_results)
        self.checks[turn] = check
        return check

    def _compare(self, turn: int, truth_results: list[str]) -> TurnCheck:
        state = self.suite.checker.state_checker(self.model.instances, self.truth.instances)
        if not state["valid"]:
            return self._failed(turn, state, state.get("details", {}).get("differences"))
        response = self.suite.checker.response_checker(list(self.model.results), truth_results, turn)
        if not response["valid"]:
            return self._failed(turn, response, response.get("details", {}).get("missing_items"))
        return TurnCheck(turn=turn, checked=True, valid=True)

    @staticmethod
    def _failed(turn: int, result: dict[str, Any], details: Any) -> TurnCheck:
        return TurnCheck(
            turn=turn,
            checked=True,
            valid=False,
            error_type=result.get("error_type"),
            error_message=result.get("error_message"),
            details=repr(details)[:2000],
        )
