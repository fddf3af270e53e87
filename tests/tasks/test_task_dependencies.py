"""Which way imports point: the tasks package never reaches the harness, and `run` never the bench."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved against its package)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            out.add(module)
            out.update(f"{module}.{a.name}" for a in node.names)
    return out


def test_no_tasks_module_imports_the_harness_or_the_bench() -> None:
    for path in sorted((ROOT / "pocketpilot" / "tasks").glob("*.py")):
        bad = {m for m in _imports(path) if m.startswith(("pocketpilot.harness", "pocketpilot.evaluation.compare"))}
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_run_goes_through_the_task_episode_not_the_bench() -> None:
    imports = _imports(ROOT / "pocketpilot" / "cli" / "run.py")
    assert "pocketpilot.evaluation.task_episode.run_task_episode" in imports
    assert not any(m.startswith("pocketpilot.evaluation.compare") for m in imports)
