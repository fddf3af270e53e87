"""The bench scripts (``bench/*.py``, not a package) imported by the tests that check their reports."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


@contextmanager
def bench_script(script: str, name: str | None = None) -> Iterator[ModuleType]:
    """``bench/<script>.py`` as a module named ``name`` (default the script's), while the block runs.

    The module sits in ``sys.modules`` meanwhile: its dataclasses and pydantic models look their
    module up there.
    """
    name = name or script
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
