"""What one run knows: its tools, gates, guidance, steps and header; the view its policies read."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..contracts import ChatMessage, EpisodeHeader, Notice, Step, StopReason, ToolCall, ToolResult, ToolSpec
from ..errors import UsageError
from ..executor.effects import ClassifiesEffects
from ..memory.base import DescribesRetrieval
from ..skills.base import LoadedSkillView, ToolGate
from ..tracing.trace import TraceWriter
from .context import ContextAssembler
from .observer import RunEvent
from .policies import describe, in_force

if TYPE_CHECKING:
    from .session import Session

__all__ = ["RunState"]

logger = logging.getLogger("pocketpilot.harness.loop")


class RunState:
    """Mutable state of one run, and the read-only view its policies get (:class:`~pocketpilot.harness.policies.RunView`)."""

    def __init__(self, session: Session, request: str, earlier: Sequence[ChatMessage] = (), turn: int = 0) -> None:
        self.s, self.request, self.cfg = session, request, session.config
        self.tools: dict[str, ToolSpec] = dict(session._base_tools)
        self.loaded_skills: list[str] = []
        self.gates: list[ToolGate] = list(session.gates)
        self.guidance = list(session.guidance)
        """Static guidance plus the procedures of skills loaded in this run."""
        self.kinds = session.kinds()
        if not self.kinds:
            raise UsageError("no action kind is offered to the planner")
        self.offered, self.withheld = self.kinds, frozenset[str]()
        for name in session.preloaded:
            self.apply_skill(name, gates=False)
        self.policies = in_force(session.policies)
        self.assembler = ContextAssembler(self.cfg.budget, session.planner.count_tokens)
        self.preamble = [*session.prior, *earlier, *self._evidence()]
        self.history: list[list[ChatMessage]] = []
        self.steps: list[Step] = []
        self.parse_failures = self.tokens = 0
        self.harness_said: set[str] = set()
        self.stop_reason: StopReason = "max_steps"
        self.stop_detail = f"no stop after {self.cfg.max_steps} steps"
        self.started = time.monotonic()
        self.header = EpisodeHeader(
            episode_id=uuid.uuid4().hex, request=request, task_id=session.task_id, planner=session.planner.info,
            harness_config={k: (asdict(v) if hasattr(v, "__dataclass_fields__") else v) for k, v in asdict(self.cfg).items()},
            eta_version=session.eta_version, skills=list(self.loaded_skills), tools=list(self.tools.values()),
            kinds=list(self.kinds), preamble=[{"role": m.role, "content": m.content} for m in self.preamble],
            pocketpilot_version=__version__, parent_episode_id=session.parent_episode_id,
            memory_retrieval=session.memory.retrieval if isinstance(session.memory, DescribesRetrieval) else None,
            policies=describe(self.policies), turn=turn,
        )
        self.seen_prompt: str | None = None
        self.seen_tools: set[str] = set(self.tools)
        self.ended = False
        """The end record is written (or being written): a later cancellation adds no second one."""
        self.writer: TraceWriter | None = None
        if session.trace_dir is not None:
            self.writer = TraceWriter(Path(session.trace_dir) / f"{self.header.episode_id}.jsonl")
            session.trace_path = self.writer.path

    # ------------------------------------------------------------------ RunView

    @property
    def evidence(self) -> Sequence[str]:
        return self.s.evidence

    @property
    def prescribed(self) -> list[str]:
        notes = self.s.guidance_for(list(self.tools)) if self.s.guidance_for is not None else []
        return [*self.s.guidance, *notes]

    @property
    def gate_history(self) -> list[Step]:
        return [*self.s.gate_history, *self.steps]

    def said_by_harness(self, message: str) -> bool:
        return message in self.harness_said

    async def confirm(self, call: ToolCall, spec: ToolSpec) -> tuple[bool, str]:
        allowed = await self.s.confirm(call, spec)
        return allowed, str(getattr(self.s.confirm, "reason", type(self.s.confirm).__name__))

    async def effect_of(self, call: ToolCall, spec: ToolSpec) -> tuple[ToolSpec, str]:
        """The spec's semantics, or what the executor says the call hits (a tap on "Send").

        A declared effect is the stricter of the two: a classification never waives a
        declared confirmation.
        """
        if not isinstance(self.s.executor, ClassifiesEffects):
            return spec, ""
        effect = await self.s.executor.effect_of(call)
        if effect is None or (spec.effect is not None and (spec.needs_confirmation or not effect.needs_confirmation)):
            return spec, ""
        return spec.with_effect(effect), effect.detail

    # ------------------------------------------------------------------ context and skills

    def _prefix(self) -> tuple[ChatMessage, list[Notice]]:
        filtered = self.s.guidance_for(list(self.tools)) if self.s.guidance_for is not None else []
        # the session's static guidance (an operating policy) goes right after the rules, ahead of
        # what the request changes (routed notes, loaded procedures): a long policy stays in the KV prefix
        static = len(self.s.guidance)
        prefix, notices = self.assembler.prefix(list(self.tools.values()), self.kinds,
                                                [*filtered, *self.guidance[static:]], self.loadable(),
                                                policy=self.guidance[:static])
        return prefix, [Notice.of(n, policy="harness", code="guidance_over_budget") for n in notices]

    def _evidence(self) -> list[ChatMessage]:
        return [ChatMessage(role="user", content="\n\n".join(self.s.evidence), section="evidence")] if self.s.evidence else []

    def _seen(self, prefix: ChatMessage) -> dict[str, Any]:
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
        if self.s.skills is None or "load_skill" not in self.kinds:
            return []
        return [n for n in self.s.skills.available(list(self.tools)) if n not in self.loaded_skills]

    def apply_skill(self, name: str, *, gates: bool) -> list[str]:
        """Put a skill in force: its procedure, its tools and (when ``gates``) all its gates; returns tools added.

        ``always`` gates are in force already (the session got them at construction); a gate
        listed twice blocks no more than once.
        """
        assert self.s.skills is not None
        skill: LoadedSkillView = self.s.skills.load(name)
        self.loaded_skills.append(name)
        if gates:
            self.gates.extend(g for g in skill.gates if g not in self.gates)
        if skill.guidance:
            self.guidance.append(f"[{name}] {skill.guidance}")
        exposed = {t.name: t for t in self.s.executor.tools()}
        added = [n for n in skill.exposes if n in exposed and n not in self.tools]
        self.tools.update((n, exposed[n]) for n in added)
        return added

    # ------------------------------------------------------------------ small helpers

    def _set_stop(self, reason: StopReason, detail: str) -> None:
        self.stop_reason, self.stop_detail = reason, detail

    def emit(self, event: RunEvent) -> None:
        """Tell the session's observer; its failure is logged, never the run's."""
        if self.s.observer is None:
            return
        try:
            self.s.observer.observe(event)
        except Exception:
            logger.exception("run observer %s failed on %s", type(self.s.observer).__name__, event.kind)

    @staticmethod
    def _feedback(results: Sequence[ToolResult], notices: Sequence[str]) -> str:
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
