"""What one run knows: its dependencies, its setup, its tools, gates, guidance, steps and header; the view its policies read."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._version import __version__
from ..contracts import (
    ChatMessage,
    Delegate,
    EpisodeHeader,
    Notice,
    RetrievedMemory,
    Step,
    StopReason,
    ToolCall,
    ToolCallAction,
    ToolResult,
    ToolSpec,
)
from ..errors import UsageError
from ..executor.effects import ClassifiesEffects
from ..ids import IdSource, random_ids
from ..memory.base import DescribesRetrieval, ListsMemories
from ..skills.base import LoadedSkillView, ToolGate
from ..tracing.trace import TraceWriter
from .actions import SubAgent
from .base import Confirmer, Executor, MemoryStore, Planner, RunExposure, SkillStore, ToolExposure, Verifier
from .brief import Brief, Handoff, prepare_brief
from .config import HarnessConfig
from .context import ContextAssembler
from .observer import RunEvent, RunObserver
from .policies import Policy, describe, in_force

__all__ = ["RunDeps", "RunSetup", "RunState", "SpawnChild"]

logger = logging.getLogger("pocketpilot.harness.loop")

SpawnChild = Callable[[Delegate, dict[str, ToolSpec], Sequence[ToolGate], Sequence[Step]], SubAgent]
"""A sub-agent for a hand-off: the delegate, the parent's tools and gates now, its completed steps."""


@dataclass(frozen=True)
class RunDeps:
    """What a run calls out to; the session builds it once per run, so the run never reads the session."""

    planner: Planner
    executor: Executor
    memory: MemoryStore | None
    skills: SkillStore | None
    confirm: Confirmer
    verifier: Verifier | None
    observer: RunObserver | None
    spawn_child: SpawnChild
    on_step: Callable[[Step], None] | None = None


@dataclass(frozen=True)
class RunSetup:
    """What a run starts from: the session's settings as they stand when the run starts."""

    config: HarnessConfig
    tools: Mapping[str, ToolSpec]
    """The tools the session exposes before any skill is loaded."""
    kinds: tuple[str, ...]
    """The action kinds the session can route."""
    gates: tuple[ToolGate, ...] = ()
    guidance: tuple[str, ...] = ()
    """The session's static guidance (an operating policy)."""
    guidance_for: Callable[[Sequence[str]], list[str]] | None = None
    evidence: tuple[str, ...] = ()
    gate_history: tuple[Step, ...] = ()
    prior: tuple[ChatMessage, ...] = ()
    preloaded: tuple[str, ...] = ()
    policies: tuple[Policy, ...] | None = None
    """None: the default policies."""
    task_id: str | None = None
    eta_version: str | None = None
    parent_episode_id: str | None = None
    depth: int = 0
    parent_step: int | None = None
    trace_dir: Path | None = None
    exposure: ToolExposure | None = None
    """Chooses the tools shown at each step (None: every tool in ``tools``, always)."""
    recalled: tuple[RetrievedMemory, ...] = ()
    """The memories recalled for the request (already rendered into ``evidence``): the header records them."""
    user_request: str | None = None
    """A sub-agent's: the user's request its parent's run serves (None: this run's request is the user's)."""
    user_recalled: tuple[RetrievedMemory, ...] = ()
    """A sub-agent's: the memories recalled for the user's request (not shown to it; policies read them)."""
    handoff: Handoff | None = None
    """How a delegate's sub-agent is briefed (:mod:`.brief`); None: the delegate as the planner wrote it."""


class RunState:
    """Mutable state of one run, and the read-only view its policies get (:class:`~pocketpilot.harness.policies.RunView`)."""

    def __init__(self, deps: RunDeps, setup: RunSetup, request: str, earlier: Sequence[ChatMessage] = (),
                 turn: int = 0, *, ids: IdSource | None = None) -> None:
        """Start the run's state; ``ids`` mints its episode id (default: a random uuid4)."""
        self.deps, self.setup, self.request, self.cfg = deps, setup, request, setup.config
        self.tools: dict[str, ToolSpec] = dict(setup.tools)
        self.universe: dict[str, ToolSpec] = dict(setup.tools)
        """Every tool the run may show (``tools`` is what it shows now: all of them without an exposure)."""
        self.pinned: list[str] = []
        """Tools an exposure keeps showing whatever it retrieves: widened to, or exposed by a skill."""
        self.exposure: RunExposure | None = None
        if setup.exposure is not None:
            self.exposure = setup.exposure.start(list(self.universe.values()), request, setup.evidence)
        self.loaded_skills: list[str] = []
        self.gates: list[ToolGate] = list(setup.gates)
        self.guidance = list(setup.guidance)
        """Static guidance plus the procedures of skills loaded in this run."""
        self.kinds = setup.kinds
        if not self.kinds:
            raise UsageError("no action kind is offered to the planner")
        self.offered, self.withheld = self.kinds, frozenset[str]()
        for name in setup.preloaded:
            self.apply_skill(name, gates=False)
        self.policies = in_force(None if setup.policies is None else list(setup.policies))
        # the standing-wish rule only where memories can be shown: it speaks of them
        self.assembler = ContextAssembler(self.cfg.budget, deps.planner.count_tokens, answers=self.cfg.answers,
                                          standing_wishes=self.cfg.memory.standing_wishes and deps.memory is not None)
        self.preamble = [*setup.prior, *earlier, *self._evidence()]
        self.history: list[list[ChatMessage]] = []
        self.steps: list[Step] = []
        self.refresh_exposure()  # the first step's tools (the header records them)
        self.parse_failures = self.tokens = 0
        self.harness_said: set[str] = set()
        self.stop_reason: StopReason = "max_steps"
        self.stop_detail = f"no stop after {self.cfg.max_steps} steps"
        self.started = time.monotonic()
        self.header = EpisodeHeader(
            episode_id=(ids or random_ids()).new_id(), request=request, task_id=setup.task_id, planner=deps.planner.info,
            harness_config={k: (asdict(v) if hasattr(v, "__dataclass_fields__") else v) for k, v in asdict(self.cfg).items()},
            eta_version=setup.eta_version, skills=list(self.loaded_skills), tools=list(self.tools.values()),
            kinds=list(self.kinds), preamble=[{"role": m.role, "content": m.content} for m in self.preamble],
            pocketpilot_version=__version__, parent_episode_id=setup.parent_episode_id,
            memory_retrieval=deps.memory.retrieval if isinstance(deps.memory, DescribesRetrieval) else None,
            policies=describe(self.policies), turn=turn, recalled=list(setup.recalled),
        )
        self.seen_prompt: str | None = None
        self.seen_tools: set[str] = set(self.tools)
        self.ended = False
        """The end record is written (or being written): a later cancellation adds no second one."""
        self.writer: TraceWriter | None = None
        if setup.trace_dir is not None:
            self.writer = TraceWriter(Path(setup.trace_dir) / f"{self.header.episode_id}.jsonl")

    @property
    def trace_path(self) -> Path | None:
        """Where this run's trace goes (None: no trace directory); the session reports it to its users."""
        return self.writer.path if self.writer is not None else None

    # ------------------------------------------------------------------ RunView

    @property
    def evidence(self) -> Sequence[str]:
        return self.setup.evidence

    @property
    def recalled(self) -> Sequence[RetrievedMemory]:
        return (*self.setup.recalled, *self.setup.user_recalled)

    @property
    def user_request(self) -> str:
        return self.request if self.setup.user_request is None else self.setup.user_request

    @property
    def delegated(self) -> bool:
        return self.setup.user_request is not None

    @property
    def owner(self) -> str | None:
        return self.deps.memory.owner if isinstance(self.deps.memory, ListsMemories) else None

    @property
    def prescribed(self) -> list[str]:
        notes = self.setup.guidance_for(list(self.tools)) if self.setup.guidance_for is not None else []
        return [*self.setup.guidance, *notes]

    @property
    def gate_history(self) -> list[Step]:
        return [*self.setup.gate_history, *self.steps]

    def said_by_harness(self, message: str) -> bool:
        return message in self.harness_said

    async def confirm(self, call: ToolCall, spec: ToolSpec) -> tuple[bool, str]:
        allowed = await self.deps.confirm(call, spec)
        return allowed, str(getattr(self.deps.confirm, "reason", type(self.deps.confirm).__name__))

    async def effect_of(self, call: ToolCall, spec: ToolSpec) -> tuple[ToolSpec, str]:
        """The spec's semantics, or what the executor says the call hits (a tap on "Send").

        A declared effect is the stricter of the two: a classification never waives a
        declared confirmation.
        """
        if not isinstance(self.deps.executor, ClassifiesEffects):
            return spec, ""
        effect = await self.deps.executor.effect_of(call)
        if effect is None or (spec.effect is not None and (spec.needs_confirmation or not effect.needs_confirmation)):
            return spec, ""
        return spec.with_effect(effect), effect.detail

    # ------------------------------------------------------------------ context and skills

    def prefix(self) -> tuple[ChatMessage, list[Notice]]:
        """The step's system message (rules, tools, guidance, loadable skills) and its budget notices."""
        filtered = self.setup.guidance_for(list(self.tools)) if self.setup.guidance_for is not None else []
        # the session's static guidance (an operating policy) goes right after the rules, ahead of
        # what the request changes (routed notes, loaded procedures): a long policy stays in the KV prefix
        static = len(self.setup.guidance)
        prefix, notices = self.assembler.prefix(list(self.tools.values()), self.kinds,
                                                [*filtered, *self.guidance[static:]], self.loadable(),
                                                policy=self.guidance[:static])
        return prefix, [Notice.of(n, policy="harness", code="guidance_over_budget") for n in notices]

    def _evidence(self) -> list[ChatMessage]:
        evidence = self.setup.evidence
        if self.cfg.memory.as_messages:  # each entry (the clock, the heading, every memory) a message of its own
            return [ChatMessage(role="user", content=entry, section="evidence") for entry in evidence]
        return [ChatMessage(role="user", content="\n\n".join(evidence), section="evidence")] if evidence else []

    def seen(self, prefix: ChatMessage) -> dict[str, Any]:
        """What this step's context holds that the trace has not recorded yet (``Step.system_prompt``)."""
        seen: dict[str, Any] = {}
        if prefix.content != self.seen_prompt:
            seen["system_prompt"] = self.seen_prompt = prefix.content
        added = [t for name, t in self.tools.items() if name not in self.seen_tools]
        if added:
            seen["tools_added"] = added
            self.seen_tools.update(t.name for t in added)
        return seen

    def loadable(self) -> list[str]:
        if self.deps.skills is None or "load_skill" not in self.kinds:
            return []
        return [n for n in self.deps.skills.available(list(self.tools)) if n not in self.loaded_skills]

    def apply_skill(self, name: str, *, gates: bool) -> list[str]:
        """Put a skill in force: its procedure, its tools and (when ``gates``) all its gates; returns tools added.

        ``always`` gates are in force already (the session got them at construction); a gate
        listed twice blocks no more than once.
        """
        assert self.deps.skills is not None
        skill: LoadedSkillView = self.deps.skills.load(name)
        self.loaded_skills.append(name)
        if gates:
            self.gates.extend(g for g in skill.gates if g not in self.gates)
        if skill.guidance:
            self.guidance.append(f"[{name}] {skill.guidance}")
        exposed = {t.name: t for t in self.deps.executor.tools()}
        added = [n for n in skill.exposes if n in exposed and n not in self.tools]
        self.tools.update((n, exposed[n]) for n in added)
        if self.exposure is not None:  # a loaded skill's tools stay shown, whatever retrieval ranks
            self.universe.update((n, exposed[n]) for n in skill.exposes if n in exposed)
            self.pinned += [n for n in skill.exposes if n in exposed and n not in self.pinned]
        return added

    # ------------------------------------------------------------------ tool exposure

    def refresh_exposure(self) -> bool:
        """Ask the exposure which tools to show for this step; True when the set changed (a new prefix).

        The state is the last step's feedback; the tools called in the run so far stay shown.
        """
        if self.exposure is None:
            return False
        used = [c.name for s in self.steps if isinstance(s.action, ToolCallAction) for c in s.action.calls]
        state = self.history[-1][-1].content if self.history else ""
        more = self.exposure.more_tools
        names = self.exposure.expose(state, [*self.pinned, *(n for n in used if n not in self.pinned)])
        tools = {n: self.universe[n] for n in names if n in self.universe}
        if more is not None:
            tools[more.name] = more
        changed = list(tools) != list(self.tools)
        self.tools = tools
        return changed

    def widen(self, query: str) -> ToolResult:
        """Answer the exposure's ``more_tools`` call: the tools added, shown from the next step on."""
        assert self.exposure is not None
        added = [n for n in self.exposure.widen(query, self.tools) if n in self.universe]
        self.pinned += [n for n in added if n not in self.pinned]
        self.tools.update((n, self.universe[n]) for n in added)
        return ToolResult.success({"added": [{"name": n, "description": self.universe[n].description} for n in added]})

    def brief(self, action: Delegate) -> Brief | None:
        """The delegate as the session's hand-off setting briefs it (:mod:`.brief`); None: no setting."""
        if self.setup.handoff is None:
            return None
        shown = self.delegable()
        more = self.exposure.more_tools if self.exposure is not None else None
        held = {n: t for n, t in {**self.universe, **self.tools}.items() if more is None or n != more.name}
        return prepare_brief(action, self.setup.handoff, user_request=self.user_request, steps=self.steps,
                             shown=shown, held=held)

    def delegable(self) -> dict[str, ToolSpec]:
        """The tools shown now that a sub-agent can be given (the harness's own widening tool is not one)."""
        more = self.exposure.more_tools if self.exposure is not None else None
        return {n: t for n, t in self.tools.items() if more is None or n != more.name}

    # ------------------------------------------------------------------ small helpers

    def stop(self, reason: StopReason, detail: str) -> None:
        """End the run with ``reason``: the loop reads the stop before its next step."""
        self.stop_reason, self.stop_detail = reason, detail

    def emit(self, event: RunEvent) -> None:
        """Tell the session's observer; its failure is logged, never the run's."""
        if self.deps.observer is None:
            return
        try:
            self.deps.observer.observe(event)
        except Exception:
            logger.exception("run observer %s failed on %s", type(self.deps.observer).__name__, event.kind)

    @staticmethod
    def feedback(results: Sequence[ToolResult], notices: Sequence[str]) -> str:
        """What the planner reads back: the results, and the notices of routing and the policies."""
        body: dict[str, Any] = {}
        if len(results) == 1:
            body = results[0].model_dump(mode="json", exclude_defaults=True)
            body.setdefault("ok", results[0].ok)
        elif results:
            body = {"results": [r.model_dump(mode="json", exclude_defaults=True) | {"ok": r.ok} for r in results]}
        if notices:
            body["notices"] = list(notices)
        return json.dumps(body, ensure_ascii=False, default=str)
