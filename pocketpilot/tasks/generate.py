"""The task factory: templates × a world's declared tools → validated, executable task files.

For each template, in proportion to its weight, drafts are drawn (:mod:`.families`) with a
random generator seeded by ``(seed, template id, template version)``, so the same inputs give
the same tasks byte for byte. A draft becomes a task only if it passes every check of
:mod:`.validate`; one that fails is dropped and counted under the check, never written.
Splits are assigned per template in a fixed rotation (6 dev : 2 evolve : 2 test), so every
split holds every family and difficulty; goals never repeat, within or across splits.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .catalogue import Catalogue
from .families import Draft, Drafter
from .gen_world import GenWorld
from .split_index import SPLITS_KEY, split_index_of
from .template import Template, TemplateSet, load_templates
from .validate import CHECKS, validate_task

__all__ = ["GENERATOR_VERSION", "Generation", "generate", "generate_async", "write_tasks"]

logger = logging.getLogger(__name__)

GENERATOR_VERSION = "pocketpilot.gen/1"
_ROTATION = ("dev", "dev", "evolve", "dev", "test", "dev", "dev", "evolve", "dev", "test")
_TRIES_PER_TASK = 6
_CATALOGUES: dict[tuple[int, str, int], Catalogue] = {}
"""Probed calls by (world, pools, seed): probing is most of a run's time and gives the same calls
for the same inputs (a world is not changed by probing: every probe runs on a fresh start)."""


@dataclass
class Generation:
    """What a generation run produced: the tasks (task-file dicts), what was dropped and why, how long it took."""

    tasks: list[dict[str, Any]]
    drops: Counter[str] = field(default_factory=Counter)
    """Validation checks that dropped drafts (see :data:`~.validate.CHECKS`)."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Drafts never validated: ``no_instance`` (nothing fitted), ``duplicate_goal``."""
    seconds: float = 0.0
    seed: int = 0
    templates_digest: str = ""
    world: str = ""
    per_template: dict[str, int] = field(default_factory=dict)
    difficulty: dict[str, str] = field(default_factory=dict)
    """Template id → difficulty (task files carry no difficulty; the manifest does)."""
    template_of: dict[str, str] = field(default_factory=dict)
    """Task id → the template it came from."""

    def manifest(self) -> dict[str, Any]:
        """The record written beside the tasks: versions, inputs, counts, drops, time."""
        by = Counter((t["group"], t["split"]) for t in self.tasks)
        return {
            "generator": GENERATOR_VERSION,
            "world": self.world,
            "seed": self.seed,
            "templates_digest": self.templates_digest,
            "tasks": len(self.tasks),
            "per_template": self.per_template,
            "by_group_split": {f"{g}/{s}": n for (g, s), n in sorted(by.items())},
            "by_domain": dict(sorted(Counter(d for t in self.tasks for d in t["domains"]).items())),
            "by_difficulty": dict(sorted(Counter(self.difficulty[self.template_of[t["id"]]]
                                                 for t in self.tasks).items())),
            "drops": {c: self.drops.get(c, 0) for c in CHECKS},
            "skipped": dict(self.skipped),
            "seconds": round(self.seconds, 2),
            # which file is in which split, readable without opening a task (see tasks.split_index)
            SPLITS_KEY: split_index_of(self.tasks),
        }


def _quotas(templates: list[Template], count: int) -> dict[str, int]:
    total = sum(t.weight for t in templates) or 1
    raw = {t.id: count * t.weight / total for t in templates}
    quotas = {k: int(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: (quotas[k] - raw[k], k))[: count - sum(quotas.values())]:
        quotas[k] += 1
    return quotas


def _task(world: GenWorld, template: Template, draft: Draft, index: int, prefix: str) -> dict[str, Any]:
    oracle_len = len(draft.oracle) + sum(len(s["delegate"]["steps"]) for s in draft.oracle if "delegate" in s)
    data: dict[str, Any] = {
        "id": f"{prefix}{template.id}-{index:04d}",
        "goal": draft.goal,
        "capability": template.capability,
        "group": template.group,
        "split": _ROTATION[index % len(_ROTATION)],
        "domains": world.domains(draft.tools),
        **world.task_fields(draft.tools, draft.initial_state),
    }
    if draft.memory:
        data["memory"] = draft.memory
    data["max_steps"] = min(100, oracle_len + template.max_steps_extra)
    criteria = draft.criteria
    if template.criteria_keep is not None:
        criteria = [c for c in criteria if c["kind"] in template.criteria_keep]
    data["criteria"] = [*criteria, *template.criteria_extra]
    data["oracle"] = draft.oracle
    return data


async def generate_async(
    world: GenWorld,
    templates: TemplateSet | None = None,
    *,
    count: int = 100,
    seed: int = 0,
    only: list[str] | None = None,
    prefix: str = "gen-",
    existing_goals: set[str] | None = None,
) -> Generation:
    """Generate about ``count`` validated tasks on ``world`` (fewer if templates run dry).

    Args:
        world: The world (sandbox or a user's).
        templates: Templates and pools (default: the bundled ones).
        count: Tasks wanted, shared among templates by weight.
        seed: Everything random is derived from it.
        only: Template ids to use (default: all).
        prefix: Task id prefix.
        existing_goals: Goals already taken (e.g. by the bundled suite): never repeated.
    """
    t0 = time.monotonic()
    ts = templates or load_templates()
    chosen = [t for t in ts.templates if only is None or t.id in only]
    key = (id(world), ts.pools.model_dump_json(), seed)
    catalogue = _CATALOGUES.get(key)
    if catalogue is None or catalogue.world is not world:
        catalogue = _CATALOGUES[key] = await Catalogue(world, ts.pools, seed=seed).build()
        while len(_CATALOGUES) > 4:
            _CATALOGUES.pop(next(iter(_CATALOGUES)))
    drafter = Drafter(world, catalogue, ts.pools)
    gen = Generation(tasks=[], seed=seed, templates_digest=ts.digest, world=world.name)
    goals = {" ".join(g.lower().split()) for g in (existing_goals or set())}
    for template, quota in ((t, q) for t in chosen if (q := _quotas(chosen, count)[t.id]) > 0):
        rng = random.Random(f"{seed}:{template.id}:{template.version}")
        made = 0
        for _ in range(quota * _TRIES_PER_TASK):
            if made >= quota:
                break
            draft = await drafter.draft(template, rng)
            if draft is None or not draft.goal:
                gen.skipped["no_instance"] += 1
                continue
            key = " ".join(draft.goal.lower().split())
            if key in goals:
                gen.skipped["duplicate_goal"] += 1
                continue
            data = _task(world, template, draft, made, prefix)
            failed = await validate_task(world, data)
            if failed is not None:
                gen.drops[failed] += 1
                logger.debug("dropped %s draft (%s): %s", template.id, failed, draft.goal)
                continue
            goals.add(key)
            gen.tasks.append(data)
            gen.template_of[data["id"]] = template.id
            made += 1
        gen.per_template[template.id] = made
        gen.difficulty[template.id] = template.difficulty
    gen.seconds = time.monotonic() - t0
    return gen


def generate(world: GenWorld, templates: TemplateSet | None = None, **kwargs: Any) -> Generation:
    """Blocking form of :func:`generate_async` (for the CLI and scripts)."""
    return asyncio.run(generate_async(world, templates, **kwargs))


def write_tasks(gen: Generation, directory: str | Path, *, clean: bool = False) -> list[Path]:
    """Write one YAML file per task (``<id>.yaml``) and ``MANIFEST.yml`` (not a task: the loader skips it).

    ``clean`` first removes the folder's earlier generated files (``<prefix>*.yaml``) so a rerun
    leaves no stale task behind.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    if clean:
        for old in out.glob("*.yaml"):
            old.unlink()
    paths = []
    for task in gen.tasks:
        path = out / f"{task['id']}.yaml"
        path.write_text(yaml.safe_dump(task, sort_keys=False, allow_unicode=True, width=120),
                        encoding="utf-8")
        paths.append(path)
    manifest = gen.manifest()
    manifest.pop("seconds")  # the record of a committed suite must not change with the machine's speed
    (out / "MANIFEST.yml").write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    return paths
