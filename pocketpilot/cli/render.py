"""Human-readable rendering of steps, episodes and verdicts (the CLI is the only code that prints)."""

from __future__ import annotations

import json
from typing import Any

from ..contracts import Episode, Step, ToolCallAction, ToolResult, Verdict

__all__ = ["render_episode", "render_step", "render_verdict"]


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _result(result: ToolResult) -> str:
    if result.ok:
        mark = "ok (simulated)" if result.simulated else "ok"
        return f"{mark} {_short(result.data)}" if result.data is not None else mark
    assert result.error is not None
    return f"FAILED {result.error.code}: {_short(result.error.message)}"


def render_step(step: Step) -> str:
    """A few lines: the action, each call's result, notices, timing."""
    turn = step.planner
    timing = f"{step.duration_s:.1f}s"
    if turn is not None and turn.prompt_tokens:
        timing += (f", {turn.prompt_tokens_evaluated}/{turn.prompt_tokens} prompt tok evaluated, "
                   f"{turn.completion_tokens} generated")
    lines = []
    action = step.action
    if action is None:
        raw = turn.raw if turn else ""
        lines.append(f"step {step.index + 1}: invalid output ({timing})")
        lines.append(f"    raw: {_short(raw)}")
        if step.error:
            lines.append(f"    -> {step.error.code}: {step.error.message}")
    elif isinstance(action, ToolCallAction):
        lines.append(f"step {step.index + 1}: tool_call ({timing})")
        for i, call in enumerate(action.calls):
            args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
            lines.append(f"    {call.name}({args})")
            if i < len(step.results):
                lines.append(f"      -> {_result(step.results[i])}")
    else:
        fields = action.model_dump(exclude={"kind"}, exclude_defaults=True)
        lines.append(f"step {step.index + 1}: {action.kind} {_short(fields)} ({timing})")
        for result in step.results:
            lines.append(f"    -> {_result(result)}")
    for notice in step.notices:
        lines.append(f"    ! {notice}")
    for child in step.children:
        lines.append(f"    sub-agent ({len(child.steps)} steps, {child.stop_reason}):")
        lines.extend("      " + line for cs in child.steps for line in render_step(cs).splitlines())
    return "\n".join(lines)


def render_verdict(verdict: Verdict | None) -> str:
    """The verifier's judgement, one line per criterion."""
    if verdict is None:
        return "verdict: none (no verifier for this run)"
    head = f"verdict: {'SUCCESS' if verdict.success else 'FAILURE'} ({verdict.progress:.0%} of criteria met)"
    marks = [f"  [{'x' if c.passed else ' '}] {c.name}" + (f" — {c.detail}" if c.detail and not c.passed else "")
             for c in verdict.criteria]
    return "\n".join([head, *marks])


def render_episode(episode: Episode, complete: bool = True) -> str:
    """A whole episode: header, steps, stop reason, verdict."""
    h = episode.header
    p = h.planner
    lines = [
        f"episode {h.episode_id}" + (f" (task {h.task_id})" if h.task_id else ""),
        f"request: {h.request}",
        f"planner: {p.backend} {p.model}" + (f" {p.quant_type}" if p.quant_type else "")
        + (f" sha256:{p.model_sha256[:12]}" if p.model_sha256 else "")
        + f" temp={p.sampler.temperature}",
        f"tools: {', '.join(t.name for t in h.tools)}",
    ]
    if h.eta_version:
        lines.append(f"harness config η: {h.eta_version}")
    lines.append("")
    lines.extend(render_step(s) for s in episode.steps)
    lines.append("")
    if not complete:
        lines.append("stopped: the run did not finish writing this trace (crash or kill)")
    else:
        lines.append(f"stopped: {episode.stop_reason} — {episode.stop_detail}")
        usage = episode.usage()
        lines.append(
            f"usage: {len(episode.steps)} steps, {usage['prompt_tokens_evaluated']} prompt tokens evaluated, "
            f"{usage['completion_tokens']} generated"
        )
        lines.append(render_verdict(episode.verdict))
    return "\n".join(lines)
