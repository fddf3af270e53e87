"""``pocketpilot diagnose TRACES…``: attribute failed episodes; optionally propose η revisions."""

from __future__ import annotations

import json
from collections import Counter

import click

from .export import iter_traces

__all__ = ["diagnose"]


@click.command("diagnose")
@click.argument("traces", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON diagnosis per failed episode.")
@click.option("--eta", "eta_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="η the episodes ran under: propose revisions for harness-side findings.")
@click.option("--propose", is_flag=True, help="Store the candidates as pending (needs --eta); approve with "
              "`pocketpilot adapter approve`.")
@click.option("--min-support", type=int, default=1, show_default=True, help="Episodes needed per candidate.")
def diagnose(traces: tuple[str, ...], as_json: bool, eta_file: str | None, propose: bool, min_support: int) -> None:
    """Attribute each failed episode to the model or the harness side, with the evidence steps."""
    from ..errors import UsageError
    from ..trainer_bridge.diagnosis import diagnose_many

    if propose and not eta_file:
        raise UsageError("--propose needs --eta")
    diagnoses = [d for d in diagnose_many(ep for ep, _ in iter_traces(traces)) if d.failed]
    for d in diagnoses:
        if as_json:
            click.echo(d.model_dump_json())
            continue
        click.echo(f"{d.episode_id[:12]}  {d.task_id or '-'}  {d.side}/{d.category}  steps {d.evidence_steps}")
        for f in d.findings:
            click.echo(f"    {f.side}/{f.category} steps {f.steps}: {f.detail}")
    summary = Counter(f"{d.side}/{d.category}" for d in diagnoses)
    if not as_json:
        click.echo(f"{len(diagnoses)} failed episode(s): " + (", ".join(f"{k} {v}" for k, v in summary.most_common()) or "none"))
    if eta_file:
        from ..adapters import RevisionStore, load_eta
        from ..trainer_bridge.diagnosis_revisions import propose_revisions

        candidates, skipped = propose_revisions(diagnoses, load_eta(eta_file), min_support=min_support)
        for c in candidates:
            click.echo(f"candidate {c.revision.id}: {c.revision.rationale}\n{c.diff}")
            if propose:
                path = RevisionStore(eta_file).propose(c.revision)
                click.echo(f"  pending: {path}")
        for line in skipped:
            click.echo(f"no candidate: {line}")
        if as_json:
            click.echo(json.dumps({"candidates": [c.revision.id for c in candidates], "skipped": skipped}))
