"""`pocketpilot checkpoint import|list|promote|rollback`: trained checkpoints back into service.

Gates are on by default: ``import`` serves a checkpoint only when the parity and dev-set gates
ran and passed. ``--force --reason TEXT`` serves it anyway and the registry keeps the reason
(``list`` shows it); nothing overrides a tampered, truncated or mismatched file.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from ..tasks import load_suite
from ..trainer_bridge.checkpoints import (
    DEFAULT_PROBES,
    ImportOptions,
    ParityBounds,
    Registry,
    import_checkpoint,
)

__all__ = ["checkpoint"]

checkpoint = click.Group("checkpoint", help="Import, gate, list and roll back trained GGUF checkpoints.")


def _force_options(fn):  # type: ignore[no-untyped-def]
    fn = click.option("--reason", default=None,
                      help="Why --force is needed (required with it; kept in the registry).")(fn)
    fn = click.option("--force", is_flag=True, help="Serve it even if a gate failed or could not run.")(fn)
    return fn


def _force_reason(force: bool, reason: str | None) -> str | None:
    if force and not (reason and reason.strip()):
        raise click.UsageError("--force needs --reason TEXT saying why the gates are overridden")
    if reason is not None and not force:
        raise click.UsageError("--reason goes with --force")
    return reason if force else None


_registry_option = click.option(
    "--registry", "registry_dir", type=click.Path(file_okay=False), default=None,
    help="Registry directory (default: <pocketpilot home>/checkpoints).",
)


def _registry(registry_dir: str | None) -> Registry:
    return Registry(registry_dir)


@checkpoint.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--base", default=None, help="Base model: catalogue name or GGUF path (default: the serving version).")
@click.option("--quantize", default=None, help="Quantize a model with llama.cpp first (e.g. Q4_K_M); parity compares to FILE.")
@click.option("--reference", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Parity reference model (an adapter is applied to it too).")
@click.option("--sha256", "expected_sha256", default=None, help="The trainer's sha256 of FILE; a mismatch rejects it.")
@click.option("--probes", type=click.IntRange(1, len(DEFAULT_PROBES)), default=len(DEFAULT_PROBES), show_default=True,
              help="Parity probe prompts to use.")
@click.option("--min-top1", type=float, default=ParityBounds().min_top1_agreement, show_default=True)
@click.option("--max-kl", type=float, default=ParityBounds().max_mean_kl, show_default=True)
@click.option("--dev-tasks", type=click.IntRange(0), default=5, show_default=True,
              help="Dev-split tasks for the no-regression gate (0 skips it; then only --force promotes).")
@click.option("--max-regression", type=float, default=0.0, show_default=True)
@click.option("--promote/--no-promote", default=True, show_default=True, help="Serve it once every gate passed.")
@_force_options
@_registry_option
def import_(file: str, base: str | None, quantize: str | None, reference: str | None, expected_sha256: str | None,
            probes: int, min_top1: float, max_kl: float, dev_tasks: int, max_regression: float, promote: bool,
            force: bool, reason: str | None, registry_dir: str | None) -> None:
    """Verify FILE (GGUF model or LoRA adapter), gate it, and register it as a version.

    Parity compares it with --reference, the unquantized FILE (--quantize) or else the base;
    the dev-set gate compares it with the serving version (or the base).
    """
    force_reason = _force_reason(force, reason)
    if force_reason and not promote:
        raise click.UsageError("--force promotes: it does not go with --no-promote")
    options = ImportOptions(
        base=base, quantize=quantize, reference=Path(reference) if reference else None,
        expected_sha256=expected_sha256, parity_bounds=ParityBounds(min_top1_agreement=min_top1, max_mean_kl=max_kl),
        probes=DEFAULT_PROBES[:probes], dev_tasks=load_suite("dev")[:dev_tasks] if dev_tasks else (),
        max_regression=max_regression, promote=promote, force_reason=force_reason,
    )
    result = asyncio.run(import_checkpoint(file, options, registry=_registry(registry_dir)))
    v = result.version
    click.echo(f"{v.id}: {v.kind} {Path(v.source).name} sha256 {v.source_sha256[:16]}… -> {v.state}"
               + (f" (forced: {v.forced})" if v.forced else ""))
    if result.parity:
        p = result.parity
        click.echo(f"parity: top-1 agreement {p.top1_agreement:.3f}, mean KL {p.mean_kl:.4f} "
                   f"({p.prompts} prompts, {p.positions} positions, {p.wall_s:.1f}s)")
    if result.dev:
        d = result.dev
        click.echo(f"dev: {d.candidate_success_rate:.0%} vs serving {d.serving_success_rate:.0%} "
                   f"on {len(d.tasks)} tasks ({d.wall_s:.1f}s)")
    for line in result.skipped:
        click.echo(f"skipped {line}")


@checkpoint.command("list")
@click.option("--json", "as_json", is_flag=True, help="The registry as JSON.")
@_registry_option
def list_(as_json: bool, registry_dir: str | None) -> None:
    """Every registered version with its state and gate results."""
    reg = _registry(registry_dir)
    if as_json:
        click.echo(json.dumps(reg.dump(), indent=2))
        return
    for v in reg.versions():
        parity = v.gates.get("parity")
        dev = v.gates.get("dev")
        figures = []
        if parity:
            figures.append(f"top1 {parity['top1_agreement']:.3f} KL {parity['mean_kl']:.4f}")
        if dev:
            figures.append(f"dev {dev['candidate_success_rate']:.0%}/{dev['serving_success_rate']:.0%}")
        if v.forced:
            figures.append(f"forced: {v.forced}")
        click.echo(f"{v.id:>4} {v.state:<9} {v.kind:<7} {v.quant_type or '-':<7} {v.source_sha256[:12]} "
                   f"{Path(v.source).name}  {'; '.join(figures)}")


@checkpoint.command("promote")
@click.argument("version")
@_force_options
@_registry_option
def promote(version: str, force: bool, reason: str | None, registry_dir: str | None) -> None:
    """Serve VERSION: its files are re-hashed, and its gates must have passed (or --force --reason)."""
    v = _registry(registry_dir).promote(version, force_reason=_force_reason(force, reason))
    click.echo(f"serving {v.id}" + (f" (forced: {v.forced})" if v.forced else ""))


@checkpoint.command("rollback")
@click.option("--to", "to", default=None, help="Version to serve (default: the one that served before).")
@_registry_option
def rollback(to: str | None, registry_dir: str | None) -> None:
    """Serve the previous version again (its files are re-hashed first)."""
    v = _registry(registry_dir).rollback(to)
    click.echo(f"serving {v.id}")
