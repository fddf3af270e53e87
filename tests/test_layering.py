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
