r"""Memory placement and the answer path, switch by switch, on a task split (prints a table; not a test).

Runs the harness mode of each selected task once per variant of η's ``memory`` section and the
``asked_back`` policy, and reports per variant: tasks passed, runs that ended in an answer
(``finish``) rather than a question sent back (``ask_user``), and mean steps. Variants:

- ``on``: the defaults (``MemorySettings.defaults()``);
- ``legacy``: every switch off (``MemorySettings.legacy()``, no ``asked_back``): the harness as
  it was before issue 35;
- ``no-<key>``: the defaults with one switch off (``recall``, ``budget``, ``dated``,
  ``standing_wishes``, ``answers``, ``keep_search``, ``whole_closes_search``, ``as_messages``,
  ``drop_recall_note``, ``asked_back``); ``no-<key>+<key>`` turns off several;
- ``with-<key>``: the defaults with a switch on that is off by default (``newest_last``), or
  any switch set on; ``with-<key>+<key>`` turns on several.

Tune on dev only. Every run loads the GGUF model: run it under the model lock::

    flock /work/runs/model.lock .venv/bin/python bench/bench_memory_answer.py --split dev \\
        --group memory --limit 20 --variants on legacy --out /tmp/memory_answer.json

    flock /work/runs/model.lock .venv/bin/python bench/bench_memory_answer.py --split dev \\
        --group memory --limit 20 --variants on with-newest_last --out /tmp/memory_newest_last.json

    flock /work/runs/model.lock .venv/bin/python bench/bench_memory_answer.py --split dev \\
        --group memory --limit 20 --variants on no-whole_closes_search no-as_messages \\
        no-whole_closes_search+as_messages+drop_recall_note --out /tmp/memory_whole_messages.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from pocketpilot.adapters.placement import MemorySettings
from pocketpilot.evaluation.task_episode import HarnessKit, load_harness_kit, run_task_episode
from pocketpilot.tasks import load_suite

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report_io import say as _say  # noqa: E402

KEYS = ("recall", "budget", "dated", "standing_wishes", "answers", "keep_search", "whole_closes_search",
        "as_messages", "drop_recall_note")
"""Switches on by default (``MemorySettings.defaults()``): their ``no-`` variant turns one off."""
OFF_KEYS = ("newest_last",)
"""Switches off by default: their ``with-`` variant turns one on."""
BOOL_KEYS = tuple(k for k in (*KEYS, *OFF_KEYS) if k != "budget")
VARIANTS = ("on", "legacy", *(f"no-{k}" for k in (*KEYS, "asked_back")), *(f"with-{k}" for k in OFF_KEYS))


def _keys(name: str, prefix: str) -> list[str]:
    """The switches of a ``with-``/``no-`` variant joined by ``+`` (empty for any other name)."""
    keys = name[len(prefix):].split("+") if name.startswith(prefix) else []
    return keys if keys and all(k in BOOL_KEYS for k in keys) else []


def variant_kit(base: HarnessKit, name: str) -> HarnessKit:
    """The kit whose η has the variant's ``memory`` section and policy set."""
    eta = base.eta
    assert eta is not None, "the variants are η settings: the kit needs an η"
    settings = MemorySettings.defaults()
    policies = list(eta.policies)
    if name == "legacy":
        settings = MemorySettings.legacy()
        policies = [p for p in policies if p.name != "asked_back"]
    elif name == "no-asked_back":
        policies = [p for p in policies if p.name != "asked_back"]
    elif name == "no-budget":
        settings = settings.model_copy(update={"budget": 0})
    elif keys := _keys(name, "no-"):
        settings = settings.model_copy(update=dict.fromkeys(keys, False))
    elif keys := _keys(name, "with-"):
        settings = settings.model_copy(update=dict.fromkeys(keys, True))
    elif name != "on":
        raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    return HarnessKit(base.library, eta=eta.model_copy(update={"memory": settings, "policies": policies}))


def _variant(name: str) -> str:
    """A known variant, or ``with-``/``no-`` and switches joined by ``+`` (argparse's type check)."""
    if name in VARIANTS or _keys(name, "with-") or _keys(name, "no-"):
        return name
    raise argparse.ArgumentTypeError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}, "
                                     "with-<key>+<key>, no-<key>+<key>")


def _actions(episode: Any) -> list[str]:
    """Each step's action, a tool call as its tools' names (what the planner did first, and how often it searched)."""
    return ["+".join(c.name for c in s.action.calls) if s.action is not None and s.action.kind == "tool_call"
            else (s.action.kind if s.action is not None else "unparsed") for s in episode.steps]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every selected task once per variant, on one loaded planner; the report as a dict."""
    from pocketpilot.harness.planners import LlamaCppPlanner

    tasks = [t for t in load_suite(args.split, directory=args.tasks)
             if (not args.group or t.group == args.group) and (not args.task_id or t.id in args.task_id)]
    tasks = tasks[: args.limit] if args.limit else tasks
    if not tasks:
        raise SystemExit("no task selected")
    base = load_harness_kit()
    planner = LlamaCppPlanner(args.model, n_ctx=args.n_ctx)
    report: dict[str, Any] = {"tasks": [t.id for t in tasks], "variants": {}}
    try:
        for name in args.variants:
            kit = variant_kit(base, name)
            rows = []
            for task in tasks:
                episode, _ = await run_task_episode(task, planner, mode="harness", kit=kit)
                rows.append({"task": task.id, "success": bool(episode.verdict and episode.verdict.success),
                             "stop": episode.stop_reason, "steps": len(episode.steps),
                             "recalled": len(episode.header.recalled), "actions": _actions(episode)})
                _say(f"{name:18} {task.id:44} {rows[-1]['stop']:10} {'PASS' if rows[-1]['success'] else 'fail'}")
            report["variants"][name] = {
                "passed": sum(r["success"] for r in rows), "n": len(rows),
                "answered": sum(r["stop"] == "finish" for r in rows),
                "asked_user": sum(r["stop"] == "ask_user" for r in rows),
                "mean_steps": statistics.mean(r["steps"] for r in rows),
                "searches": sum(a == "memory_search" for r in rows for a in r["actions"]), "rows": rows,
            }
    finally:
        await planner.aclose()
    return report


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run the variants, print the table (and write the JSON report)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", default="dev", choices=["dev", "evolve", "test"])
    parser.add_argument("--tasks", type=Path, default=None, help="a task folder instead of the bundled suite")
    parser.add_argument("--group", default="memory", help="only this capability group ('' for all)")
    parser.add_argument("--task-id", action="append", default=[])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--model", default="default")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--variants", nargs="+", default=["on", "legacy"], type=_variant,
                        help=f"any of {', '.join(VARIANTS)}; with-<key>+<key> turns on several off-by-default switches")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    report = asyncio.run(run(args))
    _say("\n| variant | passed | answered (finish) | asked back (ask_user) | mean steps | memory searches |"
         "\n|---|---|---|---|---|---|")
    for name, v in report["variants"].items():
        _say(f"| {name} | {v['passed']}/{v['n']} | {v['answered']} | {v['asked_user']} | {v['mean_steps']:.1f} |"
             f" {v['searches']} |")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
