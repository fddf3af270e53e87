r"""How the harness briefs a sub-agent, switch by switch, on a task split (prints a table; not a test).

Runs the harness mode of each selected task once per variant of η's ``delegation`` section
(:mod:`pocketpilot.adapters.delegation`) and reports per variant: tasks passed, delegations,
sub-agents started, sub-agents equipped (at least one successful tool call), sub-agents
confirmed, artifacts the brief dropped or carried (runs with the notice), and the stops.
Variants:

- ``off``: no section (the harness as it runs today; η hashes as before);
- ``on``: every switch on (``DelegationSettings.all_on()``);
- ``no-<switch>``: every switch on but that one (``app_tools``, ``app_lookups``, ``show_request``, ``guidance``,
  ``grounded_artifacts``, ``carry_ids``); ``no-<switch>+<switch>`` turns off several;
- ``only-<switch>``: that switch alone; ``only-<switch>+<switch>`` several.

A switch enters the default set only after it measures as a gain on dev. Tune on dev only.
Every run loads the GGUF model: run it under the model lock, and never on more tasks than the
lead asked for. The traces go to ``--trace-dir``/<variant>/, and each finished run is written
to ``--out`` at once: the same command with ``--resume`` goes on where a killed run stopped
(it refuses a report of another model or task selection)::

    flock /work/runs/model.lock .venv/bin/python bench/bench_handoff.py --tasks pocketpilot/tasks/suite \
        --split dev --task-id gen-handoff-read-0088 --task-id gen-handoff-id-0051 \
        --model qwen2.5-coder-1.5b --variants off on --trace-dir /tmp/handoff --out /tmp/handoff.json

``--decode-memo PATH`` serves a step whose prompt a variant did not change (a parent's first
step) from the memo (:mod:`pocketpilot.harness.planners.decode_memo`); use it for the counts,
never for wall time.

``--policy NAME`` (repeatable) adds a registered policy that is not in the default set to η's
policy set for every variant (``repeat_delegation``: a repeat of a confirmed delegation is held);
the report's meta records it, and a resume under other policies is refused.

``--policy-param NAME.KEY=VALUE`` (repeatable) sets a parameter of a policy in η's policy set
for every variant (VALUE read as JSON, else as a string); a policy the set lacks is added with
it. ``--variants off --policy-param repeat_delegation.unconfirmed=true`` runs today's default
plus the hold of a delegation whose two latest runs went unconfirmed the same way. A policy
that does not take the key, or a value it refuses, is a usage error (exit 2) before any model
loads; the report's meta records the parameters, and a resume under others is refused.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.adapters.delegation import SWITCHES, DelegationSettings  # noqa: E402
from pocketpilot.contracts import Delegate, Episode  # noqa: E402
from pocketpilot.errors import PocketPilotError, UsageError  # noqa: E402
from pocketpilot.evaluation.task_episode import HarnessKit, load_harness_kit, run_task_episode  # noqa: E402
from pocketpilot.harness import Planner  # noqa: E402
from pocketpilot.tasks import TaskSpec  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _planner import llama_planner, task_window  # noqa: E402
from _report_io import save_report as _save  # noqa: E402
from _report_io import say as _say  # noqa: E402
from _report_io import timed_report  # noqa: E402

VARIANTS = ("off", "on", *(f"no-{s}" for s in SWITCHES), *(f"only-{s}" for s in SWITCHES))
PlannerFor = Callable[[TaskSpec, str], Planner]
"""The planner for one (task, variant) run (tests: a scripted planner)."""


def _keys(name: str, prefix: str) -> list[str]:
    """The switches of a ``no-``/``only-`` variant joined by ``+`` (empty for any other name)."""
    keys = name[len(prefix):].split("+") if name.startswith(prefix) else []
    return keys if keys and all(k in SWITCHES for k in keys) else []


def settings_of(name: str) -> DelegationSettings | None:
    """The ``delegation`` section of a variant (None: ``off``, no section)."""
    if name == "off":
        return None
    if name == "on":
        return DelegationSettings.all_on()
    if keys := _keys(name, "no-"):
        return DelegationSettings.all_on().model_copy(update=dict.fromkeys(keys, False))
    if keys := _keys(name, "only-"):
        return DelegationSettings(**dict.fromkeys(keys, True))
    raise UsageError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}, no-<a>+<b>, only-<a>+<b>")


def variant_kit(base: HarnessKit, name: str) -> HarnessKit:
    """The kit whose η has the variant's ``delegation`` section (and nothing else changed)."""
    if base.eta is None:
        raise UsageError("the variants are η settings: the kit needs an η")
    return HarnessKit(base.library, eta=base.eta.model_copy(update={"delegation": settings_of(name)}))


def with_policies(base: HarnessKit, names: Sequence[str]) -> HarnessKit:
    """The kit whose η also runs the registered policies ``names``.

    Raises:
        UsageError: no η, or a name that is no registered policy.
    """
    from pocketpilot.adapters.eta import PolicyEntry
    from pocketpilot.policy_registry import registered

    if base.eta is None:
        raise UsageError("--policy is an η setting: the kit needs an η")
    unknown = [n for n in names if n not in registered()]
    if unknown:
        raise UsageError(f"unknown policy {', '.join(unknown)}; known: {', '.join(registered())}")
    have = {p.name for p in base.eta.policies}
    added = [PolicyEntry(name=n) for n in dict.fromkeys(names) if n not in have]
    return HarnessKit(base.library, eta=base.eta.model_copy(update={"policies": [*base.eta.policies, *added]}))


def policy_param(text: str) -> tuple[str, str, Any]:
    """``NAME.KEY=VALUE`` as (name, key, value): VALUE read as JSON, else taken as a string.

    Raises:
        UsageError: not of that form.
    """
    target, sep, raw = text.partition("=")
    name, dot, key = target.partition(".")
    if not sep or not dot or not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", name) or not key.isidentifier():
        raise UsageError(f"--policy-param {text!r}: expected NAME.KEY=VALUE (e.g. repeat_delegation.unconfirmed=true)")
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return name, key, value


def with_policy_params(base: HarnessKit, settings: Sequence[tuple[str, str, Any]]) -> HarnessKit:
    """The kit whose η runs its policies with these (name, key, value) parameters set.

    Each is set on η's entries of that name (a later one of the same key wins); a policy η's set
    lacks is added with them. Each changed entry is built once here, so a parameter the policy
    does not take, or a value it refuses, fails before a run.

    Raises:
        UsageError: no η, an unknown policy, a key the policy does not take, or a value it refuses.
    """
    from pocketpilot.adapters.eta import PolicyEntry
    from pocketpilot.policy_registry import PolicyError, build, registered

    if base.eta is None:
        raise UsageError("--policy-param is an η setting: the kit needs an η")
    wanted: dict[str, dict[str, Any]] = {}
    for name, key, value in settings:
        cls = registered().get(name)
        if cls is None:
            raise UsageError(f"--policy-param: unknown policy {name!r}; known: {', '.join(registered())}")
        takes = [p.name for p in inspect.signature(cls).parameters.values()
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if key not in takes:
            raise UsageError(f"--policy-param: policy {name!r} takes no parameter {key!r}; "
                             f"it takes: {', '.join(takes) or 'none'}")
        wanted.setdefault(name, {})[key] = value
    have = {p.name for p in base.eta.policies}
    policies = [p.model_copy(update={"params": {**p.params, **wanted[p.name]}}) if p.name in wanted else p
                for p in base.eta.policies]
    policies += [PolicyEntry(name=n, params=params) for n, params in wanted.items() if n not in have]
    for entry in policies:
        if entry.name in wanted:
            try:
                build([entry.model_dump(mode="json")])
            except PolicyError as exc:
                raise UsageError(f"--policy-param: {exc}") from exc
    return HarnessKit(base.library, eta=base.eta.model_copy(update={"policies": policies}))


def _variant(name: str) -> str:
    try:
        settings_of(name)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return name


def record(task: TaskSpec, episode: Episode, wall_s: float) -> dict[str, Any]:
    """One run's row: its verdict and stop, and what its delegations handed over and got back."""
    delegations = [s for s in episode.steps if isinstance(s.action, Delegate)]
    children = [c for s in delegations for c in s.children]
    codes = [n.code for s in delegations for n in s.notices]
    return {
        "task": task.id,
        "success": bool(episode.verdict and episode.verdict.success),
        "stop": episode.stop_reason,
        "steps": len(episode.steps),
        "delegations": len(delegations),
        "children": len(children),
        "equipped": sum(any(r is not None and r.ok for _, _, r in c.tool_calls()) for c in children),
        "confirmed": sum(bool(s.results and s.results[0].ok) for s in delegations),
        "dropped": codes.count("artifacts_ungrounded"),
        "carried": codes.count("artifacts_carried"),
        "child_tools": [len(c.header.tools) for c in children],
        "wall_s": round(wall_s, 1),
    }


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A variant's totals over its runs."""
    return {
        "passed": sum(r["success"] for r in rows), "n": len(rows),
        **{k: sum(r[k] for r in rows) for k in ("delegations", "children", "equipped", "confirmed", "dropped",
                                                "carried")},
        "stops": dict(sorted(Counter(r["stop"] for r in rows).items())),
    }


def table(report: dict[str, Any]) -> str:
    """The per-variant table, Markdown."""
    lines = ["| variant | passed | delegations | children | equipped | confirmed | dropped | carried | stops |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, v in report["variants"].items():
        stops = ", ".join(f"{k} {n}" for k, n in v["stops"].items())
        lines.append(f"| {name} | {v['passed']}/{v['n']} | {v['delegations']} | {v['children']} | {v['equipped']} |"
                     f" {v['confirmed']} | {v['dropped']} | {v['carried']} | {stops} |")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--tasks", default=None, help="a task folder (default: the bundled hand-written suite)")
    ap.add_argument("--split", choices=["dev", "evolve"], default="dev", help="tune on dev (evolve for a check)")
    ap.add_argument("--task-id", action="append", default=[], help="only these tasks (repeatable)")
    ap.add_argument("--group", action="append", default=[], help="only these capability groups (repeatable)")
    ap.add_argument("--per-group", type=int, default=None, help="N evenly spaced tasks of each group (as bench)")
    ap.add_argument("--limit", type=int, default=None, help="at most N tasks (as bench)")
    ap.add_argument("--variants", nargs="+", default=["off", "on"], type=_variant,
                    help=f"any of {', '.join(VARIANTS)}; no-<a>+<b> and only-<a>+<b> for several switches")
    ap.add_argument("--trace-dir", type=Path, default=None, help="traces, one folder per variant")
    ap.add_argument("--out", type=Path, default=None, help="the JSON report, written as runs finish (the resume state)")
    ap.add_argument("--resume", action="store_true", help="skip the runs --out already holds")
    ap.add_argument("--model", default="default", help="catalogue name or .gguf path")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    ap.add_argument("--n-ctx", type=int, default=None, help="context window (default: the largest a task asks, else 8192)")
    ap.add_argument("--max-tokens", type=int, default=256, help="most tokens one action may take")
    ap.add_argument("--decode-memo", type=Path, default=None, metavar="PATH",
                    help="serve decodes an earlier run made from this JSONL memo (counts only, not wall time)")
    ap.add_argument("--policy", action="append", default=[], metavar="NAME",
                    help="add this registered policy to η's policy set for every variant (repeatable)")
    ap.add_argument("--policy-param", action="append", default=[], metavar="NAME.KEY=VALUE",
                    help="set a parameter of a policy in η's policy set (added if missing) for every variant; "
                         "VALUE is JSON, else a string (repeatable)")
    ap.add_argument("--no-embedder", dest="embedder", action="store_false",
                    help="keyword-only memory retrieval (bench's default is the MiniLM embedder)")
    return ap


def _llama(args: argparse.Namespace, tasks: Sequence[TaskSpec]) -> Planner:
    """The in-process planner, built as ``pocketpilot bench`` builds it from the same flags."""
    return llama_planner(args.model, max_tokens=args.max_tokens, n_ctx=task_window(args.n_ctx, tasks),
                         threads=args.threads)


def _load(out: Path | None, resume: bool, meta: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """The runs an earlier report holds, by variant and task (empty unless resuming).

    Raises:
        UsageError: ``--resume`` without ``--out``, or a report of another model, task selection,
            added policies or policy parameters.
    """
    if not resume:
        return {}
    if out is None:
        raise UsageError("--resume needs --out (the report that holds the earlier runs)")
    if not out.exists():
        return {}  # nothing finished yet: as ``pocketpilot bench --resume``, start from the beginning
    old = json.loads(out.read_text(encoding="utf-8"))
    for key in ("model", "split", "tasks", "policies", "policy_params"):
        if old.get("meta", {}).get(key) != meta.get(key):
            raise UsageError(f"--out holds a report of another {key}: {old.get('meta', {}).get(key)!r}")
    return {v: {r["task"]: r for r in data.get("rows", [])} for v, data in old.get("variants", {}).items()}


def _report(meta: dict[str, Any], done: dict[str, dict[str, dict[str, Any]]], variants: Sequence[str],
            tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    out: dict[str, Any] = {"meta": meta, "variants": {}}
    for name in variants:
        rows = [done[name][t.id] for t in tasks if t.id in done.get(name, {})]
        out["variants"][name] = {**summary(rows), "rows": rows}
    return out


async def run_variants(tasks: Sequence[TaskSpec], variants: Sequence[str], planner_for: PlannerFor, *,
                       kit: HarnessKit, meta: dict[str, Any], done: dict[str, dict[str, dict[str, Any]]],
                       trace_dir: Path | None = None, out: Path | None = None, embedder: Any = None) -> dict[str, Any]:
    """Every selected task once per variant (skipping those ``done``), saving after each run."""
    for name in variants:
        vkit = variant_kit(kit, name)
        for task in tasks:
            if task.id in done.get(name, {}):
                continue
            t0 = time.monotonic()
            episode, _ = await run_task_episode(task, planner_for(task, name), mode="harness", kit=vkit,
                                                embedder=embedder,
                                                trace_dir=trace_dir / name if trace_dir is not None else None)
            row = record(task, episode, time.monotonic() - t0)
            done.setdefault(name, {})[task.id] = row
            _say(f"{name:28} {task.id:34} {row['stop']:10} {'PASS' if row['success'] else 'fail'}"
                 f"  delegations {row['delegations']}, equipped {row['equipped']}/{row['children']}")
            _save(out, _report(meta, done, variants, tasks))
    return _report(meta, done, variants, tasks)


def main(argv: Sequence[str] | None = None, *, planner_for: PlannerFor | None = None,
         kit: HarnessKit | None = None) -> int:
    """Run the variants and print the table; 2 with one line on bad input.

    ``planner_for`` and ``kit`` replace the model and the bundled kit (tests: a scripted planner).
    """
    from pocketpilot.cli.bench import select_tasks

    args = _parser().parse_args(argv)
    try:
        tasks = select_tasks(args.split, tuple(args.task_id), tuple(args.group), args.limit, args.per_group,
                             directory=args.tasks)
        kit = kit if kit is not None else load_harness_kit()
        meta = {"model": args.model if planner_for is None else "injected", "split": args.split,
                "tasks": [t.id for t in tasks], "decode_memo": str(args.decode_memo) if args.decode_memo else None}
        if args.policy:
            kit = with_policies(kit, args.policy)
            meta["policies"] = list(args.policy)
        if args.policy_param:
            settings = [policy_param(p) for p in args.policy_param]
            kit = with_policy_params(kit, settings)
            meta["policy_params"] = {}
            for name, key, value in settings:
                meta["policy_params"].setdefault(name, {})[key] = value
        done = _load(args.out, args.resume, meta)
        memo = None
        if args.decode_memo is not None:
            from pocketpilot.harness.planners.decode_memo import DecodeMemo

            memo = DecodeMemo(args.decode_memo)
    except PocketPilotError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    embedder = None
    if planner_for is None and args.embedder:
        from pocketpilot.cli._embedder import default_embedder

        embedder = default_embedder()
    planner = _llama(args, tasks) if planner_for is None else None
    choose: PlannerFor = planner_for or (lambda task, name: planner)  # type: ignore[arg-type,return-value]
    if memo is not None:
        from pocketpilot.harness.planners.decode_memo import MemoPlanner

        inner = choose
        choose = lambda task, name: MemoPlanner(inner(task, name), memo)  # noqa: E731
    _say(f"{len(tasks)} task(s) of the {args.split} split; variants {', '.join(args.variants)}")

    runs = run_variants(tasks, args.variants, choose, kit=kit, meta=meta, done=done,
                        trace_dir=args.trace_dir, out=args.out, embedder=embedder)
    report = asyncio.run(timed_report(runs, meta, planner=planner))
    _save(args.out, report)
    _say("")
    _say(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
