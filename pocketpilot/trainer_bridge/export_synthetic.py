"""Build episodes directly (no planner, no phone) for export benchmarks and tests.

The shapes follow what the harness records: a header with planner info and tools, tool_call
steps with one result per call, planner turns with token ids and log-probs, a final finish,
and a verdict. :func:`synthetic_episode` varies them deterministically from a seed: some runs
recover from a failed call, some stop on an invalid output, some fail their verdict.
"""

from __future__ import annotations

import random
from typing import Any

from ..contracts import (
    CriterionResult,
    Episode,
    EpisodeHeader,
    Finish,
    PlannerInfo,
    PlannerTurn,
    SamplerSettings,
    Step,
    ToolCall,
    ToolCallAction,
    ToolResult,
    ToolSpec,
    Verdict,
)

__all__ = ["SYNTHETIC_TOOLS", "make_episode", "synthetic_episode"]

SYNTHETIC_TOOLS = [
    ToolSpec(
        name="set_wifi",
        description="Turn wifi on or off.",
        parameters={"type": "object", "properties": {"enabled": {"type": "boolean"}}, "required": ["enabled"]},
    ),
    ToolSpec(
        name="send_sms",
        description="Send a text message.",
        parameters={
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string", "maxLength": 300}},
            "required": ["to", "body"],
        },
        destructive=True,
    ),
    ToolSpec(
        name="get_battery",
        description="Battery level.",
        parameters={"type": "object", "properties": {"unit": {"enum": ["percent", 1]}}},
    ),
]


def _turn(raw: str, rng: random.Random | None, n: int = 12) -> PlannerTurn:
    r = rng or random.Random(0)
    ids = [r.randrange(150_000) for _ in range(n)]
    return PlannerTurn(
        raw=raw,
        prompt_tokens=900,
        prompt_tokens_evaluated=40,
        completion_tokens=n,
        token_ids=ids,
        token_logprobs=[-r.random() for _ in ids],
        latency_s=0.1,
    )


def make_episode(
    steps: list[dict[str, Any]],
    *,
    task_id: str | None = "synthetic-task",
    request: str = "Turn wifi off",
    verdict: Verdict | None = None,
    stop_reason: str | None = "finish",
    tools: list[ToolSpec] | None = None,
    episode_id: str = "ep0",
    harness_config: dict[str, Any] | None = None,
    rng: random.Random | None = None,
) -> Episode:
    """An episode from compact step specs.

    Each spec is one of ``{"calls": [(name, args), ...], "results": [ToolResult, ...]}``,
    ``{"action": Action, "results": [...]}`` (optional ``retrieved``/``notices``), or
    ``{"invalid": "raw text"}`` for an unparseable output.
    """
    built: list[Step] = []
    for i, spec in enumerate(steps):
        if "invalid" in spec:
            from ..contracts import ToolError

            built.append(
                Step(
                    index=i,
                    context_digest=f"d{i}",
                    planner=_turn(spec["invalid"], rng),
                    error=ToolError(code="invalid_action", message="not JSON"),
                    notices=["Your last output was not a valid action."],
                )
            )
            continue
        action = spec.get("action") or ToolCallAction(
            calls=[ToolCall(name=n, arguments=a) for n, a in spec["calls"]]
        )
        built.append(
            Step(
                index=i,
                context_digest=f"d{i}",
                action=action,
                results=list(spec.get("results", [])),
                planner=_turn(action.model_dump_json(), rng),
                retrieved=list(spec.get("retrieved", [])),
                notices=list(spec.get("notices", [])),
            )
        )
    header = EpisodeHeader(
        episode_id=episode_id,
        request=request,
        task_id=task_id,
        planner=PlannerInfo(
            backend="llama_cpp",
            model="qwen2.5-coder-0.5b",
            model_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            quant_type="Q4_K_M",
            sampler=SamplerSettings(temperature=0.7, top_p=0.9, seed=1),
        ),
        tools=list(tools if tools is not None else SYNTHETIC_TOOLS),
        harness_config=dict(harness_config or {}),
    )
    return Episode(header=header, steps=built, stop_reason=stop_reason, verdict=verdict)  # type: ignore[arg-type]


def synthetic_episode(seed: int, *, tasks: int = 50) -> Episode:
    """A deterministic, varied episode (3–8 steps) for benchmarks."""
    rng = random.Random(seed)
    specs: list[dict[str, Any]] = []
    for _ in range(rng.randint(2, 7)):
        roll = rng.random()
        if roll < 0.08:
            specs.append({"invalid": "I think I should turn wifi {"})
        elif roll < 0.25:
            specs.append(
                {"calls": [("get_battery", {"unit": "kelvin"})], "results": [ToolResult.failure("invalid_arguments", "unit")]}
            )
        elif roll < 0.4:
            specs.append(
                {
                    "calls": [("set_wifi", {"enabled": False}), ("get_battery", {})],
                    "results": [ToolResult.success({"wifi": False}), ToolResult.success({"level": rng.randint(1, 100)})],
                }
            )
        else:
            specs.append({"calls": [("set_wifi", {"enabled": rng.random() < 0.5})], "results": [ToolResult.success({"ok": 1})]})
    specs.append({"action": Finish(summary=f"Done (run {seed})."), "results": []})
    success = rng.random() < 0.6
    verdict = Verdict(
        success=success,
        criteria=[
            CriterionResult(name="state settings.wifi == false", passed=success),
            CriterionResult(name="call set_wifi", passed=True),
        ],
    )
    return make_episode(
        specs,
        task_id=f"synthetic-{seed % tasks:03d}",
        request=f"Turn wifi off and tell me the battery ({seed % tasks})",
        verdict=verdict,
        episode_id=f"syn{seed:07d}",
        rng=rng,
    )
