"""A task's episode: the harness configured for one task's world, run once, and verified.

What ``pocketpilot run --task`` and the bench share. A product run needs the task's world and
verifier (:func:`pocketpilot.tasks.prepare`), the harness's kit (skills, their gates, adapter
guidance under η, see :class:`HarnessKit`), the task's seeded memory, and one harness
:class:`~pocketpilot.harness.Session`; what comes back is the verified episode. The bench
(:mod:`pocketpilot.evaluation.compare`) adds only what it measures on top. It lives outside
:mod:`pocketpilot.tasks` because it builds a harness ``Session``, and the tasks package never
imports the harness.

Two configurations, each seeing the same information:

- ``harness``: a per-task memory store seeded from the task, recalled for the request before
  the first step by the session (:mod:`pocketpilot.harness.recall`: whole when it fits, dated,
  the owner's statements marked, as η's ``memory`` section says) and shown with provenance; the
  kit's skills, gates and guidance; the world's clock as evidence; the session's runtime guards.
- ``bare``: the task's memories replayed as earlier conversation, every exposed tool with its
  schema; no retrieval, no skills, no adapter guidance, no gates.

Both get the task's own operating policy (``TaskSpec.guidance``): it is what the task's owner
tells any agent, like its memories, not something the harness adds. Where a run's settings come
from, nearest first: the caller's :class:`RunSettings` (the CLI's flags), the task, its folder's
``_defaults.yaml``, the defaults.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..contracts import Episode, RetrievedMemory, Step, ToolCall, ToolSpec
from ..errors import UsageError
from ..harness import (
    Confirmer,
    ContextBudget,
    HarnessConfig,
    Planner,
    Session,
    SkillStore,
    safety_policies,
)
from ..harness.context import render_tools
from ..harness.observer import RunObserver
from ..harness.recall import MemoryPlacement, Recall, device_clock, recall, render_recall
from ..ids import SeededIds
from ..memory import Embedder
from ..skills.base import ToolGate
from ..tasks import TaskSpec, prepare
from ..tasks.run import EXPOSURES
from .bare_window import PRIOR_BUDGET, fit_bare_prior

__all__ = [
    "PRIOR_BUDGET",
    "RECALL_K",
    "HarnessKit",
    "Mode",
    "RunSettings",
    "TaskUser",
    "device_clock",
    "load_harness_kit",
    "recall_guidance",
    "run_task_episode",
    "task_config",
    "task_guidance",
]

logger = logging.getLogger(__name__)

Mode = Literal["harness", "bare"]
RECALL_K = MemoryPlacement().k
"""Memories retrieved for a request when its owner's history does not go in whole (the harness's default)."""


@dataclass(frozen=True)
class RunSettings:
    """What the caller sets over a task's own run settings (the CLI's flags); unset keeps the task's.

    ``guidance`` replaces the task's policy (``()`` runs it without one); ``budget`` overrides
    context sections one by one; ``max_steps`` the step budget.
    """

    guidance: tuple[str, ...] | None = None
    budget: Mapping[str, int] = field(default_factory=dict)
    max_steps: int | None = None
    exposure: str = "task"
    """``task``: the apps the task names; ``phone``: every app of its world (:func:`~pocketpilot.tasks.prepare`)."""
    tool_k: int | None = None
    """Tool exposure by retrieval with at most this many tools a step (harness mode); None: η's setting."""

    def __post_init__(self) -> None:
        if self.exposure not in EXPOSURES:
            raise UsageError(f"unknown exposure {self.exposure!r}; use one of: {', '.join(EXPOSURES)}")
        if self.tool_k is not None and self.tool_k < 1:
            raise UsageError(f"the tool retrieval K must be at least 1, not {self.tool_k}")


def task_config(task: TaskSpec, settings: RunSettings | None = None) -> HarnessConfig:
    """The harness configuration a task runs under: steps and context budgets, the caller's
    settings over the task's (its folder's defaults already merged in by the loader).
    """
    settings = settings or RunSettings()
    return HarnessConfig(max_steps=settings.max_steps or task.max_steps,
                         budget=ContextBudget(**{**task.budget, **settings.budget}))


def task_guidance(task: TaskSpec, settings: RunSettings | None = None) -> list[str]:
    """The operating policy a task runs with: the caller's when given, else the task's."""
    if settings is not None and settings.guidance is not None:
        return list(settings.guidance)
    return task.guidance_texts()


class HarnessKit:
    """What the harness adds beyond memory: skills, their gates, adapter guidance, the η version.

    Built by :func:`load_harness_kit` from the built-in :mod:`pocketpilot.skills` library and an
    η compiled by :mod:`pocketpilot.adapters`; an empty kit (no library) is a harness of memory
    alone. The library also serves as the declared preconditions the gate audit counts
    against, in both modes.
    """

    def __init__(self, library: Any | None = None, *, eta: Any | None = None) -> None:
        self.library = library
        self.eta = eta
        self._filter: Any | None = None
        self._retrievers: dict[tuple[str, int], Any] = {}
        self._router: Any | None = None
        if eta is not None:
            from ..adapters import GuidanceFilter, SkillRouter

            self._filter = GuidanceFilter(eta)
            self._router = SkillRouter(library, stop_words=eta.stop_words) if library is not None else None

    @property
    def skills(self) -> SkillStore | None:
        """The skill store offered to the planner (None: no skills)."""
        return self.library

    @property
    def eta_version(self) -> str | None:
        """The harness configuration's version, recorded in every trace."""
        return self.eta.version if self.eta is not None else None

    def session_kwargs(
        self,
        exposed: Sequence[str | ToolSpec],
        *,
        memory: bool = True,
        request: str | None = None,
        recalled: Sequence[str] = (),
        memory_search: bool = True,
        recalled_whole: bool = False,
    ) -> dict[str, Any]:
        """Session keyword arguments for a session exposing ``exposed``.

        ``guidance``, ``skills``, ``gates`` and ``eta_version``; given the ``request`` (and the
        memories ``recalled`` for it), the adapter's per-request routing too: ``preloaded``
        skills, the offered ``actions`` and ``guidance_for`` (see
        :func:`pocketpilot.adapters.session_kwargs`).
        """
        if self.eta is not None:
            from ..adapters import session_kwargs

            return session_kwargs(self.eta, list(exposed), library=self.library, memory=memory, delegate=True,
                                  guidance_filter=self._filter, request=request, recalled=recalled,
                                  router=self._router, memory_search=memory_search,
                                  recalled_whole=recalled_whole)
        return {"guidance": [], "skills": self.library, "gates": self.gates_for(exposed), "eta_version": None}

    def tool_retriever(self, k: int | None, embedder: Embedder | None, *, overflow: bool = False) -> Any | None:
        """Tool exposure by retrieval: K from the caller, else η's ``tool_retrieval``; None: off.

        ``overflow``: the session's tools do not fit the tools budget whole. Then retrieval
        decides what a step shows even where neither the caller nor η asked for it (its default
        settings), as recall does for an owner's memories: a list that fits goes in whole, and
        retrieval is for one that does not (small models lose tool choice on long lists).
        One retriever per setting and embedder, kept, so its index is built once per tool set.
        """
        from ..adapters.tool_retrieval import ToolRetrievalSettings, ToolRetriever

        base = getattr(self.eta, "tool_retrieval", None)
        if k is None and base is None and not overflow:
            return None
        settings = (base or ToolRetrievalSettings()).model_copy(update={"k": k} if k is not None else {})
        key = (settings.model_dump_json(), id(embedder))
        if key not in self._retrievers:
            apps = {n: e.app for n, e in self.eta.tools.items() if e.app} if self.eta is not None else {}
            self._retrievers[key] = ToolRetriever(settings, embedder, apps=apps)
        return self._retrievers[key]

    def configure(self, config: HarnessConfig) -> HarnessConfig:
        """``config`` under η's ``memory`` section (recall, placement, the answer path), if η has one.

        An η without the section leaves the configuration's own (the harness's defaults).
        """
        settings = getattr(self.eta, "memory", None)
        if settings is None:
            return config
        placement = MemoryPlacement(recall=settings.recall, k=settings.recall_k, budget=settings.budget,
                                    dated=settings.dated, standing_wishes=settings.standing_wishes,
                                    newest_last=settings.newest_last, as_messages=settings.as_messages)
        return replace(config, memory=placement, answers=settings.answers)

    def gates_for(self, exposed: Sequence[str | ToolSpec]) -> list[ToolGate]:
        """Gates in force from the first step for a session exposing ``exposed``."""
        if self.library is None:
            return []
        return list(self.library.always_on_gates(list(exposed)))

    def violations(self, episode: Episode) -> int | None:
        """Calls in ``episode`` that reached the executor against a declared precondition (None: none declared)."""
        if self.library is None:
            return None
        from ..skills import audit_episode

        found = audit_episode(episode, self.library)
        for v in found:
            logger.warning("precondition violation reached the executor: %s step %d %s (%s)",
                           v.episode_id, v.step, v.call.name, v.message)
        return len(found)

    def describe(self) -> dict[str, Any]:
        """For the report: which skills, how many gates, which η."""
        if self.library is None:
            return {"skills": None, "gates": 0, "eta_version": self.eta_version}
        return {"skills": self.library.names(), "gates": len(self.library.gates()), "eta_version": self.eta_version}


def load_harness_kit() -> HarnessKit:
    """The harness's skills (the built-in library) and its η, compiled for the sandbox's tools.

    Falls back to an empty kit, with a warning, when :mod:`pocketpilot.skills` or
    :mod:`pocketpilot.adapters` is missing: the report then says the harness had no skills.
    """
    try:
        from ..adapters import compile_eta, sandbox_tool_apps
        from ..skills import SkillLibrary
    except ImportError:
        logger.warning("pocketpilot.skills/adapters unavailable: the harness runs with memory only")
        return HarnessKit()
    library = SkillLibrary.builtin()
    tools, apps = sandbox_tool_apps()
    return HarnessKit(library, eta=compile_eta(tools, library, apps=apps, strict=True))


def recall_guidance(hits: Sequence[RetrievedMemory]) -> list[str]:
    """Memories recalled for a request in the earlier rendering, oldest first (every placement switch off).

    The harness renders recall itself now (:func:`pocketpilot.harness.recall.render_recall`,
    as :class:`~pocketpilot.harness.recall.MemoryPlacement` says); kept for callers that show
    hits they retrieved themselves.
    """
    return render_recall(hits, MemoryPlacement.legacy())


class TaskUser:
    """The user a task stands for, answering the harness's questions in a task run.

    A task's request says everything its user wants done. The calls it asks for that need
    confirmation by their declaration (a send, a purchase, a power-off) are the ones its
    criteria judge, so those are allowed, as a disposable world can afford. Any other question
    reaches the user only because a policy held a call nothing in the run grounds (the scope
    guard asks when the planner sends such a call again): the request already gave that answer,
    no. Answering yes to everything would let the held walk through on the second try.
    """

    reason = "the task's user: yes to the confirmations its request implies, no to changes it does not name"

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """Whether ``spec`` (the call's effective semantics) is one that needs confirmation."""
        return spec.needs_confirmation


async def _overflows(cfg: HarnessConfig, planner: Planner, tools: Sequence[ToolSpec]) -> bool:
    """Whether ``tools`` rendered whole need more than the tools budget (whole phone, usually)."""
    await planner.load()  # the budget is counted in the model's own tokens
    return planner.count_tokens(render_tools(list(tools))) > cfg.budget.tools


async def _tools_fit(cfg: HarnessConfig, planner: Planner, tools: Sequence[ToolSpec]) -> HarnessConfig:
    """``cfg`` with a tools budget that holds every tool (the bare planner on a whole phone).

    Whether the prompt then fits the planner's window is the planner's to say: one that does
    not stops the run with ``planner_error`` and the sizes, never a crash.
    """
    await planner.load()
    need = planner.count_tokens(render_tools(list(tools)))
    if need <= cfg.budget.tools:
        return cfg
    evals = planner.info.eval
    if evals is not None and need + cfg.budget.rules + planner.info.sampler.max_tokens > evals.n_ctx:
        logger.warning("whole phone: the %d tools need %d tokens, more than n_ctx=%d leaves beside the rules and "
                       "the answer; the run will stop with planner_error (raise --n-ctx)", len(tools), need, evals.n_ctx)
    else:
        logger.info("whole phone: %d tools need %d tokens of tool list", len(tools), need)
    return replace(cfg, budget=replace(cfg.budget, tools=need))


async def run_task_episode(
    task: TaskSpec,
    planner: Planner,
    *,
    mode: Mode = "harness",
    trace_dir: Path | None = None,
    config: HarnessConfig | None = None,
    embedder: Embedder | None = None,
    kit: HarnessKit | None = None,
    prior_budget: int | None = None,
    on_step: Callable[[Step], None] | None = None,
    confirm: Confirmer | None = None,
    observer: RunObserver | None = None,
    settings: RunSettings | None = None,
    repeatable: bool = True,
) -> tuple[Episode, Path | None]:
    """Run one task on a fresh world in one configuration; the episode carries its verdict.

    The run is an episode of the task, on a world and a memory store made for it alone, so it
    is repeatable (``repeatable``): the ids the planner is shown (its memories', its
    sub-agents' episodes) derive from the task's id and the mode, and the store stamps memories
    on the world's clock, so a greedy planner's rerun sees the same prompts (and the decode
    memo serves it). The episode's own id stays random: it names the trace file.

    Args:
        task: The task (its own world, or the sandbox phone).
        planner: The planner.
        mode: ``harness`` or ``bare`` (see the module docstring).
        trace_dir: Where to write the episode trace.
        config: Budgets; default :func:`task_config` (the task's, under ``settings``).
        embedder: Vector backend of the task's memory store (harness mode); None is keyword-only.
        kit: Skills, gates and guidance of the harness; default :func:`load_harness_kit`.
        prior_budget: Token budget of the earlier conversation (bare mode); None: what the planner's
            context window leaves, the newest messages first (:mod:`.bare_window`).
        on_step: Called with each step as it is recorded.
        confirm: Who answers the harness's questions; default :class:`TaskUser` (the world is
            disposable and tasks judge the calls they ask for themselves); the CLI asks its user.
        observer: Told about the run as it happens (OpenTelemetry spans, see ``Session``).
        settings: The caller's settings over the task's (guidance, budgets, steps).
        repeatable: Derive the ids shown to the planner from the task (see above); False draws
            them at random and stamps memories on the wall clock, as a deployment does.

    Returns:
        The verified episode and the path of its trace (None: no trace written).
    """
    confirm = confirm or TaskUser()
    policy = task_guidance(task, settings)
    cfg = config or task_config(task, settings)
    exposure = settings.exposure if settings is not None else "task"
    seed = f"{task.id}/{mode}" if repeatable else None
    run = prepare(task, memory=mode == "harness", embedder=embedder, exposure=exposure, seed=seed)  # type: ignore[arg-type]
    subagent_ids = SeededIds(seed).derive("subagents") if seed is not None else None
    kit = kit if kit is not None else load_harness_kit()
    clock = run.clock
    try:
        if run.memory is not None:
            memory = run.memory
            cfg = kit.configure(cfg)
            # the session's own recall, run here first because the adapter routes on what it finds
            # (the recall note, skills a recalled routine names); the session shows the same hits
            got = await recall(memory.bound, task.goal, cfg.memory, planner.count_tokens,
                               owner=memory.bound.owner, now=clock) if task.memory else Recall()
            kw = kit.session_kwargs(
                run.executor.tools(),  # specs: skills and notes apply by the world each tool declares
                request=task.goal,
                recalled=[h.content for h in got.hits],
                memory_search=bool(memory.seeded),  # an empty store has nothing to find
                # the whole history shown, and no shared store beside it: a search finds nothing new
                recalled_whole=got.whole,
            )
            kw["guidance"] = [*policy, *kw.get("guidance", [])]  # the task's policy ahead of η's notes
            retriever = kit.tool_retriever(settings.tool_k if settings is not None else None, embedder,
                                           overflow=await _overflows(cfg, planner, run.executor.tools()))
            if retriever is not None:
                kw["tool_exposure"] = retriever
            session = Session(
                planner,
                run.executor,
                config=cfg,
                memory=memory.bound,
                clock=(lambda: clock) if clock is not None else None,
                recalled=got,
                **kw,
                confirm=confirm,
                verifier=run.verifier,
                trace_dir=trace_dir,
                task_id=task.id,
                on_step=on_step,
                observer=observer,
                subagent_ids=subagent_ids,
            )
        else:
            if exposure == "phone":
                cfg = await _tools_fit(cfg, planner, run.executor.tools())
            await planner.load()  # the window is shared out in the model's own tokens
            kinds = Session(planner, run.executor, config=cfg, policies=safety_policies()).kinds()
            prior = fit_bare_prior(task, planner, cfg, run.executor.tools(), kinds, policy, prior_budget).messages
            session = Session(
                planner,
                run.executor,
                config=cfg,
                confirm=confirm,
                verifier=run.verifier,
                trace_dir=trace_dir,
                task_id=task.id,
                prior=prior,
                guidance=policy,
                on_step=on_step,
                observer=observer,
                policies=safety_policies(),
                subagent_ids=subagent_ids,
            )
        episode = await session.run(task.goal)
    finally:
        run.close()
    return episode, session.trace_path
