"""Renamed names keep working for users, and nothing inside the package uses them any more.

Issue 33 renamed what a newcomer would confuse with the harness's ``Session`` or its policies:
``evaluation.task_session`` → ``evaluation.task_episode`` (``run_task_session`` →
``run_task_episode``), ``memory.session.SessionMemory`` → ``memory.bound.BoundMemory``,
``VerifyPolicy`` → ``VerifyRules`` (and ``SqliteMemory(verify_policy=)`` → ``verify_rules=``).
The old names are aliases of the very same objects; the old modules warn when imported.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

import pocketpilot
from pocketpilot import memory
from pocketpilot.errors import PocketPilotError
from pocketpilot.evaluation import task_episode
from pocketpilot.memory import bound, verify

ROOT = Path(pocketpilot.__file__).parent
OLD_MODULES = {"pocketpilot.evaluation.task_session": "evaluation/task_session.py",
               "pocketpilot.memory.session": "memory/session.py"}
OLD_NAMES = {"run_task_session", "SessionMemory", "VerifyPolicy"}


def _fresh(module: str) -> object:
    """Import ``module`` anew, so its deprecation warning fires in this test whatever ran before."""
    sys.modules.pop(module, None)
    with pytest.warns(DeprecationWarning, match=module.replace(".", r"\.")):
        return importlib.import_module(module)


def test_the_old_task_session_module_is_the_task_episode_module() -> None:
    old = _fresh("pocketpilot.evaluation.task_session")
    assert old.run_task_session is task_episode.run_task_episode  # type: ignore[attr-defined]
    for name in set(old.__all__) - {"run_task_session"}:  # type: ignore[attr-defined]
        assert getattr(old, name) is getattr(task_episode, name), name


def test_the_old_session_memory_is_bound_memory() -> None:
    old = _fresh("pocketpilot.memory.session")
    assert old.SessionMemory is old.BoundMemory is bound.BoundMemory is memory.BoundMemory  # type: ignore[attr-defined]
    assert old.run_off_loop is bound.run_off_loop  # type: ignore[attr-defined]
    assert memory.SessionMemory is memory.BoundMemory


def test_the_old_verify_policy_is_verify_rules() -> None:
    assert memory.VerifyPolicy is verify.VerifyPolicy is verify.VerifyRules is memory.VerifyRules


def test_the_old_verify_policy_keyword_still_opens_a_store() -> None:
    rules = memory.VerifyRules(max_age=memory.VerifyRules().max_age * 2)
    access = memory.AccessPolicy("s" * 16, "a" * 16)
    with pytest.warns(DeprecationWarning, match="verify_rules"):
        store = memory.SqliteMemory(":memory:", access, verify_policy=rules)
    with store:
        assert store._rules is rules
    with pytest.raises(PocketPilotError, match="old name of verify_rules"):
        memory.SqliteMemory(":memory:", access, verify_rules=rules, verify_policy=rules)


def _old_uses(source: str, package: str) -> list[str]:
    """The old modules and old names ``source`` imports (relative imports resolved against ``package``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name in OLD_MODULES]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            for alias in node.names:
                out += [m for m in (module, f"{module}.{alias.name}") if m in OLD_MODULES]
                out += [alias.name] if alias.name in OLD_NAMES else []
    return out


def test_nothing_in_the_package_imports_an_old_path_or_name() -> None:
    shims = {ROOT / p for p in OLD_MODULES.values()}
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in sorted(ROOT.rglob("*.py"))
        if path not in shims
        and (found := _old_uses(path.read_text(encoding="utf-8"),
                                ".".join(("pocketpilot", *path.relative_to(ROOT).parent.parts))))
    }
    assert offenders == {}


def test_the_check_sees_old_imports() -> None:
    source = (
        "from .task_session import HarnessKit\n"
        "from ..memory import session\n"
        "import pocketpilot.memory.session\n"
        "from ..memory import SessionMemory, VerifyPolicy\n"
        "from .task_episode import run_task_episode\n"
    )
    assert _old_uses(source, "pocketpilot.evaluation") == [
        "pocketpilot.evaluation.task_session", "pocketpilot.memory.session", "pocketpilot.memory.session",
        "SessionMemory", "VerifyPolicy",
    ]
