"""`pocketpilot sandbox apps`: what the sandbox world holds (apps, domains, tools)."""

from __future__ import annotations

import json

import click

from ..executor.sandbox import SandboxPhone

__all__ = ["sandbox"]

sandbox = click.Group("sandbox", help="Inspect the sandbox phone's apps and tools.")


@sandbox.command("apps")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: apps with their tools' specs.")
@click.option("--tools", "show_tools", is_flag=True, help="List each app's tools with their declared effect.")
def apps(as_json: bool, show_tools: bool) -> None:
    """List the sandbox apps by domain, with tool counts and totals."""
    catalog = SandboxPhone().catalog()
    if as_json:
        click.echo(json.dumps({
            "apps": [a.model_dump(mode="json") for a in catalog.apps],
            "totals": {"apps": len(catalog.apps), "tools": catalog.tool_count, "domains": len(catalog.domains)},
        }, indent=1))
        return
    for domain, names in catalog.by_domain().items():
        click.echo(f"{domain}:")
        for entry in (a for a in catalog.apps if a.name in names):
            click.echo(f"  {entry.name:<14} {len(entry.tools):>3} tools  {entry.description}")
            if show_tools:
                for spec in entry.tools:
                    click.echo(f"      {spec.name:<28} {spec.effect_label()}")
    click.echo(f"{len(catalog.apps)} apps, {catalog.tool_count} tools, {len(catalog.domains)} domains")
