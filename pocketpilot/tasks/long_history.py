"""Long-history memory tasks: owners with hundreds of dated memories, and tasks whose evidence is one of them.

The generated suite's memory tasks seed two or three memories, so a bare planner that is handed
them all as earlier conversation sees everything the harness's store holds. A phone's owner has
months of notes and messages. Here every owner has at least :data:`MIN_MEMORIES` memories
spread over months, and each task's evidence is one of them, among:

- **superseded facts**: an older value of the same fact, replaced later by the one that holds;
- **near-duplicate distractors**: the same kind of fact about another person, place or
  situation, and a mention of the task's subject that holds no value (another date);
- everyday chatter that fills the rest.

Two kinds of task: a **question** about the past whose answer is written in the history (an
``answer`` criterion; the bench also reports token F1 against it), and an **action** whose
argument is a standing wish the owner stated (a ``state`` criterion on the value, a ``no_call``
on the superseded value). The tasks of one owner share its history; each owner belongs to one
split, so no history seen while tuning (dev, evolve) is measured on (test).

Everything comes from data tables (:data:`TABLES`): names, places, chatter, facts and the tool
argument a wish sets; this module knows no app, person or fact. The same seed gives the same
files byte for byte; :func:`generate_history` checks every task on the sandbox as the generator
does (:func:`~pocketpilot.tasks.validate.validate_task`) and that each answer is written in
exactly one memory. The bundled folder's test split is frozen like the generated suite's
(:data:`HISTORY_LOCK`): regenerate with ``pocketpilot tasks generate-history``, and re-record
with ``python -m pocketpilot.tasks.long_history --write`` in a commit that says why.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from . import split_lock
from .spec import Split

__all__ = [
    "HISTORY_DIR",
    "HISTORY_LOCK",
    "HISTORY_SEED",
    "MIN_MEMORIES",
    "OWNERS",
    "TABLES",
    "HistoryGeneration",
    "HistoryTask",
    "OwnerPlan",
    "generate_history",
    "history_drift",
    "load_tables",
    "mentions",
    "write_history",
]

TABLES = Path(__file__).parent / "tables" / "history.yaml"
HISTORY_DIR = Path(__file__).parent / "history"
HISTORY_LOCK = Path(__file__).parent / "history.lock.json"
HISTORY_SEED = 0
MIN_MEMORIES = 500
_TZ = timezone(timedelta(hours=1))
_START = datetime(2024, 9, 2, 8, 0, tzinfo=_TZ)
_END = datetime(2025, 3, 13, 22, 0, tzinfo=_TZ)
"""The history's months, ending the day before the sandbox clock (2025-03-14 09:30 +01:00)."""


class OwnerPlan(BaseModel):
    """One owner: a tag for its task ids, its split, how many tasks of each kind, and its history's size."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tag: str = Field(pattern=r"^[a-z0-9]{1,8}$")
    split: Split
    questions: int = Field(default=12, ge=1, le=40)
    actions: int = Field(default=4, ge=0, le=12)
    memories: int = Field(default=520, ge=MIN_MEMORIES)


OWNERS: tuple[OwnerPlan, ...] = (
    OwnerPlan(tag="d1", split="dev"),
    OwnerPlan(tag="d2", split="dev"),
    OwnerPlan(tag="e1", split="evolve"),
    OwnerPlan(tag="t1", split="test"),
    OwnerPlan(tag="t2", split="test"),
    OwnerPlan(tag="t3", split="test"),
    OwnerPlan(tag="t4", split="test"),
)
"""The bundled folder's owners: 32 dev, 16 evolve and 64 test tasks."""


@dataclass
class HistoryTask:
    """A generated task (the task-file dict) and where its evidence lies in its owner's history."""

    data: dict[str, Any]
    kind: str
    """``question`` or ``action``."""
    evidence: int
    """Index in ``data["memory"]`` of the one memory that supports the answer."""
    superseded: int | None = None
    """Index of the older value the evidence replaced (None: the fact was never updated)."""
    distractors: list[int] = field(default_factory=list)
    """Indices of near-duplicates: the same kind of fact about another subject, a mention without a value."""
    answer: list[str] = field(default_factory=list)
    """Questions: the value as written, then its equivalent forms. Actions: the argument's words."""


@dataclass
class HistoryGeneration:
    """What :func:`generate_history` produced, and the drafts it dropped (by the check that refused them)."""

    tasks: list[HistoryTask]
    dropped: dict[str, int] = field(default_factory=dict)

    def manifest(self, seed: int) -> dict[str, Any]:
        """The record written beside the tasks."""
        by: dict[str, int] = {}
        for t in self.tasks:
            key = f"{t.data['split']}/{t.kind}"
            by[key] = by.get(key, 0) + 1
        return {"generator": "pocketpilot.history/1", "seed": seed, "tasks": len(self.tasks),
                "by_split_kind": dict(sorted(by.items())), "dropped": dict(sorted(self.dropped.items())),
                "memories_per_owner": {o: n for o, n in sorted(self._owners().items())}}

    def _owners(self) -> dict[str, int]:
        return {t.data["id"].split("-")[1]: len(t.data["memory"]) for t in self.tasks}


def load_tables(path: str | Path = TABLES) -> dict[str, Any]:
    """The generator's data tables (YAML)."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def mentions(text: str, value: str) -> bool:
    """Whether ``value`` is written in ``text`` as a whole phrase (case-insensitive)."""
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", text.lower()) is not None


def _fill(template: str, **slots: str) -> str:
    out = template
    for key, value in slots.items():
        out = out.replace("{" + key + "}", value).replace("{" + key.capitalize() + "}", value[:1].upper() + value[1:])
    return out[:1].upper() + out[1:]


def _stamp(when: datetime) -> str:
    return when.isoformat()


@dataclass
class _Memory:
    content: str
    when: datetime
    tier: str = "episodic"
    source: str = "user_statement"
    category: str | None = None

    def seed(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content}
        if self.tier != "episodic":
            out["tier"] = self.tier
        if self.source != "user_statement":
            out["source"] = self.source
        if self.category:
            out["category"] = self.category
        out["created_at"] = _stamp(self.when)
        return out


class _Owner:
    """One owner's history under construction: memories with roles (evidence, superseded, distractor)."""

    def __init__(self, plan: OwnerPlan, tables: dict[str, Any], seed: int, asked: set[tuple[str, str]]) -> None:
        self.plan, self.tables, self.asked = plan, tables, asked
        """``asked``: (slot, subject) pairs some owner's task already asks about (goals never repeat)."""
        self.rng = random.Random(f"{seed}:{plan.tag}")
        self.memories: list[_Memory] = []
        self.drafts: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        """(kind, task fields, memory roles as _Memory objects)."""

    def _when(self, lo: datetime = _START, hi: datetime = _END) -> datetime:
        """A waking moment (07:00 to 22:59) on a day from ``lo`` to ``hi``, never before ``lo``."""
        days = max(1, (hi.date() - lo.date()).days)
        day = datetime.combine(lo.date() + timedelta(days=self.rng.randrange(days)), datetime.min.time(), _TZ)
        return max(lo, day + timedelta(minutes=7 * 60 + self.rng.randrange(16 * 60)))

    def _add(self, content: str, when: datetime | None = None, **kw: Any) -> _Memory:
        memory = _Memory(content, when or self._when(), **kw)
        self.memories.append(memory)
        return memory

    def _pair(self) -> tuple[datetime, datetime]:
        """An older and a newer moment at least a fortnight apart."""
        old = self._when(_START, _END - timedelta(days=20))
        return old, self._when(old + timedelta(days=14), _END)

    def questions(self) -> None:
        facts = self.tables["facts"]
        used: set[tuple[str, str]] = set()
        taken: dict[str, set[str]] = {}
        for n in range(self.plan.questions):
            fact = facts[n % len(facts)] if n < len(facts) else self.rng.choice(facts)
            subjects = [s for s in self.tables[fact["subject"]] if (fact["slot"], s) not in used]
            subject = self.rng.choice([s for s in subjects if (fact["slot"], s) not in self.asked])
            other = self.rng.choice([s for s in subjects if s != subject])
            used.update({(fact["slot"], subject), (fact["slot"], other)})
            self.asked.add((fact["slot"], subject))
            pool = [v for v in fact["values"] if v[0] not in taken.setdefault(fact["slot"], set())]
            value, old, near = self.rng.sample(pool, 3)
            superseded = self.rng.random() < 0.5
            roles: dict[str, Any] = {"distractors": []}
            if superseded:
                t_old, t_new = self._pair()
                roles["superseded"] = self._add(_fill(self.rng.choice(fact["fact"]), subject=subject, value=old[0]), t_old)
                roles["evidence"] = self._add(_fill(self.rng.choice(fact["update"]), subject=subject, value=value[0],
                                                    old=old[0]), t_new)
                taken[fact["slot"]].add(old[0])
            else:
                roles["evidence"] = self._add(_fill(self.rng.choice(fact["fact"]), subject=subject, value=value[0]))
            roles["distractors"].append(self._add(_fill(self.rng.choice(fact["fact"]), subject=other, value=near[0])))
            roles["distractors"].append(self._add(_fill(self.rng.choice(fact["mention"]), subject=subject)))
            taken[fact["slot"]].update({value[0], near[0]})
            question = _fill(self.rng.choice(fact["question"]), subject=subject)
            fields = {
                "goal": question,
                "capability": "distractor_memory" if superseded else "recall",
                "domains": [],
                "tools": [],
                "criteria": [{"kind": "answer", "any_of": list(value)}, {"kind": "unchanged"}],
                "oracle": [{"memory_search": question}, {"finish": f"{value[0]}."}],
            }
            self.drafts.append(("question", fields, {**roles, "answer": list(value)}))

    def actions(self) -> None:
        wishes = self.tables["wishes"]
        situations = list(wishes["situations"])
        self.rng.shuffle(situations)
        used: set[tuple[str, str]] = set()
        for n in range(self.plan.actions):
            slot = wishes["slots"][(n + self.rng.randrange(len(wishes["slots"]))) % len(wishes["slots"])]
            free = [s for s in situations if (slot["slot"], s) not in used]
            situation = next(s for s in free if (slot["slot"], s) not in self.asked)
            elsewhere = next(s for s in free if s != situation)
            self.asked.add((slot["slot"], situation))
            situations.remove(situation)
            used.update({(slot["slot"], situation), (slot["slot"], elsewhere)})
            values = list(slot["values"].items())
            (value, words), (old, old_words) = self.rng.sample(values, 2)
            thing = slot["thing"]
            superseded = self.rng.random() < 0.5
            roles: dict[str, Any] = {"distractors": []}
            pref = {"tier": "user", "category": "preference"}
            if superseded:
                t_old, t_new = self._pair()
                roles["superseded"] = self._add(_fill(self.rng.choice(wishes["wish"]), situation=situation, thing=thing,
                                                      words=old_words), t_old, **pref)
                roles["evidence"] = self._add(_fill(self.rng.choice(wishes["update"]), situation=situation, thing=thing,
                                                    words=words, old=old_words), t_new, **pref)
            else:
                roles["evidence"] = self._add(_fill(self.rng.choice(wishes["wish"]), situation=situation, thing=thing,
                                                    words=words), **pref)
            roles["distractors"].append(self._add(_fill(self.rng.choice(wishes["wish"]), situation=elsewhere,
                                                        thing=thing, words=old_words), **pref))
            person = self.rng.choice(self.tables["people"])
            roles["distractors"].append(self._add(_fill(self.rng.choice(wishes["other_person"]), person=person,
                                                        situation=situation, thing=thing, words=old_words)))
            goal = _fill(self.rng.choice(wishes["goal"]), situation=situation, thing=thing)
            calls: list[dict[str, Any]] = [{"call": slot["read"]}] if slot.get("read") else []
            criteria: list[dict[str, Any]] = [{"kind": "state", "path": slot["path"], "equals": value}]
            if superseded:
                criteria.append({"kind": "no_call", "tool": slot["tool"], "args": {slot["arg"]: old}})
            criteria.append({"kind": "unchanged", "allow": [slot["path"]]})
            fields = {
                "goal": goal,
                "capability": "distractor_memory" if superseded else "recall",
                "domains": [slot["domain"]],
                "tools": list(slot["tools"]),
                "criteria": criteria,
                "oracle": [{"memory_search": situation}, *calls, {"call": slot["tool"], "args": {slot["arg"]: value}},
                           {"finish": f"Done: {thing} set to {words} for {situation}, as you asked."}],
            }
            self.drafts.append(("action", fields, {**roles, "answer": [str(words)]}))

    def chatter(self) -> None:
        filler = self.tables["filler"]
        pools = filler["pools"]
        seen = {m.content for m in self.memories}
        kinds = [("own", "user_statement")] * 3 + [("received", "tool_result")] * 2
        while len(self.memories) < self.plan.memories:
            kind, source = self.rng.choice(kinds)
            template = self.rng.choice(filler[kind])
            slots = {k: self.rng.choice(v) for k, v in pools.items()}
            text = _fill(template, person=self.rng.choice(self.tables["people"]), **slots)
            if text not in seen:
                seen.add(text)
                self._add(text, source=source)


def _owner_tasks(plan: OwnerPlan, tables: dict[str, Any], seed: int, asked: set[tuple[str, str]]) -> list[HistoryTask]:
    owner = _Owner(plan, tables, seed, asked)
    owner.questions()
    owner.actions()
    owner.chatter()
    ordered = sorted(owner.memories, key=lambda m: (m.when, m.content))
    index = {id(m): i for i, m in enumerate(ordered)}
    memory = [m.seed() for m in ordered]
    out: list[HistoryTask] = []
    counters = {"question": 0, "action": 0}
    for kind, fields, roles in owner.drafts:
        n = counters[kind]
        counters[kind] += 1
        oracle_len = len(fields["oracle"])
        data = {
            "id": f"hist-{plan.tag}-{kind[0]}{n:02d}",
            "goal": fields["goal"],
            "capability": fields["capability"],
            "group": "memory",
            "split": plan.split,
            "domains": fields["domains"],
            "tools": fields["tools"],
            "memory": memory,
            "max_steps": oracle_len + 3,
            "criteria": fields["criteria"],
            "oracle": fields["oracle"],
        }
        out.append(HistoryTask(
            data=data, kind=kind, evidence=index[id(roles["evidence"])],
            superseded=index[id(roles["superseded"])] if "superseded" in roles else None,
            distractors=[index[id(m)] for m in roles["distractors"]], answer=roles["answer"],
        ))
    return out


def _unique_answer(task: HistoryTask) -> str | None:
    """Why a question's evidence is not the one memory holding its answer (None: it is)."""
    if task.kind != "question":
        return None
    holding = [i for i, m in enumerate(task.data["memory"]) if any(mentions(m["content"], v) for v in task.answer)]
    if holding != [task.evidence]:
        return f"{task.data['id']}: answer {task.answer[0]!r} is written in memories {holding}, not only {task.evidence}"
    return None


async def _validate(tasks: list[HistoryTask]) -> tuple[list[HistoryTask], dict[str, int]]:
    from .gen_world import SandboxGenWorld
    from .validate import validate_task

    world = SandboxGenWorld()
    kept: list[HistoryTask] = []
    dropped: dict[str, int] = {}
    for task in tasks:
        light = {**task.data, "memory": task.data["memory"][:1]}  # the checks run no memory; parsing 500 is slow
        failed = await validate_task(world, light)
        if failed is None:
            kept.append(task)
        else:
            dropped[failed] = dropped.get(failed, 0) + 1
    return kept, dropped


def generate_history(owners: tuple[OwnerPlan, ...] = OWNERS, *, seed: int = HISTORY_SEED,
                     tables: dict[str, Any] | None = None) -> HistoryGeneration:
    """Every owner's history and tasks, each task checked on the sandbox (oracle passes, doing
    nothing fails, a broken oracle fails, nothing holds at the start, the loader accepts it).

    Raises:
        ValueError: the tables let an answer be written in more than one memory, or two tasks
            share a goal (the tables are too small for the owners asked for).
    """
    tables = tables or load_tables()
    asked: set[tuple[str, str]] = set()
    drafted = [t for plan in owners for t in _owner_tasks(plan, tables, seed, asked)]
    problems = [p for t in drafted if (p := _unique_answer(t)) is not None]
    if problems:
        raise ValueError(problems[0])
    goals: dict[str, str] = {}
    for t in drafted:
        key = " ".join(t.data["goal"].lower().split())
        if key in goals:
            raise ValueError(f"{t.data['id']} repeats the goal of {goals[key]}: {t.data['goal']!r}")
        goals[key] = t.data["id"]
    kept, dropped = asyncio.run(_validate(drafted))
    return HistoryGeneration(tasks=kept, dropped=dropped)


def write_history(gen: HistoryGeneration, directory: str | Path = HISTORY_DIR, *, seed: int = HISTORY_SEED,
                  clean: bool = True) -> list[Path]:
    """One YAML file per task and ``MANIFEST.yml``; ``clean`` first removes the folder's earlier task files."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    if clean:
        for old in out.glob("hist-*.yaml"):
            old.unlink()
    paths = []
    for task in gen.tasks:
        path = out / f"{task.data['id']}.yaml"
        path.write_text(yaml.safe_dump(task.data, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
        paths.append(path)
    (out / "MANIFEST.yml").write_text(yaml.safe_dump(gen.manifest(seed), sort_keys=False), encoding="utf-8")
    return paths


def history_drift(directory: Path = HISTORY_DIR, lock: Path = HISTORY_LOCK) -> split_lock.SplitDrift:
    """How the bundled history folder's test split differs from its record."""
    return split_lock.drift(directory, lock)


def main(argv: list[str] | None = None) -> int:
    """Regenerate the long-history tasks, or check/re-record their test split."""
    return split_lock.lock_main(argv, what="the long-history tasks", directory=HISTORY_DIR, lock=HISTORY_LOCK,
                                regenerate=lambda: len(write_history(generate_history())))


if __name__ == "__main__":
    raise SystemExit(main())
