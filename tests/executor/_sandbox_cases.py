"""Table-driven checks of sandbox tools: one success or failure case per row.

Every case runs on a fresh default phone. A success must return ok and pass its check; a tool
that declares itself read-only must then have changed nothing, and one that declares itself
idempotent must leave the world exactly as it was after the first call when called again. A
failure must carry its code and leave the world untouched (a purchase that fails charges nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pocketpilot.contracts import ToolCall, ToolResult
from pocketpilot.executor.sandbox import PhoneState, SandboxExecutor, SandboxPhone

Check = Callable[[Any, PhoneState], bool]
Setup = Callable[[PhoneState], None]


@dataclass(frozen=True)
class Ok:
    tool: str
    args: dict[str, Any]
    check: Check
    setup: Setup | None = None

    def __str__(self) -> str:
        return f"{self.tool}({', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


@dataclass(frozen=True)
class Fails:
    tool: str
    args: dict[str, Any]
    code: str
    setup: Setup | None = None
    message: str = field(default="")
    """A fragment the error message must contain (what a planner needs to recover)."""

    def __str__(self) -> str:
        return f"{self.tool}-{self.code}({', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


async def call(ex: SandboxExecutor, tool: str, /, **arguments: Any) -> ToolResult:
    return await ex.call(ToolCall(name=tool, arguments=arguments))


def fresh(setup: Setup | None = None) -> tuple[SandboxPhone, SandboxExecutor]:
    phone = SandboxPhone(seed=0)
    if setup is not None:
        setup(phone.state)
    return phone, SandboxExecutor(phone)


async def check_ok(case: Ok) -> None:
    phone, ex = fresh(case.setup)
    spec = phone.registry()[case.tool].spec
    before = phone.snapshot()
    result = await call(ex, case.tool, **case.args)
    assert result.ok, result.error
    assert case.check(result.data, phone.state), result.data
    if spec.read_only:
        assert phone.state == before, phone.changes_since(before)
        return
    assert phone.state != before, f"{case.tool} declares effect {spec.effect} but changed nothing"
    if spec.idempotent:
        once = phone.snapshot()
        await call(ex, case.tool, **case.args)  # may fail (already deleted): the world must not move
        assert phone.state == once, phone.changes_since(once)


async def check_fails(case: Fails) -> None:
    phone, ex = fresh(case.setup)
    before = phone.snapshot()
    result = await call(ex, case.tool, **case.args)
    assert not result.ok, result.data
    assert result.error is not None and result.error.code == case.code, result.error
    assert case.message.lower() in result.error.message.lower(), result.error.message
    assert phone.state == before, phone.changes_since(before)


def assert_covers(app: str, cases: list[Ok]) -> None:
    """Every tool of ``app`` has at least one success case."""
    assert {c.tool for c in cases} == set(SandboxPhone().tool_names(app))
