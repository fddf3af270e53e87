"""Parity gate: does the deployable file still predict like the reference it came from?

The deployable (a quantized file, or the serving base with a LoRA applied) and the reference
(the unquantized export, or the base with the adapter in full precision) both score the same
probe prompts; at every position we compare the next-token distributions:

- top-1 agreement: share of positions whose argmax token is the same;
- mean KL(reference ‖ deployable) in nats over those positions.

Logits come from llama.cpp itself (``logits_all=True``), i.e. from the exact runtime that will
serve the file, so a build or quantization problem shows up here and not on a phone.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from .errors import CheckpointIntegrityError, GateFailedError

__all__ = [
    "DEFAULT_PROBES",
    "ModelTarget",
    "ParityBounds",
    "ParityMeasure",
    "ParityReport",
    "compare_logits",
    "measure_parity",
    "parity_gate",
]

logger = logging.getLogger(__name__)

DEFAULT_PROBES: tuple[str, ...] = (
    "Turn on do not disturb until 7am and set an alarm for 6:30.",
    '{"kind": "tool_call", "calls": [{"name": "send_message", "arguments": {"to": "Alice", "text": "On my way"}}]}',
    "Save a note with my parking spot: level 3, row F. Then power off the phone.",
    "The user asked to text him, but two contacts match. Ask which one before sending.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))",
    "Search memory for the user's preferred coffee order and add it to the shopping list.",
    "Battery is at 12%. If it is below 15%, enable battery saver; otherwise do nothing.",
    "Refuse: the request asks to delete every contact without confirmation.",
)
"""Short planner-flavoured prompts: tool-call JSON, requests, a little code."""


@dataclass(frozen=True)
class ModelTarget:
    """A model file plus an optional LoRA applied on top (what llama.cpp would load)."""

    model: Path
    lora: Path | None = None

    def describe(self) -> str:
        """``model`` or ``model + lora`` by file name."""
        return self.model.name + (f" + {self.lora.name}" if self.lora else "")


class ParityBounds(BaseModel):
    """Pass thresholds (configurable per import)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_top1_agreement: float = 0.85
    max_mean_kl: float = 0.15

    def admits(self, top1_agreement: float, mean_kl: float) -> bool:
        """Whether figures measured against the reference pass."""
        return top1_agreement >= self.min_top1_agreement and mean_kl <= self.max_mean_kl


class ParityReport(BaseModel):
    """What the parity gate measured."""

    model_config = ConfigDict(frozen=True)

    deployable: str
    reference: str
    prompts: int
    positions: int
    top1_agreement: float
    mean_kl: float
    max_kl: float
    wall_s: float
    bounds: ParityBounds
    passed: bool


class ParityMeasure(Protocol):
    """How the import measures parity (:func:`measure_parity` runs llama.cpp; tests pass a cheap one)."""

    def __call__(self, deployable: ModelTarget, reference: ModelTarget, prompts: Sequence[str], *,
                 bounds: ParityBounds | None = None) -> ParityReport:
        """Score ``prompts`` with both targets (blocking) and report against ``bounds``."""
        ...


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64, copy=False)
    peak = x.max(axis=-1, keepdims=True)
    return x - peak - np.log(np.exp(x - peak).sum(axis=-1, keepdims=True))


def compare_logits(reference: np.ndarray, deployable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-position top-1 agreement (bool) and KL(reference ‖ deployable) for two [positions, vocab] arrays."""
    if reference.shape != deployable.shape:
        raise ValueError(f"logit shapes differ: {reference.shape} vs {deployable.shape}")
    ref, dep = _log_softmax(reference), _log_softmax(deployable)
    agree = reference.argmax(axis=-1) == deployable.argmax(axis=-1)
    kl = (np.exp(ref) * (ref - dep)).sum(axis=-1)
    return agree, np.maximum(kl, 0.0)


def _open(target: ModelTarget, n_ctx: int, threads: int | None) -> Any:
    from llama_cpp import Llama

    kwargs: dict[str, Any] = {"n_ctx": n_ctx, "logits_all": True, "verbose": False,
                              "n_threads": threads or max(1, os.cpu_count() or 1)}
    if target.lora is not None:
        kwargs["lora_path"] = os.fspath(target.lora)
    try:
        return Llama(model_path=os.fspath(target.model), **kwargs)
    except (ValueError, RuntimeError, OSError) as exc:
        raise CheckpointIntegrityError(target.describe(), f"llama.cpp could not load it: {exc}") from exc


def _logits(llm: Any, tokens: list[int]) -> np.ndarray:
    llm.reset()
    llm.eval(tokens)
    return np.array(llm.scores[: len(tokens)], dtype=np.float32)


def measure_parity(
    deployable: ModelTarget,
    reference: ModelTarget,
    prompts: Sequence[str] = DEFAULT_PROBES,
    *,
    bounds: ParityBounds | None = None,
    n_ctx: int = 512,
    threads: int | None = None,
) -> ParityReport:
    """Score ``prompts`` with both targets and report agreement and KL (blocking; seconds per model).

    Both models use the reference's tokenization, so positions line up exactly (the import
    has already checked that the tokenizers match).
    """
    bounds = bounds or ParityBounds()
    if not prompts:
        raise ValueError("the parity probe set is empty")
    t0 = time.monotonic()
    ref_llm = _open(reference, n_ctx, threads)
    dep_llm = None
    try:
        dep_llm = _open(deployable, n_ctx, threads)
        agrees, kls = [], []
        for prompt in prompts:
            tokens = ref_llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)[: n_ctx - 1]
            agree, kl = compare_logits(_logits(ref_llm, tokens), _logits(dep_llm, tokens))
            agrees.append(agree)
            kls.append(kl)
    finally:
        for llm in (ref_llm, dep_llm):
            if llm is not None:
                llm.close()
    agree_all, kl_all = np.concatenate(agrees), np.concatenate(kls)
    top1, mean_kl = float(agree_all.mean()), float(kl_all.mean())
    report = ParityReport(
        deployable=deployable.describe(),
        reference=reference.describe(),
        prompts=len(prompts),
        positions=int(agree_all.size),
        top1_agreement=top1,
        mean_kl=mean_kl,
        max_kl=float(kl_all.max()),
        wall_s=time.monotonic() - t0,
        bounds=bounds,
        passed=bounds.admits(top1, mean_kl),
    )
    logger.info("parity %s vs %s: top1 %.3f, mean KL %.4f", report.deployable, report.reference, top1, mean_kl)
    return report


def parity_gate(report: ParityReport) -> ParityReport:
    """Return the report if it passed, else raise GateFailedError carrying it."""
    if not report.passed:
        b = report.bounds
        raise GateFailedError(
            "parity",
            f"top-1 agreement {report.top1_agreement:.3f} (min {b.min_top1_agreement}), "
            f"mean KL {report.mean_kl:.4f} (max {b.max_mean_kl}) over {report.positions} positions",
            report,
        )
    return report
