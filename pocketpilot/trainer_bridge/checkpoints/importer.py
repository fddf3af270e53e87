"""``import_checkpoint``: verify, store, quantize, gate, register — in that order.

Nothing here touches the version serving now: a file that fails a check or a gate is
recorded as ``rejected`` (when it got far enough to be registered) and the call raises; the
serving version and every running planner stay as they were. Promotion into running
planners is :class:`~.swap.ServingSwitch`'s job.

Both gates run by default. Without ``--reference`` or ``--quantize``, parity compares the
candidate with the base it claims to derive from: a fine-tune moves the next-token
distributions a little, a different model that merely shares the tokenizer (a larger
sibling) moves them a lot, and the dev-set gate alone would wave it through if it scores
well. A gate that cannot run (no base, no dev tasks) leaves the version a candidate; only a
``force_reason`` promotes over it, and the registry keeps that reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import PocketPilotError, UsageError
from ...models.files import quant_type_name
from ...models.store import ModelStore, file_sha256
from ...tasks import TaskSpec
from .compat import check_compatible
from .devgate import DevGateReport, Evaluator, dev_gate, llama_evaluator, run_dev_gate
from .errors import (
    CheckpointError,
    CheckpointIntegrityError,
    GateFailedError,
    PromotionRefusedError,
    QuantizeError,
)
from .gguf_info import GgufInfo, read_gguf_info
from .parity import (
    DEFAULT_PROBES,
    ModelTarget,
    ParityBounds,
    ParityMeasure,
    ParityReport,
    measure_parity,
    parity_gate,
)
from .promotion import check_force_reason
from .quantize import quantize_gguf
from .registry import ModelVersion, Registry

__all__ = ["ImportOptions", "ImportResult", "import_checkpoint", "store_file"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportOptions:
    """How to import one checkpoint (defaults: verify and gate, do not promote)."""

    base: str | None = None
    """Catalogue name or GGUF path of the base; default: the serving version's model."""
    quantize: str | None = None
    reference: Path | None = None
    """Parity reference model; with an adapter, the adapter is applied to it too.

    Default: the unquantized FILE with ``quantize``, else the base model."""
    expected_sha256: str | None = None
    """The trainer's recorded sha256 of FILE: a mismatch means tampering or corruption."""
    parity_bounds: ParityBounds = ParityBounds()
    probes: Sequence[str] = DEFAULT_PROBES
    measure: ParityMeasure | None = None
    """None: :func:`~.parity.measure_parity` (llama.cpp, the runtime that will serve the file)."""
    dev_tasks: Sequence[TaskSpec] = ()
    evaluate: Evaluator = llama_evaluator
    max_regression: float = 0.0
    promote: bool = False
    force_reason: str | None = None
    """With ``promote``: serve it even if a gate failed or could not run, recording this reason.

    Integrity and the fit to the base are never overridden."""


@dataclass(frozen=True)
class ImportResult:
    """The registered version and what its gates measured (None: the gate did not apply)."""

    version: ModelVersion
    parity: ParityReport | None
    dev: DevGateReport | None
    skipped: tuple[str, ...] = ()


def store_file(src: Path, files_dir: Path, expected_sha256: str | None = None) -> tuple[Path, str]:
    """Copy ``src`` into the store under its sha256, hashing while copying; atomic.

    Returns the stored path and the sha256 of the bytes actually stored. With
    ``expected_sha256``, a mismatch raises before anything appears in the store.

    Raises:
        CheckpointIntegrityError: the bytes do not hash to ``expected_sha256``.
    """
    files_dir.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=".import.", suffix=".partial", dir=files_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, src.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        sha = h.hexdigest()
        if expected_sha256 and sha != expected_sha256.lower():
            raise CheckpointIntegrityError(
                str(src), f"sha256 {sha[:16]}… does not match the expected {expected_sha256[:16]}…: tampered or corrupted"
            )
        dest = files_dir / f"{sha[:16]}-{src.name}"
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest, sha


def _resolve_base(base: str | None, registry: Registry) -> tuple[Path | None, str | None]:
    if base is not None:
        path, entry = ModelStore().resolve(base)
        return path, entry.sha256 if entry else None
    serving = registry.serving()
    if serving is None:
        return None, None
    return Path(serving.model_path), serving.model_sha256


async def import_checkpoint(
    file: str | os.PathLike[str], options: ImportOptions | None = None, *, registry: Registry | None = None
) -> ImportResult:
    """Import a GGUF model or LoRA adapter as a new version (see the module docstring).

    Raises:
        CheckpointIntegrityError: truncated, corrupt or tampered file (nothing registered).
        CheckpointMismatchError: architecture/tokenizer/shape mismatch with the base (nothing registered).
        GateFailedError: a gate said no; the version is registered as ``rejected`` with the figures.
        PromotionRefusedError: ``promote`` asked, but a gate could not run; it stays a ``candidate``.
        QuantizeError: quantization failed; no partial file is left.
    """
    opts = options or ImportOptions()
    if check_force_reason(opts.force_reason) is not None and not opts.promote:
        raise UsageError("a --force reason overrides the gates of a promotion: it needs --promote")
    reg = registry or Registry()
    src = Path(file)
    info = await asyncio.to_thread(read_gguf_info, src)
    base_path, base_sha = _resolve_base(opts.base, reg)
    base_info: GgufInfo | None = None
    if base_path is not None:
        base_info = await asyncio.to_thread(read_gguf_info, base_path)
        check_compatible(info, base_info)
    elif info.kind == "adapter":
        raise CheckpointError(f"{src}: a LoRA adapter needs --base (nothing is serving to apply it to)")
    if opts.quantize and info.kind == "adapter":
        raise QuantizeError(f"{src}: --quantize applies to models; a LoRA adapter is served as it is")

    stored, sha = await asyncio.to_thread(store_file, src, reg.files, opts.expected_sha256)
    # what is served is the stored copy: check that it is the file that passed the checks above
    stored_info = await asyncio.to_thread(read_gguf_info, stored)
    if (stored_info.size, stored_info.metadata) != (info.size, info.metadata):
        raise CheckpointIntegrityError(str(src), "the file changed while it was being imported")
    serving = reg.serving()
    if info.kind == "adapter":
        assert base_path is not None  # checked above
        if base_sha is None:
            base_sha = await asyncio.to_thread(file_sha256, base_path)
        version = ModelVersion(id="new", kind="adapter", model_path=str(base_path), model_sha256=base_sha,
                               lora_path=str(stored), lora_sha256=sha, source=str(src), source_sha256=sha,
                               architecture=info.architecture, quant_type=_quant(base_info),
                               parent=serving.id if serving else None)
    else:
        model_path, model_sha, quant = stored, sha, _quant(info)
        if opts.quantize:
            qpath = reg.files / f"{sha[:16]}-{src.stem}.{opts.quantize.upper()}.gguf"
            await asyncio.to_thread(quantize_gguf, stored, qpath, opts.quantize)
            model_path, model_sha, quant = qpath, await asyncio.to_thread(file_sha256, qpath), opts.quantize.upper()
        version = ModelVersion(id="new", kind="model", model_path=str(model_path), model_sha256=model_sha,
                               source=str(src), source_sha256=sha, architecture=info.architecture,
                               quant_type=quant, parent=serving.id if serving else None)
    version = reg.add(version)
    logger.info("registered %s from %s as candidate", version.id, src)
    try:
        return await _gate(version, stored, opts, reg, serving, base_path)
    except PromotionRefusedError:
        raise  # nothing said no: it stays a candidate that passing gates or a reason can promote
    except GateFailedError as exc:
        reg.update(version.id, state="rejected", note=str(exc))
        raise
    except (PocketPilotError, OSError) as exc:
        reg.update(version.id, state="rejected", note=f"gate error: {exc}")
        raise


async def _gate(version: ModelVersion, stored: Path, opts: ImportOptions, reg: Registry,
                serving: ModelVersion | None, base_path: Path | None) -> ImportResult:
    forced = opts.force_reason is not None  # a failed gate is recorded, then overridden at promotion
    skipped: list[str] = []
    parity: ParityReport | None = None
    reference: ModelTarget | None = None
    if opts.quantize:
        reference = ModelTarget(stored)
    elif opts.reference is not None:
        reference = ModelTarget(opts.reference, version.target.lora)
    elif base_path is not None:
        reference = ModelTarget(base_path)
    if reference is not None:
        parity = await asyncio.to_thread(
            opts.measure or measure_parity, version.target, reference, list(opts.probes), bounds=opts.parity_bounds
        )
        version = reg.update(version.id, gates={**version.gates, "parity": parity.model_dump(mode="json")})
        if not forced:
            parity_gate(parity)
    else:
        skipped.append("parity: nothing to compare with; give --base, --reference or --quantize")
    dev: DevGateReport | None = None
    baseline = serving.target if serving is not None else ModelTarget(base_path) if base_path is not None else None
    if baseline is not None and opts.dev_tasks:
        dev = await run_dev_gate(version.target, baseline, list(opts.dev_tasks),
                                 evaluate=opts.evaluate, max_regression=opts.max_regression)
        version = reg.update(version.id, gates={**version.gates, "dev": dev.model_dump(mode="json")})
        if not forced:
            dev_gate(dev)
    else:
        skipped.append("dev: " + ("nothing to compare with; give --base" if baseline is None else "no dev tasks"))
    version = reg.update(version.id, gates={**version.gates, "skipped": skipped})
    if opts.promote:
        version = reg.promote(version.id, force_reason=opts.force_reason)
    return ImportResult(version=version, parity=parity, dev=dev, skipped=tuple(skipped))


def _quant(info: GgufInfo | None) -> str | None:
    if info is None or info.file_type is None:
        return None
    return quant_type_name({"general.file_type": str(info.file_type)})
