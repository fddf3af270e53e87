"""Which experience entries hurt, and the evictions ``pocketpilot evolve`` proposes for them.

An experience entry is data in η, shown as a worked example when retrieval picks it for a
request; an entry that misleads the planner costs tasks, and only a measurement can say so.
The loop attributes harm after its baseline run on the evolve sample (the tasks under the
current η), from structured records only: a run's trace header names the entries retrieved
for it (the ``experience_hints`` policy's ``entries`` parameter), its verdict says whether it
passed.

**Attribution rule.** A task *points at* an entry when its run under the current η failed and
was shown the entry. Each such task is compared with the same task without experience:

- ``paired`` (the default): the task runs once more under the current η with experience
  switched off (``experience_config.enabled`` false: no worked examples, no step hints);
- ``previous``: its outcome in the previous iteration's baseline, where the task was in that
  sample (a task that was not is not compared; the first iteration compares nothing).

Every entry shown in a task that failed with it and passed without it gains one unit of harm
for that task (each entry the run was shown: one run cannot tell which of them misled). Harm
accumulates over iterations (each iteration's ``harm.json``). An entry of the current η whose
accumulated harm reaches the threshold (``EvolveSettings.evict_threshold``, default 2) and that
gained harm in this iteration (an eviction refused before is proposed again only on new
evidence) becomes an ``evict_experience`` candidate. It is measured on the evolve sample with
the iteration's other candidates and accepted only by the same acceptance rule: harm
nominates an eviction, the paired measurement decides it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..adapters import Eta
from ..contracts import Episode
from .evolve_state import Candidate, Harm

__all__ = ["accumulate", "attribute", "evictions", "failed_and_shown"]


def failed_and_shown(passed: Mapping[str, bool], episodes: Iterable[Episode],
                     present: Iterable[str]) -> dict[str, list[str]]:
    """Task id → the entries of ``present`` its run was shown, for the tasks that failed.

    Args:
        passed: task id → passed, under the current η.
        episodes: those runs' episodes (each names its task and, in its header, the entries shown).
        present: the ids of the current η's entries (an entry evicted since is no longer at stake).
    """
    from ..trainer_bridge.candidates import shown_experience

    have = set(present)
    out: dict[str, list[str]] = {}
    for episode in episodes:
        task = episode.header.task_id
        if task is None or passed.get(task, True):
            continue
        shown = sorted({e for e in shown_experience(episode) if e in have})
        if shown:
            out[task] = shown
    return out


def attribute(shown: Mapping[str, Sequence[str]], without: Mapping[str, bool]) -> dict[str, list[str]]:
    """Entry id → the tasks it harmed: failed while shown it (``shown``), passed without experience (``without``)."""
    harmed: dict[str, list[str]] = {}
    for task, entries in sorted(shown.items()):
        if without.get(task) is True:
            for entry in entries:
                harmed.setdefault(entry, []).append(task)
    return harmed


def accumulate(earlier: Iterable[Harm], harmed: Mapping[str, Sequence[str]], present: Iterable[str]) -> dict[str, int]:
    """Entry id → harm over the earlier iterations' records and this one, for the entries in ``present``."""
    total = {e: 0 for e in present}
    for record in [*earlier, None]:
        for entry, tasks in (record.harmed if record is not None else harmed).items():
            if entry in total:
                total[entry] += len(tasks)
    return {e: n for e, n in sorted(total.items()) if n}


def evictions(eta: Eta, accumulated: Mapping[str, int], harmed: Mapping[str, Sequence[str]], threshold: int,
              iteration: int) -> list[Candidate]:
    """An ``evict_experience`` candidate per entry whose harm reaches ``threshold`` and grew in this iteration."""
    from ..trainer_bridge.candidates import eviction_candidates

    due = {e: n for e, n in accumulated.items() if n >= threshold and harmed.get(e)}
    out = []
    for c in eviction_candidates(eta, due, min_harm=threshold):
        evidence = [{"entry": c.target, "task_id": t, "iteration": iteration} for t in harmed[c.target or ""]]
        out.append(Candidate(kind=c.kind, revision=c.revision, summary=c.revision.rationale[:200], evidence=evidence))
    return out
