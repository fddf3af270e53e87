"""The generated suite: ≥1,000 sandbox tasks from the templates, beside (never inside) the bundled hand-written one.

Regenerate with ``python -m pocketpilot.tasks.suite --regenerate`` (the same seed gives the same
files); its test split is frozen like the bundled one: ``suite.lock.json`` records each test
task's file hash, and a test fails when the split changes without ``--write`` re-recording it,
in a commit that says why.
"""

from __future__ import annotations

from pathlib import Path

from . import split_lock
from .loader import load_suite
from .spec import Split, TaskSpec

__all__ = ["SUITE_COUNT", "SUITE_DIR", "SUITE_LOCK", "SUITE_SEED", "load_generated_suite", "regenerate", "suite_drift"]

SUITE_DIR = Path(__file__).parent / "suite"
SUITE_LOCK = Path(__file__).parent / "suite.lock.json"
SUITE_SEED = 0
SUITE_COUNT = 1150
"""Tasks asked of the generator; a few templates run dry on today's apps, so slightly fewer come out."""


def load_generated_suite(split: Split | None = None) -> list[TaskSpec]:
    """The generated suite through the normal loader (every file checked), optionally one split."""
    return load_suite(split, directory=SUITE_DIR)


def suite_drift() -> split_lock.SplitDrift:
    """How the generated test split differs from its record."""
    return split_lock.drift(SUITE_DIR, SUITE_LOCK)


def regenerate(count: int = SUITE_COUNT, seed: int = SUITE_SEED) -> int:
    """Rewrite the suite folder from the bundled templates on the sandbox; returns the task count."""
    from .gen_world import SandboxGenWorld
    from .generate import generate, write_tasks

    bundled = {t.goal for t in load_suite()}
    gen = generate(SandboxGenWorld(), count=count, seed=seed, existing_goals=bundled)
    write_tasks(gen, SUITE_DIR, clean=True)
    return len(gen.tasks)


def main(argv: list[str] | None = None) -> int:
    """Regenerate the generated suite, or check/re-record its test split."""
    return split_lock.lock_main(argv, what="the generated suite", directory=SUITE_DIR, lock=SUITE_LOCK,
                                regenerate=regenerate)


if __name__ == "__main__":
    raise SystemExit(main())
