"""``pocketpilot adapter …``: compile, show and diff the harness configuration η; approve revisions."""

from __future__ import annotations

import json
import sys

import click

__all__ = ["adapter"]

adapter = click.Group("adapter", help="Compile, show and diff the Scenario Adapter's harness configuration η.")


def _fail(exc: Exception) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(1)


@adapter.command("compile")
@click.option("--out", "out", type=click.Path(dir_okay=False), default="eta.json", show_default=True,
              help="Where to write η.")
@click.option("--skills", "skills_dir", type=click.Path(file_okay=False), default=None,
              help="Skill library folder (default: the built-in library).")
def compile_cmd(out: str, skills_dir: str | None) -> None:
    """Compile η from the sandbox tools, the skill library and the default routing notes."""
    from ..adapters import EtaError, compile_eta, sandbox_tool_apps, save_eta
    from ..skills import SkillError, SkillLibrary

    try:
        library = SkillLibrary.from_dir(skills_dir) if skills_dir else SkillLibrary.builtin()
        tools, apps = sandbox_tool_apps()
        eta = compile_eta(tools, library, apps=apps, strict=True)
        path = save_eta(eta, out)
    except (EtaError, SkillError) as exc:
        _fail(exc)
        return
    click.echo(f"{eta.version}  {path}  ({len(eta.tools)} tools, {len(eta.skills)} skills, {len(eta.notes)} notes)")


@adapter.command("show")
@click.argument("eta_file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the verified content as JSON.")
def show(eta_file: str, as_json: bool) -> None:
    """Verify an η file and summarize it."""
    from ..adapters import EtaError, load_eta

    try:
        eta = load_eta(eta_file)
    except EtaError as exc:
        _fail(exc)
        return
    if as_json:
        click.echo(json.dumps({"eta_version": eta.version, "eta": eta.content()}, indent=1, sort_keys=True))
        return
    click.echo(f"η {eta.version}: {len(eta.tools)} tools, {len(eta.skills)} skills, {len(eta.notes)} notes")
    if eta.experience:
        state = "on" if eta.experience_config.enabled else "off"
        click.echo(f"  experience: {len(eta.experience)} workflow(s) from "
                   f"{sum(len(e.provenance) for e in eta.experience)} run(s), shown {state}")
    for name, s in sorted(eta.skills.items()):
        kinds = ", ".join(p["kind"] for p in s.preconditions) or "no preconditions"
        click.echo(f"  skill {name} v{s.version}: requires {s.requires or '-'}; {kinds}")
    for note in eta.notes:
        needs = note.requires_tools + [f"@{r}" for r in note.requires_resources]
        click.echo(f"  note {note.id} [{', '.join(needs) or 'always'}]")


@adapter.command("diff")
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the changes as JSON.")
def diff(a: str, b: str, as_json: bool) -> None:
    """Semantic diff of two η files; exits 1 when they differ (like diff(1))."""  # noqa: D402
    from dataclasses import asdict

    from ..adapters import EtaError, diff_eta, load_eta, render_diff

    try:
        eta_a, eta_b = load_eta(a), load_eta(b)
    except EtaError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    changes = diff_eta(eta_a, eta_b)
    if as_json:
        click.echo(json.dumps([asdict(c) for c in changes], indent=1, ensure_ascii=False))
    else:
        click.echo(render_diff(eta_a, eta_b, changes))
    sys.exit(1 if changes else 0)


@adapter.command("propose")
@click.argument("eta_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("revision_file", type=click.Path(exists=True, dir_okay=False))
def propose(eta_file: str, revision_file: str) -> None:
    """Rule-check a revision (JSON) against η and store it as pending."""
    from pydantic import ValidationError

    from ..adapters import EtaError, Revision, RevisionStore

    try:
        rev = Revision.model_validate_json(open(revision_file, encoding="utf-8").read())
        path = RevisionStore(eta_file).propose(rev)
    except (EtaError, ValidationError) as exc:
        _fail(exc)
        return
    click.echo(f"pending: {rev.id} ({path})")


@adapter.command("pending")
@click.argument("eta_file", type=click.Path(exists=True, dir_okay=False))
def pending(eta_file: str) -> None:
    """List revisions awaiting approval, with the diff each would make."""
    from ..adapters import EtaError, RevisionStore, apply_revision, load_eta, render_diff

    try:
        store = RevisionStore(eta_file)
        current = load_eta(eta_file)
        for rev in store.pending():
            click.echo(f"{rev.id} (from {rev.source}): {rev.rationale}")
            try:
                click.echo(render_diff(current, apply_revision(current, rev)))
            except EtaError as exc:
                click.echo(f"  no longer applies: {exc}")
    except EtaError as exc:
        _fail(exc)


@adapter.command("approve")
@click.argument("eta_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("revision_id")
@click.option("--by", "approver", required=True, help="Who approves (recorded).")
def approve(eta_file: str, revision_id: str, approver: str) -> None:
    """Apply a pending revision: η gets a new version, the old one is kept in history."""
    from ..adapters import EtaError, RevisionStore

    try:
        new = RevisionStore(eta_file).approve(revision_id, approver)
    except EtaError as exc:
        _fail(exc)
        return
    click.echo(f"approved {revision_id}: η is now {new.version}")


@adapter.command("learn")
@click.argument("eta_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--approved", "approved", multiple=True, help="Episode id the user explicitly approved (repeatable).")
@click.option("--owner", default=None, help="Whose deployment runs these are (default: bench runs, no owner).")
@click.option("--id", "rev_id", default=None, help="Revision id (default: derived from the entries).")
def learn(eta_file: str, traces: tuple[str, ...], approved: tuple[str, ...], owner: str | None,
          rev_id: str | None) -> None:
    """Distil verified runs (trace files or folders) into experience and propose it as a pending revision."""
    from pathlib import Path

    from ..adapters import RevisionStore, load_eta
    from ..trainer_bridge.candidates import experience_candidate
    from ..trainer_bridge.distil import distil, read_sources
    from ._errors import CliError

    paths = [p for t in traces for p in (read_sources(t) if Path(t).is_dir() else [Path(t)])]
    if not paths:
        raise CliError(f"no trace files (*.jsonl) in {', '.join(traces)}")
    eta = load_eta(eta_file)
    entries = distil(paths, approved=approved, owner=owner)
    candidate = experience_candidate(eta, entries)
    if candidate is None:
        raise CliError(f"nothing new to learn from {len(paths)} trace(s): no verified run with a successful call "
                       "that η does not hold already")
    rev = candidate.revision if rev_id is None else candidate.revision.model_copy(update={"id": rev_id})
    path = RevisionStore(eta_file).propose(rev)
    click.echo(f"proposed {rev.id}: {len(entries)} workflow(s) from {len(paths)} trace(s) -> {path}")
    click.echo(candidate.diff)


@adapter.command("forget")
@click.argument("eta_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--memory", "db", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The memory store whose deletions η must forget.")
@click.option("--admin-token", envvar="POCKETPILOT_ADMIN_TOKEN", required=True, show_envvar=True)
@click.option("--service-token", envvar="POCKETPILOT_SERVICE_TOKEN", required=True, show_envvar=True)
def forget_cmd(eta_file: str, db: str, admin_token: str, service_token: str) -> None:
    """Drop every experience entry a deleted memory survives in, from η, its history and its revisions."""
    from ..adapters import RevisionStore
    from ..memory import AccessPolicy, Caller, SqliteMemory

    with SqliteMemory(db, AccessPolicy(service_token, admin_token)) as store:
        ledger = store.deletion_ledger(Caller.admin(admin_token))
    dropped = RevisionStore(eta_file).forget(ledger)
    click.echo(f"forgot {len(dropped)} experience entr{'y' if len(dropped) == 1 else 'ies'}"
               + (f": {', '.join(dropped)}" if dropped else ""))
