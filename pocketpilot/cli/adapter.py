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
