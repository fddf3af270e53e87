"""Every error pocketpilot raises on purpose.

The tree (one root, typed subclasses; a builtin base where the meaning matches)::

    PocketPilotError
    ├── UsageError (ValueError)            misuse of the API or CLI by the caller
    │   ├── BackendUnavailableError        an optional backend (ray) that is not installed
    │   └── FolderLockedError              a folder another process is working in (an evolve run's state)
    ├── ContractError (ValueError)         data that does not fit the contract
    │   ├── TaskSpecError                  an invalid task file
    │   │   └── WorldError                 a task's world that does not build (import, state, tools)
    │   └── TemplateError                  an invalid task template (generator input)
    ├── ModelStoreError                    provisioning GGUF planners
    │   ├── UnknownModelError (KeyError)
    │   ├── ModelIntegrityError            sha256 mismatch, truncated or corrupt file
    │   └── ModelNotInstalledError (FileNotFoundError)
    ├── PlannerError                       a planner backend failed
    │   ├── PlannerOutputError             output that does not parse as an Action
    │   └── PlannerBackendError            the backend itself failed (server down, load failure)
    ├── ExecutorError                      the executor could not run a call at all
    │   ├── DeviceError
    │   │   ├── DeviceOfflineError (ConnectionError)
    │   │   ├── DeviceUnauthorizedError (PermissionError)
    │   │   ├── UnknownDeviceError (LookupError)
    │   │   └── DeviceTimeout (TimeoutError)
    │   └── ToolDefinitionError (TypeError) a function that cannot become a tool
    ├── MemoryStoreError                   the memory store failed
    │   ├── MemoryAccessError (PermissionError)
    │   ├── MemoryNotFoundError (KeyError)
    │   └── MemorySchemaError
    └── TraceError                         a trace file that cannot be read

Tool failures the planner should see (a conflict, a bad argument) are *not* exceptions
that cross the harness: they travel as ``ToolResult(ok=False, error=...)``. Inside a tool
body, raise :class:`ToolFailure` to produce one.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "ContractError",
    "DeviceError",
    "DeviceOfflineError",
    "DeviceTimeout",
    "DeviceUnauthorizedError",
    "ExecutorError",
    "FolderLockedError",
    "MemoryAccessError",
    "MemoryNotFoundError",
    "MemorySchemaError",
    "MemoryStoreError",
    "ModelIntegrityError",
    "ModelNotInstalledError",
    "ModelStoreError",
    "PlannerBackendError",
    "PlannerError",
    "PlannerOutputError",
    "PocketPilotError",
    "TaskSpecError",
    "TemplateError",
    "ToolDefinitionError",
    "ToolFailure",
    "TraceError",
    "UnknownDeviceError",
    "UnknownModelError",
    "UsageError",
    "WorldError",
]


class PocketPilotError(Exception):
    """Base for every error pocketpilot raises on purpose."""


class UsageError(PocketPilotError, ValueError):
    """The caller used the API or the CLI in a way it does not support."""


class BackendUnavailableError(UsageError):
    """An optional backend was asked for but its package is not installed."""

    def __init__(self, backend: str, install: str) -> None:
        super().__init__(f"the {backend} backend is not available: {install}")
        self.backend, self.install = backend, install


class FolderLockedError(UsageError):
    """Another live process holds the folder's lock: two writers would interleave its files."""

    def __init__(self, path: str, pid: int | None) -> None:
        holder = f"pid {pid}" if pid else "another process"
        super().__init__(f"{path} is in use by {holder}; wait for it to finish, or use another folder")
        self.path, self.pid = path, pid


class ContractError(PocketPilotError, ValueError):
    """Data does not fit the action/feedback/verification contract."""


class TaskSpecError(ContractError):
    """A task file is invalid (bad YAML/JSON, unknown tool, bad criterion)."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"invalid task {source}: {reason}")
        self.source, self.reason = source, reason


class TemplateError(ContractError):
    """A task template (or its pools) is invalid: the generator refuses it before drawing anything."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"invalid template {source}: {reason}")
        self.source, self.reason = source, reason


class WorldError(TaskSpecError):
    """A task's world does not build: a module that does not import, a state model that rejects
    the initial state, a tool whose declared semantics do not fit its signature.
    """


class ModelStoreError(PocketPilotError):
    """Provisioning a GGUF planner failed."""


class UnknownModelError(ModelStoreError, KeyError):
    """A model name that is neither in the catalogue nor an existing GGUF path."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown model {name!r}; known: {', '.join(known)} (or a path to a .gguf file)")
        self.name, self.known = name, known

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class ModelIntegrityError(ModelStoreError):
    """A model file whose sha256 or header does not match what was expected."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


class ModelNotInstalledError(ModelStoreError, FileNotFoundError):
    """A catalogue model that has not been pulled yet."""

    def __init__(self, name: str) -> None:
        super().__init__(f"model {name!r} is not installed; run `pocketpilot models pull {name}`")
        self.name = name


class PlannerError(PocketPilotError):
    """A planner backend failed to produce an action."""


class PlannerOutputError(PlannerError):
    """The planner's raw output does not parse as an Action."""

    def __init__(self, raw: str, reason: str, turn: object | None = None) -> None:
        super().__init__(f"planner output rejected: {reason}")
        self.raw, self.reason = raw, reason
        self.turn = turn
        """The PlannerTurn that produced ``raw`` (tokens, timing), when the backend has one."""


class PlannerBackendError(PlannerError):
    """The backend itself failed (model failed to load, server unreachable)."""


class ExecutorError(PocketPilotError):
    """The executor could not run a call at all (as opposed to a tool reporting failure)."""


class ToolDefinitionError(ExecutorError, TypeError):
    """A Python callable that cannot be turned into a typed tool."""


class DeviceError(ExecutorError):
    """A device could not be reached or driven."""

    def __init__(self, serial: str, message: str) -> None:
        super().__init__(f"{serial}: {message}")
        self.serial = serial


class DeviceOfflineError(DeviceError, ConnectionError):
    """The device dropped or is offline."""


class DeviceUnauthorizedError(DeviceError, PermissionError):
    """The device has not authorized this host's adb key."""


class UnknownDeviceError(DeviceError, LookupError):
    """No device with that serial is known to the adb server."""


class DeviceTimeout(DeviceError, TimeoutError):
    """The device did not answer in time."""


class MemoryStoreError(PocketPilotError):
    """The memory store failed."""


class MemoryAccessError(MemoryStoreError, PermissionError):
    """The caller may not read or write that memory."""


class MemoryNotFoundError(MemoryStoreError, KeyError):
    """No memory item with that id (visible to the caller)."""


class MemorySchemaError(MemoryStoreError):
    """The store file has a schema this version cannot migrate."""


class TraceError(PocketPilotError):
    """A trace file cannot be read."""


class ToolFailure(PocketPilotError):
    """Raised inside a tool body to report a failure the planner should see.

    The registry turns it into ``ToolResult(ok=False, error=ToolError(code, message))``;
    it never crosses the harness as an exception.
    """

    def __init__(self, code: str, message: str, data: object = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data
