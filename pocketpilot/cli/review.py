"""``pocketpilot review …``: decide the curation review queue (approve / fix / reject / quarantine)."""

from __future__ import annotations

import json

import click

__all__ = ["review"]

_STORE = click.option(
    "--store", "store_path", envvar="POCKETPILOT_CURATION_STORE", show_envvar=True, required=True,
    type=click.Path(exists=True, dir_okay=False), help="Curation store (SQLite).",
)


@click.group("review", help="Decide records that curation queued for review.")
def review() -> None:
    """Review commands."""


def _open(path: str):  # type: ignore[no-untyped-def]
    from ..trainer_bridge.review import CurationStore

    return CurationStore(path)


@review.command("list")
@_STORE
@click.option("--status", default="pending", show_default=True,
              type=click.Choice(["pending", "accepted", "approved", "fixed", "rejected", "quarantined", "all"]))
def list_cmd(store_path: str, status: str) -> None:
    """One line per record: hash, status, task, success, reasons."""
    with _open(store_path) as store:
        rows = store.records(None if status == "all" else status)
    for h, s, rec in rows:
        click.echo(f"{h[:12]}  {s:<11} {rec.task_id or '-':<32} success={rec.success}  {', '.join(rec.reasons) or '-'}")
    if not rows:
        click.echo(f"no {status} records")


@review.command("show")
@_STORE
@click.argument("record")
def show_cmd(store_path: str, record: str) -> None:
    """The record's status, reasons, tags, attribution and episode, rendered."""
    from .render import render_episode

    with _open(store_path) as store:
        rec, detail = store.get(record), store.detail(record)
    click.echo(json.dumps({**detail, "reasons": rec.reasons, "tags": rec.tags, "attribution": rec.attribution,
                           "source": rec.source}, indent=2, sort_keys=True))
    click.echo(render_episode(rec.to_episode(), rec.complete))


def _decision(name: str, help_text: str):  # type: ignore[no-untyped-def]
    @review.command(name, help=help_text)
    @_STORE
    @click.argument("record")
    @click.option("--note", default="", help="Why (recorded with the decision).")
    def cmd(store_path: str, record: str, note: str) -> None:
        with _open(store_path) as store:
            rec = getattr(store, name)(record, note)
            click.echo(f"{rec.hash[:12]} -> {store.status(rec.hash)}")

    return cmd


approve = _decision("approve", "Let a pending record into releases as it is.")
reject = _decision("reject", "Keep a pending record out of every release.")
quarantine = _decision("quarantine", "Keep a pending record out and flag it for inspection.")


@review.command("fix")
@_STORE
@click.argument("record")
@click.argument("episode_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--note", default="", help="What was fixed.")
def fix_cmd(store_path: str, record: str, episode_file: str, note: str) -> None:
    """Replace a pending record's episode with EPISODE_FILE (Episode JSON) and let it in."""
    from ..errors import UsageError

    try:
        data = json.loads(open(episode_file, encoding="utf-8").read())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{episode_file}: not JSON") from exc
    with _open(store_path) as store:
        rec = store.fix(record, data, note)
        click.echo(f"{rec.hash[:12]} -> {store.status(rec.hash)}")


@review.command("reopen")
@_STORE
@click.argument("record")
def reopen_cmd(store_path: str, record: str) -> None:
    """Put a decided record back into the queue."""
    with _open(store_path) as store:
        rec = store.reopen(record)
        click.echo(f"{rec.hash[:12]} -> pending")
