"""Write and read export files: JSONL (stdlib only) and Parquet (the optional ``export`` extra).

Both are written atomically (a temporary file in the target directory, then ``os.replace``),
so a crash never leaves a half-written dataset under the final name. Parquet files carry an
explicit Arrow schema instead of an inferred one: a batch whose optional fields are all null
would otherwise infer a ``null`` type and clash with the next file of the same dataset.
``datasets.load_dataset("json" | "parquet", data_files=...)`` reads either as is. An export
with no record is refused (:class:`EmptyExportError`), never written as a file that
``load_dataset`` fails to open.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from ..contracts import SamplerSettings
from ..errors import PocketPilotError, UsageError

__all__ = [
    "EmptyExportError",
    "ExportDependencyError",
    "Format",
    "RecordKind",
    "arrow_schema",
    "format_for",
    "read_jsonl",
    "write_jsonl",
    "write_parquet",
    "write_rows",
]

logger = logging.getLogger(__name__)

Format = Literal["jsonl", "parquet"]
RecordKind = Literal["sft", "rl"]


class ExportDependencyError(PocketPilotError, ImportError):
    """Parquet was asked for but pyarrow (the ``export`` extra) is not installed."""

    def __init__(self) -> None:
        super().__init__("Parquet export needs pyarrow: pip install 'pocketpilot[export]' (JSONL works without it)")


class EmptyExportError(UsageError):
    """No record to write. Refused rather than written: ``datasets.load_dataset`` cannot open an
    empty JSONL file, nor a Parquet file without rows (even one that carries the schema).
    """

    def __init__(self, path: str | Path, why: str = "") -> None:
        super().__init__(f"{path}: nothing to export{': ' + why if why else ''}; no file written")


def format_for(path: str | Path) -> Format:
    """The format a file name asks for (``.jsonl``/``.json`` or ``.parquet``).

    Raises:
        UsageError: any other suffix.
    """
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    if suffix == ".parquet":
        return "parquet"
    raise UsageError(f"{path}: unknown export format {suffix!r}; use .jsonl or .parquet")


def _atomic(path: Path, write: Callable[[str], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(rows: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write rows as JSON lines atomically; returns the count.

    Raises:
        EmptyExportError: no row (nothing is written, an earlier file stays as it was).
    """
    count = 0

    def write(tmp: str) -> None:
        nonlocal count
        with open(tmp, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
                count += 1
            if count == 0:
                raise EmptyExportError(path)
            fh.flush()
            os.fsync(fh.fileno())

    _atomic(Path(path), write)
    return count


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Rows of a JSONL file.

    Raises:
        UsageError: unreadable file or a line that is not a JSON object.
    """
    p = Path(path)
    try:
        fh = p.open(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{p}: cannot read: {exc.strerror}") from exc
    with fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{p}:{number}: invalid JSON") from exc
            if not isinstance(row, dict):
                raise UsageError(f"{p}:{number}: expected a JSON object")
            yield row


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise ExportDependencyError() from exc
    return pa


def arrow_schema(kind: RecordKind) -> Any:
    """The explicit Arrow schema of an SFT or RL export.

    Raises:
        ExportDependencyError: pyarrow is not installed.
    """
    pa = _pyarrow()
    message = pa.struct(
        [
            ("role", pa.string()),
            ("content", pa.string()),
            (
                "tool_calls",
                pa.list_(
                    pa.struct(
                        [
                            ("id", pa.string()),
                            ("type", pa.string()),
                            ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
                        ]
                    )
                ),
            ),
            ("tool_call_id", pa.string()),
            ("weight", pa.int64()),
        ]
    )
    if kind == "sft":
        return pa.schema(
            [
                ("id", pa.string()),
                ("task_id", pa.string()),
                ("messages", pa.list_(message)),
                ("tools", pa.string()),
                ("train_mask", pa.list_(pa.int64())),
                ("turn_labels", pa.list_(pa.string())),
                ("eligible", pa.bool_()),
                ("verified", pa.bool_()),
                ("model_sha256", pa.string()),
                ("eta_version", pa.string()),
            ]
        )
    sampler = pa.struct(
        [
            (name, pa.float64() if field.annotation in (float, "float") else pa.int64())
            for name, field in SamplerSettings.model_fields.items()
        ]
    )
    behaviour = pa.struct(
        [
            ("backend", pa.string()),
            ("model", pa.string()),
            ("model_sha256", pa.string()),
            ("quant_type", pa.string()),
            ("adapter", pa.string()),
            ("sampler", sampler),
        ]
    )
    turn = pa.struct(
        [
            ("step", pa.int64()),
            ("raw", pa.string()),
            ("token_ids", pa.list_(pa.int64())),
            ("token_logprobs", pa.list_(pa.float64())),
            ("finish_reason", pa.string()),
            ("prompt_tokens", pa.int64()),
            ("completion_tokens", pa.int64()),
        ]
    )
    rollout = pa.struct(
        [
            ("episode_id", pa.string()),
            ("verified", pa.bool_()),
            ("reward", pa.float64()),
            ("success", pa.bool_()),
            ("progress", pa.float64()),
            ("output_tokens", pa.int64()),
            ("tool_calls", pa.int64()),
            ("steps", pa.int64()),
            ("stop_reason", pa.string()),
            ("behaviour", behaviour),
            ("turns", pa.list_(turn)),
            ("messages", pa.list_(message)),
        ]
    )
    return pa.schema(
        [
            ("group_id", pa.string()),
            ("task_id", pa.string()),
            ("size", pa.int64()),
            ("success_rate", pa.float64()),
            ("behaviour_consistent", pa.bool_()),
            ("rollouts", pa.list_(rollout)),
        ]
    )


def write_parquet(rows: Iterable[dict[str, Any]], path: str | Path, kind: RecordKind, *, batch: int = 1000) -> int:
    """Write rows as Parquet with the explicit schema of ``kind`` atomically; returns the count.

    Raises:
        ExportDependencyError: pyarrow is not installed.
        UsageError: a row does not fit the schema.
        EmptyExportError: no row (nothing is written).
    """
    pa = _pyarrow()
    import pyarrow.parquet as pq

    schema = arrow_schema(kind)
    count = 0

    def write(tmp: str) -> None:
        nonlocal count
        with pq.ParquetWriter(tmp, schema) as writer:
            chunk: list[dict[str, Any]] = []
            for row in rows:
                chunk.append(row)
                if len(chunk) >= batch:
                    writer.write_table(_table(pa, chunk, schema))
                    count += len(chunk)
                    chunk = []
            if chunk:
                writer.write_table(_table(pa, chunk, schema))
                count += len(chunk)
            if count == 0:
                raise EmptyExportError(path)

    _atomic(Path(path), write)
    return count


def _table(pa: Any, rows: list[dict[str, Any]], schema: Any) -> Any:
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
        raise UsageError(f"a record does not fit the export schema: {exc}") from exc


def write_rows(rows: Iterable[dict[str, Any]], path: str | Path, kind: RecordKind) -> int:
    """Write rows in the format the file name asks for; returns the count."""
    fmt = format_for(path)
    n = write_jsonl(rows, path) if fmt == "jsonl" else write_parquet(rows, path, kind)
    logger.info("wrote %d %s record(s) to %s", n, kind, path)
    return n
