"""Shared helpers of the memory adversarial tests (no conftest here: other suites share the folder)."""

from __future__ import annotations

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


def embedder(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The real MiniLM embedder (fp32), on the build the test run shares (tests/minilm.py)."""
    from minilm import built_minilm

    from pocketpilot.memory.embedders import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(built_minilm(tmp_path_factory))
