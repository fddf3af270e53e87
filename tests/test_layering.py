"""Dependencies flow toward the contract: executor, memory, skills and tasks never import the harness."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pocketpilot

ROOT = Path(pocketpilot.__file__).parent
LOWER = ("executor", "memory", "skills", "tasks")


def _package(path: Path) -> str:
    return ".".join(("pocketpilot", *path.relative_to(ROOT).parent.parts))


def _imports(path: Path, package: str) -> list[str]:
    """Absolute module names a file imports (relative imports resolved against ``package``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                out.append(".".join([*base, node.module] if node.module else base))
            else:
                out.append(node.module or "")
    return out


@pytest.mark.parametrize("package", LOWER)
def test_lower_packages_do_not_import_the_harness(package: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name in _imports(path, _package(path))
        if name == "pocketpilot.harness" or name.startswith("pocketpilot.harness.")
    ]
    assert offenders == []


def test_the_check_sees_a_relative_harness_import(tmp_path: Path) -> None:
    fake = tmp_path / "probe.py"
    fake.write_text("from ...harness import Session\nfrom ..tools import tool\n", encoding="utf-8")
    names = _imports(fake, "pocketpilot.executor.simulated")
    assert names == ["pocketpilot.harness", "pocketpilot.executor.tools"]


# ---------------------------------------------------------------- the import graph
# Every import counts: module level, inside a function, and under ``if TYPE_CHECKING``. An import
# hidden in a function still couples the two modules; it only moves the failure to run time.


def _module(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _edges(path: Path, modules: dict[str, Path], root: Path = ROOT) -> set[str]:
    """The package's modules ``path`` imports: ``from pkg import mod`` names the module, not ``pkg``."""
    me = _module(path, root)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            out.update(f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names)
    return {m for m in out if m in modules and m != me}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _graph_within(package: str, modules: dict[str, Path]) -> dict[str, set[str]]:
    inside = {m: p for m, p in modules.items() if m == package or m.startswith(package + ".")}
    return {m: _edges(p, modules) & set(inside) for m, p in inside.items()}


# KNOWN, to be emptied by issue 33 item 2 (the run core as data, and a policy registry adapters can
# name without the harness): whoever breaks one of these cycles removes its entry here. The test
# fails on a new cycle, and on an entry that no longer exists (so the list only shrinks).
KNOWN_CYCLES = {
    "pocketpilot.harness": [],
    "pocketpilot.adapters": [],
}


@pytest.mark.parametrize("package", sorted(KNOWN_CYCLES))
def test_no_import_cycle_inside_the_package(package: str) -> None:
    assert _cycles(_graph_within(package, MODULES)) == KNOWN_CYCLES[package]


# adapters → harness: none; the adapters name policies through pocketpilot.policy_registry, where
# the harness registers them (issue 33 item 2). An arrow up, function-level included, fails here.
KNOWN_UPWARD: set[tuple[str, str]] = set()
LAYERS_BELOW_THE_HARNESS = (*LOWER, "adapters")


def _upward(modules: dict[str, Path]) -> set[tuple[str, str]]:
    return {
        (m, target)
        for m, p in modules.items()
        if m.split(".")[1:2] and m.split(".")[1] in LAYERS_BELOW_THE_HARNESS
        for target in _edges(p, modules)
        if target == "pocketpilot.harness" or target.startswith("pocketpilot.harness.")
    }


def test_no_arrow_from_a_lower_layer_up_to_the_harness() -> None:
    assert _upward(MODULES) == KNOWN_UPWARD


def test_the_graph_sees_function_level_and_type_only_imports_and_names_a_cycle(tmp_path: Path) -> None:
    root = tmp_path / "pocketpilot"
    (root / "harness").mkdir(parents=True)
    (root / "executor").mkdir()
    for name in ("__init__.py", "harness/__init__.py", "executor/__init__.py"):
        (root / name).write_text("", encoding="utf-8")
    (root / "harness" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n", encoding="utf-8")
    (root / "harness" / "b.py").write_text("def f():\n    from . import a\n", encoding="utf-8")
    (root / "executor" / "x.py").write_text("def g():\n    from ..harness.a import A\n", encoding="utf-8")
    modules = {_module(p, root): p for p in root.rglob("*.py")}
    graph = {m: _edges(p, modules, root) for m, p in modules.items()}
    assert graph["pocketpilot.harness.a"] == {"pocketpilot.harness.b"}
    assert graph["pocketpilot.harness.b"] == {"pocketpilot.harness.a"}
    assert graph["pocketpilot.executor.x"] == {"pocketpilot.harness.a"}
    inside = {m: graph[m] & {k for k in modules if k.startswith("pocketpilot.harness")}
              for m in modules if m.startswith("pocketpilot.harness")}
    assert _cycles(inside) == [["pocketpilot.harness.a", "pocketpilot.harness.b"]]
