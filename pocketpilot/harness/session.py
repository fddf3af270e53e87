"""The public face of the harness: a :class:`Session` runs requests through the loop to a stop.

A session runs one request to a stop (verified completion claim, clarification, refusal,
exhausted budget) and returns the :class:`~pocketpilot.contracts.Episode`; called again, it
carries the earlier requests and what was done about them into the next one's context (a
companion app is a conversation: "about the casting from before" must resolve). Its
dependencies arrive through the constructor as protocols; several sessions (several devices)
share one event loop, because everything that blocks runs in worker threads. The loop itself
is :mod:`pocketpilot.harness.loop`; its interventions are policies.

A session given a memory recalls for each request before its first step
(:mod:`pocketpilot.harness.recall`): an app that builds a session gets what the bench's harness
mode gets, placed as ``HarnessConfig.memory`` says (whole when it fits, dated under the
``clock``'s date, the owner's own statements marked as standing wishes), and the trace header
records each recalled memory with its provenance.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from ..contracts import (
    ACTION_KINDS,
    ChatMessage,
    Delegate,
    Episode,
    Finish,
    RetrievedMemory,
    Step,
    ToolCallAction,
    ToolSpec,
)
from ..errors import UsageError
from ..ids import IdSource
from ..memory.base import ListsMemories
from .base import Confirmer, Executor, MemoryStore, Planner, SkillStore, ToolExposure, ToolGate, Verifier
from .brief import Handoff
from .config import HarnessConfig
from .confirm import DenyAll
from .loop import Run
from .observer import RunEnded, RunObserver
from .policies import Policy
from .policies._text import call_text
from .recall import Recall, device_clock, recall, render_recall
from .run_state import RunDeps, RunSetup, RunState

__all__ = ["HarnessConfig", "Session"]


def _turn_messages(episode: Episode) -> list[ChatMessage]:
    """An earlier request and what was done about it, as two messages of the conversation."""
    lines = []
    for step in episode.steps:
        if isinstance(step.action, ToolCallAction):
            for call, result in zip(step.action.calls, step.results, strict=False):
                got = json.dumps(result.data, ensure_ascii=False, default=str) if result.ok else \
                    f"failed: {result.error.code if result.error else 'error'}"
                lines.append(f"{call_text(call)} -> {got[:200]}")
    final = episode.final_action
    end = final.summary if isinstance(final, Finish) else f"{episode.stop_reason}: {episode.stop_detail}"
    done = ("Calls: " + "; ".join(lines) + "\n") if lines else ""
    return [ChatMessage(role="user", content=episode.header.request, section="conversation"),
            ChatMessage(role="assistant", content=f"{done}Result: {end}", section="conversation")]


class Session:
    """Runs requests through planner → executor/memory/skills → feedback until a stop rule fires."""

    def __init__(
        self,
        planner: Planner,
        executor: Executor,
        *,
        config: HarnessConfig | None = None,
        memory: MemoryStore | None = None,
        skills: SkillStore | None = None,
        confirm: Confirmer | None = None,
        verifier: Verifier | None = None,
        tools: Sequence[str] | None = None,
        guidance: Sequence[str] = (),
        trace_dir: Path | None = None,
        task_id: str | None = None,
        eta_version: str | None = None,
        depth: int = 0,
        on_step: Callable[[Step], None] | None = None,
        gates: Sequence[ToolGate] = (),
        prior: Sequence[ChatMessage] = (),
        actions: Sequence[str] | None = None,
        guidance_for: Callable[[Sequence[str]], list[str]] | None = None,
        evidence: Sequence[str] = (),
        preloaded: Sequence[str] = (),
        gate_history: Sequence[Step] = (),
        subagent_verifier: Verifier | None = None,
        observer: RunObserver | None = None,
        policies: Sequence[Policy] | None = None,
        tool_text: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] | None = None,
        recalled: Recall | None = None,
        tool_exposure: ToolExposure | None = None,
        subagent_ids: IdSource | None = None,
        handoff: Handoff | None = None,
    ) -> None:
        self.planner = planner
        self.handoff = handoff
        """How a delegate's sub-agent is briefed (:mod:`.brief`: η's ``delegation`` section); None: the
        planner's delegate as written, its instruction and artifacts the child's one message."""
        self.subagent_ids = subagent_ids
        """Mints the episode ids of this session's sub-agents (None: random uuid4s), which a
        delegation's result shows the planner: a seeded source (:class:`~pocketpilot.ids.SeededIds`)
        makes an episode of a task repeat them. The session's own episode ids stay random: they
        name its trace files and are never shown to the planner. Sub-agents pass it on."""
        self.tool_exposure = tool_exposure
        """Chooses the tools each step shows, among ``tools`` (the adapter's retrieval); None: all, always.
        Sub-agents get the tools their delegation names, with no exposure of their own."""
        self.clock = clock
        """Reads the device's date and time at the start of each request: shown as evidence (so
        "tomorrow" resolves) and as today's date over the recalled memories. None: not shown."""
        self._given_recall = recalled
        """Memories the caller recalled for the first request already (it routed on them): that
        run shows these instead of recalling again; later requests recall for themselves."""
        self.policies = None if policies is None else list(policies)
        """The harness policies, in order (None: :func:`~pocketpilot.harness.policies.default_policies`).
        Each run gets fresh copies; gates and confirmation are always in force (``in_force``)."""
        self.turns: list[Episode] = []
        """Earlier requests of this session and their episodes, oldest first (the conversation)."""
        self.subagent_verifier = subagent_verifier
        """Judges each sub-agent's episode; a hand-off it rejects is not confirmed to the parent."""
        self.observer = observer
        """Told about each run, planner call and tool call as it starts and ends (tracing, e.g.
        :class:`pocketpilot.otel.OtelObserver`); sub-agents report to the same observer."""
        self.parent_step: int | None = None
        """Set on a sub-agent session: the parent's step whose delegate started it."""
        self.prior = list(prior)
        """Earlier conversation shown before the request (e.g. a bare planner's memories as raw
        history); the caller fits it to its budget. Sub-agents do not inherit it."""
        self.actions = None if actions is None else tuple(actions)
        """Action kinds offered to the planner (None: every kind this session can route). A
        harness narrows it per request: an action the request cannot need only costs the
        planner a wasted step and prompt tokens."""
        self.guidance_for = guidance_for
        """Guidance filtered to the tools exposed *now*; called with the current tool names at
        the start and again whenever ``load_skill`` exposes new tools (the adapter's filter).
        Its entries come after the rules, actions and tools; the static ``guidance`` (standing
        guidance, such as an operating policy) comes right after the rules, so a long policy
        stays in the KV prefix whatever the request routes."""
        self.preloaded = list(preloaded)
        """Skills in force from the first step, as if loaded (the adapter routed the request to
        them): their procedures are in the first context and their tools exposed, so the planner
        spends no ``load_skill`` step. Their ``when: loaded`` gates are *not* applied: those
        encode an intent only the planner's own ``load_skill`` signals, and a routing guess must
        never turn a request into a dead end."""
        if preloaded and skills is None:
            raise UsageError("preloaded skills need a skill store")
        self.gate_history = list(gate_history)
        """Steps that happened before this session and count as evidence for its gates: a
        sub-agent gets its parent's completed steps, so a cast the parent stopped is known
        stopped to the child (its gates otherwise see an empty history and block)."""
        self.evidence = list(evidence)
        """Request-specific evidence (e.g. recalled memories with provenance), shown as one
        message right before the request: after the stable prefix, so the KV cache of rules,
        tools and guidance is reused across requests."""
        self.on_step = on_step
        self.gates = list(gates)
        """Called with each step as soon as it is recorded (progress display, live dashboards)."""
        self.executor = executor
        self.config = config or HarnessConfig()
        self.memory = memory
        self.skills = skills
        self.confirm: Confirmer = confirm or DenyAll()
        self.verifier = verifier
        self.guidance = list(guidance)
        self.trace_dir = trace_dir
        self.task_id = task_id
        self.eta_version = eta_version
        self.depth = depth
        available = {t.name: t for t in executor.tools()}
        if tools is not None:
            missing = [n for n in tools if n not in available]
            if missing:
                raise UsageError(f"tools not provided by the executor: {', '.join(missing)}")
            available = {n: available[n] for n in tools}
        self.tool_text = dict(tool_text or {})
        """Descriptions η revised (``ToolEntry.revised_description``), shown in place of the tools'
        own; the tools and their schemas are otherwise the executor's. Sub-agents inherit them."""
        for name, text in self.tool_text.items():
            if name in available:
                available[name] = available[name].model_copy(update={"description": text})
        self._base_tools = available
        self._trace_path: Path | None = None
        self.parent_episode_id: str | None = None
        """Set on a sub-agent session: the episode of the parent that delegated to it."""
        self.user_request: str | None = None
        """Set on a sub-agent session: the user's request its parent's run serves (the
        sub-agent's own request is an instruction the planner wrote, and grounds no setting)."""
        self.user_recalled: tuple[RetrievedMemory, ...] = ()
        """Set on a sub-agent session: the memories recalled for the user's request (the owner's
        standing wishes among them still ground a setting in the sub-agent)."""
        self._serving: tuple[str, tuple[RetrievedMemory, ...]] = ("", ())
        """The request the current run serves and what was recalled for it (a sub-agent inherits them)."""

    # ------------------------------------------------------------------ public

    async def run(self, request: str) -> Episode:
        """Run ``request`` to a stop and return the episode (the trace is written as it goes).

        Earlier requests of this session come before it in the context, newest kept first
        within ``ContextBudget.conversation``; use :meth:`forget` to start afresh.
        """
        if not request.strip():
            raise UsageError("empty request")
        state: Run | None = None
        earlier = self._conversation()
        try:
            await self.planner.load()  # the header records the model's sha256 and quantization
            hits, evidence = await self._recall(request)
            self._serving = (request, tuple(hits))
            state = self._new_run(request, earlier, evidence=evidence, recalled=hits)
            # start() inside: a Ctrl-C while the header is being written still gets its end record
            await state.start()
            await state.loop()
            # inside too: a Ctrl-C while the verifier runs still ends the trace (as cancelled)
            episode = await state.finish(state.state.stop_reason, state.state.stop_detail)
        except asyncio.CancelledError:
            if state is None:  # cancelled while the model loaded: the trace still says so
                state = self._new_run(request, earlier)
                await state.start()
            if not state.state.ended:
                await state.finish("cancelled", "cancelled (Ctrl-C or task cancellation)", run_verifier=False)
            raise
        except Exception as exc:
            if state is not None and not state.state.ended:  # an observer's open spans still end
                state.state.emit(RunEnded(episode_id=state.state.header.episode_id, error=f"{type(exc).__name__}: {exc}"))
            raise
        self.turns.append(episode)
        return episode

    @property
    def trace_path(self) -> Path | None:
        """The trace file of the latest run that wrote one (None: no trace directory, or no run yet)."""
        return self._trace_path

    def forget(self) -> None:
        """Drop the conversation: the next request starts without earlier turns."""
        self.turns.clear()

    def _conversation(self) -> list[ChatMessage]:
        """Earlier turns, newest kept whole while they fit the conversation budget."""
        kept: list[list[ChatMessage]] = []
        used = 0
        for episode in reversed(self.turns):
            pair = _turn_messages(episode)
            cost = sum(self.planner.count_tokens(m.content) for m in pair)
            if used + cost > self.config.budget.conversation:
                break
            kept.append(pair)
            used += cost
        return [m for pair in reversed(kept) for m in pair]

    def run_sync(self, request: str) -> Episode:
        """Blocking wrapper for scripts without an event loop; refuses inside a running loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(request))
        raise UsageError("run_sync() inside a running event loop; use `await session.run()`")

    # ------------------------------------------------------------------ helpers used by the loop

    async def _recall(self, request: str) -> tuple[list[RetrievedMemory], list[str]]:
        """The memories recalled for ``request`` and the run's evidence: the clock, the caller's
        evidence, the memories as :class:`~pocketpilot.harness.recall.MemoryPlacement` places them.

        Only a top-level session recalls: a sub-agent works from its instruction and the
        artifacts its parent passed, not from the owner's history.
        """
        now = self.clock() if self.clock is not None else None
        evidence = [*([device_clock(now)] if now is not None else []), *self.evidence]
        placement = self.config.memory
        given, self._given_recall = self._given_recall, None
        if self.memory is None or not placement.recall or self.depth > 0:
            return [], evidence
        owner = self.memory.owner if isinstance(self.memory, ListsMemories) else None
        got = given if given is not None else await recall(self.memory, request, placement, self.planner.count_tokens,
                                                           owner=owner, now=now)
        return list(got.hits), [*evidence, *render_recall(got.hits, placement, now=now, owner=owner, whole=got.history)]

    def _new_run(self, request: str, earlier: Sequence[ChatMessage], *, evidence: Sequence[str] | None = None,
                 recalled: Sequence[RetrievedMemory] = ()) -> Run:
        """One run over what this session holds now; the run reads its deps and setup, never the session."""
        deps = RunDeps(planner=self.planner, executor=self.executor, memory=self.memory, skills=self.skills,
                       confirm=self.confirm, verifier=self.verifier, observer=self.observer,
                       spawn_child=self.child, on_step=self.on_step)
        setup = RunSetup(
            config=self.config, tools=dict(self._base_tools), kinds=self.kinds(), gates=tuple(self.gates),
            guidance=tuple(self.guidance), guidance_for=self.guidance_for,
            evidence=tuple(self.evidence if evidence is None else evidence), recalled=tuple(recalled),
            user_request=self.user_request, user_recalled=self.user_recalled,
            gate_history=tuple(self.gate_history), prior=tuple(self.prior), preloaded=tuple(self.preloaded),
            policies=None if self.policies is None else tuple(self.policies), task_id=self.task_id,
            eta_version=self.eta_version, parent_episode_id=self.parent_episode_id, depth=self.depth,
            parent_step=self.parent_step, trace_dir=self.trace_dir, exposure=self.tool_exposure,
            handoff=self.handoff,
        )
        state = RunState(deps, setup, request, earlier, turn=len(self.turns),
                         ids=self.subagent_ids if self.depth > 0 else None)
        if state.trace_path is not None:  # told to users as soon as the file is named, as before
            self._trace_path = state.trace_path
        return Run(state)


    def kinds(self) -> tuple[str, ...]:
        """Action kinds this session can route."""
        kinds = list(ACTION_KINDS)
        if self.memory is None:
            kinds.remove("memory_search")
            kinds.remove("memory_write")
        if self.skills is None:
            kinds.remove("load_skill")
        if self.depth >= self.config.max_delegate_depth:
            kinds.remove("delegate")
        if self.actions is not None:
            unknown = [k for k in self.actions if k not in ACTION_KINDS]
            if unknown:
                raise UsageError(f"unknown action kinds: {', '.join(unknown)}")
            kinds = [k for k in kinds if k in self.actions]
        return tuple(kinds)

    def child(
        self,
        action: Delegate,
        tools: dict[str, ToolSpec],
        gates: Sequence[ToolGate] = (),
        history: Sequence[Step] = (),
    ) -> Session:
        """A sub-agent session: its own instruction and tools, the same planner and policies.

        The child sees only ``action.tools`` (all of the parent's current tools when empty), so
        a GUI sub-agent confined to one app is a delegate listing that app's tools. It inherits
        the parent's gates: a precondition holds for sub-agents as for the parent, judged on
        everything that happened before it started (``history``: the parent's completed steps)
        as well as on its own steps.

        Raises:
            UsageError: ``action.tools`` names a tool the parent does not expose.
        """
        names = action.tools or list(tools)
        unknown = [n for n in names if n not in tools]
        if unknown:
            raise UsageError(f"cannot delegate tools that are not exposed here: {', '.join(unknown)}")
        sub = Session(
            self.planner,
            self.executor,
            config=self.config,
            memory=self.memory,
            skills=None,
            confirm=self.confirm,
            verifier=self.subagent_verifier,
            tools=names,
            trace_dir=None,
            eta_version=self.eta_version,
            depth=self.depth + 1,
            gates=gates,
            actions=self.actions,
            gate_history=[*self.gate_history, *history],
            subagent_verifier=self.subagent_verifier,
            observer=self.observer,
            policies=self.policies,
            tool_text=self.tool_text,
            subagent_ids=self.subagent_ids,
            handoff=self.handoff,
            # the brief's guidance switch: the adapter's notes over the child's own tools
            guidance_for=self.handoff.child_guidance if self.handoff is not None and self.handoff.settings.guidance else None,
        )
        asked, recalled = self._serving
        delegated = self.user_request is not None
        sub.user_request = self.user_request if delegated else asked
        sub.user_recalled = self.user_recalled if delegated else recalled
        return sub
