r"""Long histories: the long-history tasks bare vs harness on one planner, with the lift from the same run.

Bare gets the newest of the owner's history that fits its context window, the oldest left out
first (``pocketpilot.evaluation.bare_window``); the harness gets the store. Modes run
interleaved task by task on one loaded model. Printed and saved, per mode and per kind of task
(``question``: about the past, judged by its answer; ``action``: needs a stated wish):

- tasks passed (the verifier's verdict) and the lift in points;
- questions: answered (the run ended with ``finish``) against asked back (``ask_user``), and
  token F1 of what the finish said against the answer (SQuAD-style: lower case, no punctuation
  or articles, the best over the answer's declared forms);
- evidence shown: runs whose context held the memory with the answer before the first step
  (bare: among the history that fitted; harness: among what it recalled);
- median wall seconds and steps per task.

Usage (every run loads the GGUF model: under the model lock)::

    flock /work/runs/model.lock .venv/bin/python bench/bench_history.py --split dev --sample 12 \
        --n-ctx 8192 --out bench/results/history_dev.json --trace-dir /tmp/history_traces

``--variant``: the harness under one of ``bench_memory_answer.py``'s η variants (``on``, the
defaults, ``MemorySettings.defaults()``; ``no-<key>+<key>`` turns memory switches off,
``with-<key>+<key>`` on); the report records it and a resume refuses a report of another variant.

``--sample N``: N evenly spaced tasks, questions and actions in proportion (deterministic);
``--ids``: chosen tasks. ``--planner oracle`` replays each task's oracle (no model: checks the
plumbing). A rerun with the same ``--out`` skips the (task, mode) pairs it holds. Tune on dev;
the test split is measured once, at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import string
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.contracts import AskUser, Episode, Finish  # noqa: E402
from pocketpilot.errors import PocketPilotError  # noqa: E402
from pocketpilot.evaluation.compare import HarnessKit, load_harness_kit, run_task  # noqa: E402
from pocketpilot.harness import Planner  # noqa: E402
from pocketpilot.tasks import AnswerCriterion, TaskSpec, load_suite, oracle_actions  # noqa: E402
from pocketpilot.tasks.long_history import HISTORY_DIR, mentions  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _planner import llama_planner  # noqa: E402
from _report_io import save_report as _save  # noqa: E402
from bench_memory_answer import _variant, variant_kit  # noqa: E402

SCHEMA = "pocketpilot.bench.history/1"
MODES = ("bare", "harness")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_PRIOR = re.compile(r"\(\d{4}-\d\d-\d\d \d\d:\d\d\) ")
"""A message of earlier conversation as bare mode replays a memory: ``(2025-01-03 10:12) text``."""


def _tokens(text: str) -> list[str]:
    return _ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split()


def token_f1(said: str, gold: Sequence[str]) -> float:
    """SQuAD-style token F1 of ``said`` against the best of ``gold``'s forms (0.0 when nothing is said)."""
    best = 0.0
    pred = _tokens(said)
    for form in gold:
        ref = _tokens(form)
        common = sum((Counter(pred) & Counter(ref)).values())
        if not common:
            continue
        precision, recall = common / len(pred), common / len(ref)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def answer_forms(task: TaskSpec) -> list[str]:
    """A question's answer as written, then its declared equivalent forms (empty for an action)."""
    found = next((c for c in task.criteria if isinstance(c, AnswerCriterion)), None)
    return [*found.all_of, *found.any_of] if found is not None else []


def kind_of(task: TaskSpec) -> str:
    """``question`` (judged by its answer) or ``action`` (judged by the state it leaves)."""
    return "question" if answer_forms(task) else "action"


def said(episode: Episode) -> str:
    """What the run's final finish said to the user (its answer, then its summary), else nothing."""
    action = episode.final_action
    if not isinstance(action, Finish):
        return ""
    return str(getattr(action, "said", None) or action.summary)


def evidence_shown(task: TaskSpec, episode: Episode) -> bool | None:
    """Whether the context before the first step held the memory that answers a question (None: an action)."""
    forms = answer_forms(task)
    if not forms:
        return None
    return any(mentions(m.get("content", ""), f) for m in episode.header.preamble for f in forms)


def record(task: TaskSpec, mode: str, episode: Episode, success: bool, wall_s: float) -> dict[str, Any]:
    """One run's row of the report."""
    forms = answer_forms(task)
    final = episode.final_action
    return {
        "task_id": task.id, "mode": mode, "kind": kind_of(task), "success": success,
        "stop_reason": episode.stop_reason,
        "answered": isinstance(final, Finish), "asked_back": isinstance(final, AskUser),
        "f1": round(token_f1(said(episode), forms), 4) if forms else None,
        "evidence_shown": evidence_shown(task, episode),
        "prior_messages": sum(1 for m in episode.header.preamble if _PRIOR.match(m.get("content", ""))),
        "steps": len(episode.steps), "wall_s": round(wall_s, 3),
    }


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pass rate; for questions answered, asked back and mean F1; evidence shown; medians."""
    if not rows:
        return {"tasks": 0}
    out: dict[str, Any] = {"tasks": len(rows), "passed": sum(r["success"] for r in rows),
                           "pass_rate": sum(r["success"] for r in rows) / len(rows),
                           "median_wall_s": statistics.median(r["wall_s"] for r in rows),
                           "median_steps": statistics.median(r["steps"] for r in rows)}
    questions = [r for r in rows if r["kind"] == "question"]
    if questions:
        out |= {"questions": len(questions),
                "answered_rate": sum(r["answered"] for r in questions) / len(questions),
                "asked_back_rate": sum(r["asked_back"] for r in questions) / len(questions),
                "question_pass_rate": sum(r["success"] for r in questions) / len(questions),
                "mean_f1": statistics.fmean(r["f1"] for r in questions),
                "evidence_shown_rate": sum(bool(r["evidence_shown"]) for r in questions) / len(questions)}
    actions = [r for r in rows if r["kind"] == "action"]
    if actions:
        out |= {"actions": len(actions), "action_pass_rate": sum(r["success"] for r in actions) / len(actions)}
    return out


def report(tasks: Sequence[TaskSpec], done: dict[str, dict[str, dict[str, Any]]], meta: dict[str, Any]) -> dict[str, Any]:
    """The saved form: per-mode summaries and rows (in task order), and the lifts on paired tasks."""
    order = {t.id: i for i, t in enumerate(tasks)}
    runs = {mode: {"summary": summary(rows := sorted(by_id.values(), key=lambda r: order.get(r["task_id"], 0))),
                   "rows": rows} for mode, by_id in done.items()}
    out: dict[str, Any] = {"schema": SCHEMA, **meta, "task_ids": [t.id for t in tasks], "runs": runs}
    if "bare" in done and "harness" in done:
        both = sorted(set(done["bare"]) & set(done["harness"]))
        if both:
            pair = {m: summary([done[m][i] for i in both]) for m in ("bare", "harness")}
            out["paired_tasks"] = len(both)
            out["lift_points"] = round(100 * (pair["harness"]["pass_rate"] - pair["bare"]["pass_rate"]), 2)
            if "questions" in pair["bare"]:
                out["question_lift_points"] = round(
                    100 * (pair["harness"]["question_pass_rate"] - pair["bare"]["question_pass_rate"]), 2)
                out["f1_lift"] = round(pair["harness"]["mean_f1"] - pair["bare"]["mean_f1"], 4)
    return out


def table(data: dict[str, Any]) -> str:
    """The printed table: one row per mode, then the lifts."""
    rows = ["| mode | tasks | passed | questions passed | answered | asked back | token F1 | evidence shown "
            "| actions passed | median s | median steps |", "|" + "---|" * 11]

    def pct(s: dict[str, Any], key: str) -> str:
        return f"{100 * s[key]:.1f}%" if key in s else "-"

    for mode, run in data["runs"].items():
        s = run["summary"]
        if not s.get("tasks"):
            continue
        f1 = f"{s['mean_f1']:.3f}" if "mean_f1" in s else "-"
        cells = [mode, str(s["tasks"]), pct(s, "pass_rate"), pct(s, "question_pass_rate"), pct(s, "answered_rate"),
                 pct(s, "asked_back_rate"), f1, pct(s, "evidence_shown_rate"), pct(s, "action_pass_rate"),
                 f"{s['median_wall_s']:.1f}", str(s["median_steps"])]
        rows.append("| " + " | ".join(cells) + " |")
    if "lift_points" in data:
        line = f"lift (harness - bare, {data['paired_tasks']} paired tasks): {data['lift_points']:+.1f} points"
        if "question_lift_points" in data:
            line += f"; questions {data['question_lift_points']:+.1f} points, token F1 {data['f1_lift']:+.3f}"
        rows += ["", line]
    return "\n".join(rows)


def select(split: str | None, sample: int | None, ids: Sequence[str], directory: Path = HISTORY_DIR) -> list[TaskSpec]:
    """The tasks: chosen ids, or ``sample`` evenly spaced ones, questions and actions in proportion."""
    tasks = load_suite(split, directory=directory)  # type: ignore[arg-type]
    if ids:
        unknown = set(ids) - {t.id for t in tasks}
        if unknown:
            raise SystemExit(f"unknown task ids: {', '.join(sorted(unknown))}")
        return [t for t in tasks if t.id in ids]
    if not sample or sample >= len(tasks):
        return tasks
    kinds = {k: [t for t in tasks if kind_of(t) == k] for k in ("question", "action")}
    share = {k: max(1, round(sample * len(v) / len(tasks))) if v else 0 for k, v in kinds.items()}
    share["question"] = sample - share["action"] if kinds["question"] else 0
    picked = [v[i * len(v) // n] for k, v in kinds.items() if (n := min(share[k], len(v))) for i in range(n)]
    return sorted(picked, key=lambda t: t.id)


def load_done(out: Path | None, model: str, variant: str = "on") -> dict[str, dict[str, dict[str, Any]]]:
    """Rows already in ``out`` by mode and task id; a report of another planner or variant is refused."""
    if out is None or not out.exists():
        return {}
    data = json.loads(out.read_text())
    if data.get("schema") != SCHEMA:
        raise SystemExit(f"{out} is not a {SCHEMA} report; choose another --out")
    if (data.get("planner") or {}).get("model") not in (None, model):
        raise SystemExit(f"{out} holds runs of {data['planner']['model']}, not {model}")
    if data.get("variant", "on") != variant:
        raise SystemExit(f"{out} holds runs of the η variant {data.get('variant', 'on')}, not {variant}")
    return {mode: {r["task_id"]: r for r in run["rows"]} for mode, run in data.get("runs", {}).items()}


async def run_modes(tasks: Sequence[TaskSpec], planner_for: Callable[[TaskSpec, str], Planner], *,
                    modes: Sequence[str] = MODES, kit: HarnessKit | None = None, out: Path | None = None,
                    trace_dir: Path | None = None, meta: dict[str, Any] | None = None, embedder: Any = None,
                    log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every task in every mode, interleaved task by task; (task, mode) pairs in ``out`` are skipped."""
    meta = meta or {}
    done = load_done(out, (meta.get("planner") or {}).get("model", ""), meta.get("variant", "on"))
    for mode in modes:
        done.setdefault(mode, {})
    kit = kit if kit is not None else load_harness_kit()
    for i, task in enumerate(tasks):
        for mode in modes:
            if task.id in done[mode]:
                continue
            t0 = time.monotonic()
            sub = trace_dir / mode if trace_dir is not None else None
            episode, outcome = await run_task(task, planner_for(task, mode), mode=mode, kit=kit,  # type: ignore[arg-type]
                                              trace_dir=sub, embedder=embedder)
            row = record(task, mode, episode, outcome.success, time.monotonic() - t0)
            done[mode][task.id] = row
            extra = f" F1 {row['f1']:.2f}" if row["f1"] is not None else ""
            log(f"[{i + 1}/{len(tasks)}] {mode:<7} {task.id}: {'PASS' if row['success'] else 'fail'}"
                f" ({row['stop_reason']}{extra}, {row['steps']} steps, {row['wall_s']:.1f}s)")
            _save(out, report(tasks, done, meta))
    return report(tasks, done, meta)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print its table; exit 2 on bad arguments."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=["dev", "evolve", "test"], default="dev")
    ap.add_argument("--sample", type=int, default=None, help="N evenly spaced tasks (questions and actions)")
    ap.add_argument("--ids", default=None, help="comma-separated task ids")
    ap.add_argument("--tasks", type=Path, default=HISTORY_DIR, help="the task folder (default: the bundled one)")
    ap.add_argument("--planner", choices=["model", "oracle"], default="model",
                    help="oracle: replay each task's oracle, no model (plumbing)")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="catalogue name or .gguf path")
    ap.add_argument("--n-ctx", type=int, default=8192, help="the context window (bare's history is fitted to it)")
    ap.add_argument("--max-tokens", type=int, default=256, help="generated tokens per step")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--modes", default="bare,harness", help="modes to run, in this order per task")
    ap.add_argument("--embedder", choices=["none", "minilm"], default="none",
                    help="the harness store's vectors (none: keyword-only retrieval, as the oracle check)")
    ap.add_argument("--variant", default="on", type=_variant,
                    help="the harness's η variant: on (the defaults), no-<key>+<key> or with-<key>+<key> "
                         "(bench_memory_answer.py)")
    ap.add_argument("--trace-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="JSON report, also the resume state")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - set(MODES):
        print("--modes takes bare and/or harness", file=sys.stderr)
        return 2
    if args.sample is not None and args.sample < 1:
        print("--sample must be at least 1", file=sys.stderr)
        return 2
    ids = [i.strip() for i in args.ids.split(",") if i.strip()] if args.ids else []
    tasks = select(args.split, args.sample, ids, args.tasks)
    embedder = None
    if args.embedder == "minilm":
        from pocketpilot.cli._embedder import default_embedder

        embedder = default_embedder()
    kit = variant_kit(load_harness_kit(), args.variant)
    if args.planner == "oracle":
        from pocketpilot.harness.planners import ScriptedPlanner

        def planner_for(task: TaskSpec, mode: str) -> Planner:
            return ScriptedPlanner(oracle_actions(task), name="oracle")

        meta = {"planner": {"model": "oracle"}, "split": args.split, "variant": args.variant}
        data = asyncio.run(run_modes(tasks, planner_for, modes=modes, kit=kit, out=args.out,
                                     trace_dir=args.trace_dir, meta=meta))
    else:
        try:
            planner = llama_planner(args.model, max_tokens=args.max_tokens, n_ctx=args.n_ctx, threads=args.threads)
        except PocketPilotError as exc:
            print(f"planner: {exc}", file=sys.stderr)
            return 2

        async def go() -> dict[str, Any]:
            await planner.load()
            meta = {"planner": planner.info.model_dump(mode="json"), "split": args.split, "variant": args.variant,
                    "n_ctx": args.n_ctx,
                    "embedder": getattr(embedder, "name", None) or "none (keyword-only)",
                    "load_average": os.getloadavg()[0]}
            try:
                return await run_modes(tasks, lambda task, mode: planner, modes=modes, kit=kit, out=args.out,
                                       trace_dir=args.trace_dir, meta=meta, embedder=embedder)
            finally:
                await planner.aclose()

        data = asyncio.run(go())
    print(f"{len(tasks)} task(s) of the {args.split} split, n_ctx {args.n_ctx}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(table(data))
    if args.out:
        print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
