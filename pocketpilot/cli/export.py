"""``pocketpilot export …`` (SFT sets, RL groups, curation into a store) and ``pocketpilot release …``.

Typical flow::

    pocketpilot export curate traces/ --store curation.sqlite     # accepted or queued for review
    pocketpilot review list --store curation.sqlite                # a human decides the queue
    pocketpilot release create curation.sqlite releases/ v1 --memory-db mem.sqlite
    pocketpilot release verify releases/v1
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..contracts import Episode
from ..errors import UsageError

if TYPE_CHECKING:
    from ..memory.ledger import DeletionLedger

__all__ = ["export", "iter_traces", "release", "trace_paths"]


def trace_paths(inputs: Sequence[str]) -> list[Path]:
    """Trace files named directly, plus every ``*.jsonl`` under named directories (sorted)."""
    out: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            out.extend(sorted(p.rglob("*.jsonl")))
        elif p.is_file():
            out.append(p)
        else:
            raise UsageError(f"{item}: no such trace file or directory")
    if not out:
        raise UsageError("no trace files found")
    return out


def iter_traces(inputs: Sequence[str]) -> Iterator[tuple[Episode, bool]]:
    """(episode, complete) per trace file."""
    from ..tracing.trace import read_trace

    for path in trace_paths(inputs):
        yield read_trace(path)


def deletion_ledger(dbs: Sequence[str], service_token: str | None, admin_token: str | None) -> DeletionLedger:
    """The merged deletion ledgers of memory stores ``dbs`` (read as the admin)."""
    from ..memory import AccessPolicy, Caller, SqliteMemory
    from ..memory.ledger import DeletionLedger

    ledger = DeletionLedger()
    if not dbs:
        return ledger
    if not service_token or not admin_token:
        raise UsageError("--memory-db needs --service-token and --admin-token (or their environment variables)")
    for db in dbs:
        with SqliteMemory(db, AccessPolicy(service_token, admin_token), embedder=None) as store:
            ledger = ledger | store.deletion_ledger(Caller.admin(admin_token))
    return ledger


def _ledger_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--no-memory-db", is_flag=True,
                      help="The traces used no memory store: export without a deletion ledger.")(fn)
    fn = click.option("--admin-token", envvar="POCKETPILOT_ADMIN_TOKEN", default=None, show_envvar=True)(fn)
    fn = click.option("--service-token", envvar="POCKETPILOT_SERVICE_TOKEN", default=None, show_envvar=True)(fn)
    fn = click.option("--memory-db", multiple=True, type=click.Path(exists=True, dir_okay=False),
                      help="Memory store(s) the traces used: deleted memories, and text quoting them, stay out.")(fn)
    return fn


def _export_ledger(memory_db: Sequence[str], service_token: str | None, admin_token: str | None,
                   no_memory_db: bool) -> DeletionLedger:
    if not memory_db and not no_memory_db:
        raise click.UsageError("pass --memory-db for each memory store these traces used (deleted memories must "
                               "not be exported), or --no-memory-db if they used none")
    try:
        return deletion_ledger(memory_db, service_token, admin_token)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from exc


def _guarded(traces: Sequence[str], ledger: DeletionLedger) -> Iterator[tuple[Episode, bool]]:
    """Episodes of ``traces`` scrubbed against the deletion ledger (quoting ones left out)."""
    from ..memory.export import guard_episode

    dropped = 0
    for episode, complete in iter_traces(traces):
        kept = guard_episode(episode, ledger)
        if kept is None:
            dropped += 1
            continue
        yield kept, complete
    if dropped:
        click.echo(f"{dropped} episode(s) left out: they quote deleted memories", err=True)


def _no_verdict(count: int, total: int, require: bool, kept_as: str) -> None:
    """Say how many traces no verifier judged, or refuse them (``--require-verdict``)."""
    if not count:
        return
    if require:
        raise UsageError(
            f"{count} of {total} trace(s) have no verdict (free runs, no task): --require-verdict refuses them"
        )
    click.echo(f"note: {count} of {total} trace(s) have no verdict (free runs): {kept_as}", err=True)


_MIX = click.option("--mix", "mix_file", type=click.Path(exists=True, dir_okay=False), default=None,
                    help="A task mix (`pocketpilot tasks resample`): each row gets its task's sample_weight; "
                         "rows of weight 0 are left out.")


def _weighted(rows: list[dict[str, Any]], mix_file: str | None) -> list[dict[str, Any]]:
    if mix_file is None:
        return rows
    from ..tasks.resample import load_mix

    mix = load_mix(Path(mix_file))
    out = [row | {"sample_weight": mix.weight(row.get("task_id"))} for row in rows]
    return [row for row in out if row["sample_weight"] > 0]


_REQUIRE_VERDICT = click.option(
    "--require-verdict", is_flag=True,
    help="Refuse traces no verifier judged (free runs) instead of exporting them.",
)


@click.group("export", help="Export traces as training data, or curate them into a store.")
def export() -> None:
    """Export commands."""


@export.command("sft")
@click.argument("traces", nargs=-1, required=True)
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="Output .jsonl or .parquet.")
@click.option("--include-ineligible", is_flag=True, help="Also write episodes without supervised turns (all masked).")
@_ledger_options
@_REQUIRE_VERDICT
@_MIX
def sft_cmd(traces: tuple[str, ...], out: str, include_ineligible: bool, memory_db: tuple[str, ...],
            service_token: str | None, admin_token: str | None, no_memory_db: bool, require_verdict: bool,
            mix_file: str | None) -> None:
    """Chat messages with tools and a per-turn train mask, one row per episode (secrets redacted).

    Episodes no verifier judged are written unverified (``verified: false``, every turn
    masked) unless --require-verdict; failed or torn ones only with --include-ineligible.
    """
    from ..memory.export import redact_row
    from ..trainer_bridge.export_io import EmptyExportError, write_rows
    from ..trainer_bridge.export_sft import sft_record

    episodes = _guarded(traces, _export_ledger(memory_db, service_token, admin_token, no_memory_db))
    records = [sft_record(ep, complete=c) for ep, c in episodes]
    unverified = sum(not r.verified for r in records)
    _no_verdict(unverified, len(records), require_verdict, "written with verified=false, every turn masked")
    rows = _weighted([redact_row(r.row()) for r in records if include_ineligible or r.eligible or not r.verified],
                     mix_file)
    if not rows:
        why = f"all {len(records)} trace(s) failed or are torn (--include-ineligible writes them)"
        raise EmptyExportError(out, why)
    n = write_rows(rows, out, "sft")
    click.echo(f"{n} SFT record(s) -> {out}")


@export.command("rl")
@click.argument("traces", nargs=-1, required=True)
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="Output .jsonl or .parquet.")
@click.option("--group-size", "-G", type=int, default=None, help="Rollouts per group (default: all of a task's).")
@click.option("--min-size", type=int, default=2, show_default=True, help="Drop smaller groups.")
@_ledger_options
@_REQUIRE_VERDICT
@_MIX
def rl_cmd(traces: tuple[str, ...], out: str, group_size: int | None, min_size: int, memory_db: tuple[str, ...],
           service_token: str | None, admin_token: str | None, no_memory_db: bool, require_verdict: bool,
           mix_file: str | None) -> None:
    """RL groups: per task, G rollouts with success, progress, cost and behaviour-policy data (secrets redacted).

    Runs no verifier judged join with reward null (task-less ones grouped by request) unless
    --require-verdict.
    """
    from ..memory.export import redact_row
    from ..trainer_bridge.export_io import EmptyExportError, write_rows
    from ..trainer_bridge.export_rl import rl_groups

    episodes = [ep for ep, _ in _guarded(traces, _export_ledger(memory_db, service_token, admin_token, no_memory_db))]
    unverified = sum(ep.verdict is None for ep in episodes)
    _no_verdict(unverified, len(episodes), require_verdict, "their rollouts carry reward null")
    groups = rl_groups(
        episodes, group_size=group_size, min_size=min_size, include_unverified=not require_verdict
    )
    if not groups:
        why = f"{len(episodes)} trace(s) formed no group of at least --min-size {min_size}"
        raise EmptyExportError(out, why)
    n = write_rows(_weighted([redact_row(g.row()) for g in groups], mix_file), out, "rl")
    click.echo(f"{n} RL group(s) -> {out}")


@export.command("curate")
@click.argument("traces", nargs=-1, required=True)
@click.option("--store", "store_path", required=True, type=click.Path(dir_okay=False), help="Curation store (SQLite).")
@click.option("--source", default=None, help="Record source (default: sandbox for suite tasks, else deployment).")
@click.option("--tasks-dir", type=click.Path(file_okay=False), default=None, help="Task suite (default: bundled).")
def curate_cmd(traces: tuple[str, ...], store_path: str, source: str | None, tasks_dir: str | None) -> None:
    """Normalize, dedupe, check, tag and attribute traces; accepted or queued for review."""
    from ..tasks import load_suite
    from ..trainer_bridge.curation import curate
    from ..trainer_bridge.review import CurationStore

    result = curate(iter_traces(traces), tasks=load_suite(directory=tasks_dir), source=source)
    with CurationStore(store_path) as store:
        counts = store.add(result.records)
    counts["duplicates"] += result.duplicates
    click.echo(json.dumps(counts, sort_keys=True))


@click.group("release", help="Cut and verify frozen, versioned training releases.")
def release() -> None:
    """Release commands."""


@release.command("create")
@click.argument("store_path", type=click.Path(exists=True, dir_okay=False))
@click.argument("root", type=click.Path(file_okay=False))
@click.argument("version")
@click.option("--memory-db", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Memory store(s) whose deleted memories must not ship.")
@click.option("--service-token", envvar="POCKETPILOT_SERVICE_TOKEN", default=None, show_envvar=True)
@click.option("--admin-token", envvar="POCKETPILOT_ADMIN_TOKEN", default=None, show_envvar=True)
@click.option("--no-memory-db", is_flag=True, help="The records used no memory store: no deletion ledger.")
@click.option("--deleted-user", multiple=True, help="A deleted user id (repeatable).")
@click.option("--deleted-users-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="File of deleted user ids, one a line.")
@click.option("--tasks-dir", type=click.Path(file_okay=False), default=None, help="Task suite (default: bundled).")
@click.option("--group-size", "-G", type=int, default=None, help="Rollouts per RL group.")
@click.option("--parquet/--no-parquet", default=None, help="Parquet too (default: when pyarrow is installed).")
def create_cmd(
    store_path: str,
    root: str,
    version: str,
    memory_db: tuple[str, ...],
    service_token: str | None,
    admin_token: str | None,
    no_memory_db: bool,
    deleted_user: tuple[str, ...],
    deleted_users_file: str | None,
    tasks_dir: str | None,
    group_size: int | None,
    parquet: bool | None,
) -> None:
    """Cut release VERSION under ROOT from the releasable records of STORE_PATH."""
    from ..tasks import load_suite
    from ..trainer_bridge.release import build_release
    from ..trainer_bridge.review import CurationStore

    ledger = _export_ledger(memory_db, service_token, admin_token, no_memory_db)
    users = set(deleted_user)
    if deleted_users_file:
        users |= {line.strip() for line in Path(deleted_users_file).read_text(encoding="utf-8").splitlines() if line.strip()}
    with CurationStore(store_path) as store:
        manifest = build_release(
            store,
            root,
            version,
            tasks=load_suite(directory=tasks_dir),
            deleted_memory_ids=set(ledger.ids),
            ledger=ledger,
            deleted_users=users,
            parquet=parquet,
            group_size=group_size,
        )
    click.echo(json.dumps({"version": manifest.version, "counts": manifest.counts, "excluded": manifest.excluded,
                           "manifest_sha256": manifest.manifest_sha256}, sort_keys=True))


@release.command("verify")
@click.argument("path", type=click.Path(file_okay=False))
def verify_cmd(path: str) -> None:
    """Re-hash a release's files and manifest; exit 2 on any mismatch."""
    from ..trainer_bridge.release import verify_release

    manifest = verify_release(path)
    click.echo(f"release {manifest.version} ok: {manifest.counts}")
