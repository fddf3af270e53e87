"""A trace as one self-contained HTML page that people can look at and pass around.

The page must open from a file, an attachment or an air-gapped laptop, so it carries its own
CSS and an inline SVG chart and references nothing outside itself. It holds no script at all:
tool results, memories and model outputs are hostile input (a web page, a message, a note the
user was sent), and with autoescaping plus a Content-Security-Policy that allows no script, a
result that contains ``<script>`` shows as text and cannot run even if escaping were missed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jinja2

from ..contracts import Episode, Step, ToolCallAction, ToolResult

__all__ = ["StepBar", "render_replay", "seconds", "step_chart"]

_HOLD_CODES = frozenset({"precondition_failed", "confirmation_denied", "not_allowed"})
"""Error codes the harness's policies answer with (gate holds, denials), shown as holds."""

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("pocketpilot.tracing", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


_ENV.filters["pretty"] = _json
_ENV.filters["seconds"] = lambda v: seconds(float(v))


@dataclass(frozen=True)
class StepBar:
    """One step in the chart: where its latency bar and its token point go."""

    index: int
    x: float
    width: float
    bar_y: float
    bar_height: float
    point_y: float
    latency_s: float
    planner_s: float
    tokens: int
    state: str
    """``ok``, ``held`` (a policy held a call back) or ``error``: the bar's colour."""


def _tokens(step: Step) -> int:
    turn = step.planner
    return 0 if turn is None else turn.prompt_tokens_evaluated + turn.completion_tokens


def _state(step: Step) -> str:
    if any(r.error is not None and r.error.code in _HOLD_CODES for r in step.results):
        return "held"
    if step.error is not None or any(not r.ok for r in step.results):
        return "error"
    return "ok"


def seconds(value: float) -> str:
    """A duration people read at a glance: milliseconds below a second."""
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def step_chart(steps: list[Step], *, height: float = 140.0, slot: float = 36.0) -> dict[str, Any]:
    """Geometry of the per-step chart: a latency bar and a token point per step, own scales."""
    top, bottom = 12.0, 18.0
    plot = height - top - bottom
    max_s = max((s.duration_s for s in steps), default=0.0) or 1.0
    max_tok = max((_tokens(s) for s in steps), default=0) or 1
    bars = []
    for i, step in enumerate(steps):
        h = plot * step.duration_s / max_s
        bars.append(
            StepBar(
                index=step.index,
                x=40 + i * slot + slot * 0.15,
                width=slot * 0.7,
                bar_y=top + plot - h,
                bar_height=h,
                point_y=top + plot - plot * _tokens(step) / max_tok,
                latency_s=step.duration_s,
                planner_s=step.planner.latency_s if step.planner else 0.0,
                tokens=_tokens(step),
                state=_state(step),
            )
        )
    return {
        "width": 40 + max(len(steps), 1) * slot + 48,
        "height": height,
        "top": top,
        "base": top + plot,
        "max_s": max_s,
        "max_tok": max_tok,
        "bars": bars,
        "line": " ".join(f"{b.x + b.width / 2:.1f},{b.point_y:.1f}" for b in bars),
    }


def _result_view(result: ToolResult) -> dict[str, Any]:
    code = result.error.code if result.error else None
    return {
        "ok": result.ok,
        "held": code in _HOLD_CODES,
        "code": code,
        "message": result.error.message if result.error else "",
        "data": None if result.data is None else _json(result.data),
        "simulated": result.simulated,
    }


def _step_view(step: Step) -> dict[str, Any]:
    action = step.action
    calls: list[dict[str, Any]] = []
    fields: str | None = None
    if isinstance(action, ToolCallAction):
        for i, call in enumerate(action.calls):
            result = step.results[i] if i < len(step.results) else None
            calls.append({"name": call.name, "arguments": _json(call.arguments),
                          "result": _result_view(result) if result else None})
        extra = [_result_view(r) for r in step.results[len(action.calls):]]
    else:
        if action is not None:
            fields = _json(action.model_dump(mode="json", exclude={"kind"}, exclude_defaults=True))
        extra = [_result_view(r) for r in step.results]
    return {
        "step": step,
        "kind": action.kind if action is not None else "invalid output",
        "fields": fields,
        "calls": calls,
        "results": extra,
        "held": _state(step) == "held",
        "by_harness": step.planner is None and step.action is not None,
        "tokens": _tokens(step),
        "children": [_episode_view(child, True) for child in step.children],
    }


def _episode_view(episode: Episode, complete: bool) -> dict[str, Any]:
    usage = episode.usage()
    return {
        "episode": episode,
        "header": episode.header,
        "complete": complete,
        "steps": [_step_view(s) for s in episode.steps],
        "chart": step_chart(episode.steps),
        "usage": usage,
        "duration_s": sum(s.duration_s for s in episode.steps),
    }


def render_replay(episode: Episode, complete: bool = True) -> str:
    """The whole episode (sub-agents nested) as one HTML document with no external reference."""
    view = _episode_view(episode, complete)
    template = _ENV.get_template("replay.html.j2")
    return template.render(view=view, harness_config=_json(episode.header.harness_config))
