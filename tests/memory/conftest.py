from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # until the package is installed
    sys.path.insert(0, str(ROOT))

from pocketpilot.memory import AccessPolicy, Caller, SqliteMemory  # noqa: E402

SERVICE = "service-token-0123456789"
ADMIN = "admin-credential-9876543210"


@pytest.fixture
def policy() -> AccessPolicy:
    return AccessPolicy(SERVICE, ADMIN)


@pytest.fixture
def svc() -> Caller:
    return Caller.service(SERVICE, acting_for="alice")


@pytest.fixture
def svc_bob() -> Caller:
    return Caller.service(SERVICE, acting_for="bob")


@pytest.fixture
def admin() -> Caller:
    return Caller.admin(ADMIN)


@pytest.fixture
def alice(policy: AccessPolicy) -> Caller:
    return Caller.user("alice", policy.user_token("alice"))


@pytest.fixture
def bob(policy: AccessPolicy) -> Caller:
    return Caller.user("bob", policy.user_token("bob"))


@pytest.fixture(scope="session")
def embedder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from minilm import built_minilm

    return built_minilm(tmp_path_factory)


@pytest.fixture(scope="session")
def embedder(embedder_dir: Path):
    from pocketpilot.memory.embedders import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(embedder_dir)


@pytest.fixture
def kw_store(tmp_path: Path, policy: AccessPolicy):
    store = SqliteMemory(tmp_path / "kw.db", policy)
    yield store
    store.close()


@pytest.fixture
def store(tmp_path: Path, policy: AccessPolicy, embedder):
    store = SqliteMemory(tmp_path / "vec.db", policy, embedder=embedder)
    yield store
    store.close()
