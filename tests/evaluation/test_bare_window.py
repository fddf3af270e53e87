"""Bare mode gets the newest of its user's history that fits its context window, oldest left out first."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pocketpilot.contracts import EvalSettings, PlannerInfo
from pocketpilot.evaluation.bare_window import MESSAGE_OVERHEAD, PRIOR_BUDGET, BareWindow
from pocketpilot.evaluation.task_episode import run_task_episode, task_config
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import TaskSpec, load_task
from pocketpilot.tasks.long_history import HISTORY_DIR
from pocketpilot.tasks.memory_seed import PRIOR_NOTE, fit_prior

QUESTION = HISTORY_DIR / "hist-d1-q00.yaml"  # a dev task: 520 memories over six months


class WindowPlanner(ScriptedPlanner):
    """A scripted planner that declares an in-process model's context window."""

    def __init__(self, actions, n_ctx: int, max_tokens: int = 256) -> None:
        super().__init__(actions)
        info = self.info
        self._info = PlannerInfo(backend=info.backend, model=info.model,
                                 sampler=info.sampler.model_copy(update={"max_tokens": max_tokens}),
                                 eval=EvalSettings(n_ctx=n_ctx, n_threads=1, n_batch=512, n_ubatch=512))


@pytest.fixture(scope="module")
def task() -> TaskSpec:
    return load_task(QUESTION)


def _prompt_tokens(planner: ScriptedPlanner) -> int:
    return sum(planner.count_tokens(m.content) + MESSAGE_OVERHEAD for m in planner.requests[0].messages)


@pytest.mark.parametrize("n_ctx", [4096, 8192])
async def test_a_500_memory_owner_fits_the_window_newest_kept_and_the_trace_says_how_many_were_dropped(
        task, n_ctx, tmp_path) -> None:
    planner = WindowPlanner([{"kind": "finish", "summary": "no idea"}], n_ctx=n_ctx)
    episode, trace = await run_task_episode(task, planner, mode="bare", trace_dir=tmp_path)
    messages = planner.requests[0].messages
    prior = [m for m in messages if m.section == "prior"]
    assert 0 < len(prior) < len(task.memory)
    # the first step, plus every step the history budget lets the run add, plus one answer: inside n_ctx
    cfg = task_config(task)
    assert _prompt_tokens(planner) + cfg.budget.history + 256 <= n_ctx
    # the newest memories are the ones kept, in time order, whole
    newest = sorted(task.memory, key=lambda s: s.created_at)[-len(prior):]
    assert [m.content.split(") ", 1)[1] for m in prior] == [s.content for s in newest]
    dropped = len(task.memory) - len(prior)
    note = PRIOR_NOTE.format(n=dropped)
    assert messages[1].content == note  # said first, after the system message
    assert episode.header.preamble[0]["content"] == note
    assert note in trace.read_text(encoding="utf-8")


async def test_a_wider_window_keeps_more_of_the_history(task) -> None:
    kept = []
    for n_ctx in (4096, 8192, 12288):
        planner = WindowPlanner([{"kind": "finish", "summary": "no idea"}], n_ctx=n_ctx)
        await run_task_episode(task, planner, mode="bare")
        kept.append(sum(m.section == "prior" for m in planner.requests[0].messages))
    assert kept[0] < kept[1] < kept[2]


async def test_the_answer_s_tokens_come_out_of_the_window(task) -> None:
    short, long = (WindowPlanner([{"kind": "finish", "summary": "x"}], n_ctx=8192, max_tokens=m) for m in (128, 2048))
    for planner in (short, long):
        await run_task_episode(task, planner, mode="bare")
    assert _prompt_tokens(long) < _prompt_tokens(short) - 1500


async def test_a_planner_without_a_window_gets_the_fixed_budget_and_a_given_budget_wins(task) -> None:
    plain = ScriptedPlanner([{"kind": "finish", "summary": "x"}])
    await run_task_episode(task, plain, mode="bare")
    prior = [m for m in plain.requests[0].messages if m.section.startswith("prior")]
    assert sum(plain.count_tokens(m.content) + MESSAGE_OVERHEAD for m in prior) <= PRIOR_BUDGET
    given = WindowPlanner([{"kind": "finish", "summary": "x"}], n_ctx=32768)
    await run_task_episode(task, given, mode="bare", prior_budget=300)
    prior = [m for m in given.requests[0].messages if m.section.startswith("prior")]
    assert sum(given.count_tokens(m.content) + MESSAGE_OVERHEAD for m in prior) <= 300


async def test_the_harness_gets_the_store_not_the_history_as_conversation(task) -> None:
    planner = WindowPlanner([{"kind": "finish", "summary": "x"}], n_ctx=8192)
    await run_task_episode(task, planner, mode="harness")
    assert not any(m.section.startswith("prior") for m in planner.requests[0].messages)


def _history(n: int) -> TaskSpec:
    start = datetime(2025, 1, 1, 9, 0, tzinfo=timezone(timedelta(hours=1)))
    memory = [{"content": f"message number {i} " + "x" * 36, "created_at": (start + timedelta(hours=i)).isoformat()}
              for i in range(n)]
    return TaskSpec.model_validate({"id": "bare-window-unit", "goal": "what did I say?", "capability": "recall",
                                    "split": "dev", "tools": [], "memory": memory,
                                    "criteria": [{"kind": "answer", "any_of": ["x"]}]})


def test_fit_prior_drops_the_oldest_whole_counts_the_template_and_says_so() -> None:
    task = _history(50)
    count = lambda text: max(1, len(text) // 4)  # noqa: E731
    every = fit_prior(task, count, budget=10_000, overhead=8)
    assert every.dropped == 0 and len(every.messages) == 50 and every.messages[0].section == "prior"
    fitted = fit_prior(task, count, budget=400, overhead=8)
    assert fitted.messages[0].content == PRIOR_NOTE.format(n=fitted.dropped) and fitted.dropped > 0
    assert sum(count(m.content) + 8 for m in fitted.messages) <= 400
    assert fitted.messages[-1].content.endswith(task.memory[-1].content)
    assert len(fitted.messages) - 1 + fitted.dropped == 50
    quiet = fit_prior(task, count, budget=400, overhead=8, note=False)
    assert quiet.messages[-(len(fitted.messages) - 1):] == fitted.messages[1:]  # the note's room holds a message
    assert quiet.dropped in (fitted.dropped, fitted.dropped - 1) and quiet.messages[0].section == "prior"
    assert fit_prior(task, count, budget=3).messages == []  # no room even for the note


def test_the_window_is_shared_out_and_never_negative() -> None:
    window = BareWindow(n_ctx=8192, system=1200, request=20, history=3000, answer=256)
    assert 0 < window.prior < 8192 - 1200 - 3000 - 256
    assert BareWindow(n_ctx=2048, system=1200, request=20, history=3000, answer=256).prior == 0
