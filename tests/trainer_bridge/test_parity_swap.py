"""Parity arithmetic, LlamaCppPlanner.swap_model semantics, and (slow) both on the 0.5B model."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _checkpoint_gguf import write_tiny_model

from pocketpilot.errors import ModelIntegrityError
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.trainer_bridge.checkpoints import (
    GateFailedError,
    ModelTarget,
    ParityBounds,
    compare_logits,
    measure_parity,
    parity_gate,
    write_lora_adapter,
)


def test_compare_logits_agreement_and_kl() -> None:
    ref = np.log(np.array([[0.5, 0.5], [0.9, 0.1]], dtype=np.float32))
    same_agree, same_kl = compare_logits(ref, ref + 3.0)  # a constant shift is the same distribution
    assert same_agree.all() and np.allclose(same_kl, 0.0, atol=1e-9)
    dep = np.log(np.array([[0.25, 0.75], [0.9, 0.1]], dtype=np.float32))
    agree, kl = compare_logits(ref, dep)
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert agree.tolist() == [False, True]  # argmax 0 vs 1 (tie broken to 0), then equal
    assert kl[0] == pytest.approx(expected, rel=1e-5) and kl[1] == pytest.approx(0.0, abs=1e-7)
    with pytest.raises(ValueError, match="shapes differ"):
        compare_logits(ref, dep[:1])


class _FakeLlm:
    def __init__(self, name: str) -> None:
        self.name, self.closed, self.metadata = name, False, {"general.file_type": "2"}

    def close(self) -> None:
        self.closed = True


def test_swap_waits_for_generation_and_failed_load_keeps_current(tmp_path: Path, monkeypatch: Any) -> None:
    model = write_tiny_model(tmp_path / "m.gguf")
    planner = LlamaCppPlanner(model, sha256="old")
    old = _FakeLlm("old")
    planner._llm, planner._formatter = old, object()
    opened: list[str] = []

    def fake_open(path: Path, kwargs: dict[str, Any], **_: Any) -> tuple[Any, Any]:
        if "bad" in path.name:
            raise ModelIntegrityError(str(path), "llama.cpp could not load it")
        opened.append(kwargs.get("lora_path", ""))
        return _FakeLlm(path.name), object()

    monkeypatch.setattr(planner, "_open_sync", fake_open)

    async def scenario() -> None:
        await planner._gen_lock.acquire()  # a generation in flight
        swap = asyncio.create_task(planner.swap_model(model, lora_path=tmp_path / "a.gguf", sha256="new"))
        for _ in range(200):
            if opened:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert opened and not swap.done()
        assert planner._llm is old and planner.info.model_sha256 == "old"  # not while generating
        planner._gen_lock.release()
        await swap
        assert planner._llm is not old and old.closed
        assert planner.info.model_sha256 == "new" and planner.info.adapter == str(tmp_path / "a.gguf")
        current = planner._llm
        bad = write_tiny_model(tmp_path / "bad.gguf")
        with pytest.raises(ModelIntegrityError):
            await planner.swap_model(bad)
        assert planner._llm is current and planner.model_path == model and not current.closed

    asyncio.run(scenario())


def test_parity_gate_raises_with_figures() -> None:
    from pocketpilot.trainer_bridge.checkpoints import ParityReport

    report = ParityReport(deployable="d", reference="r", prompts=2, positions=40, top1_agreement=0.5, mean_kl=0.9,
                          max_kl=3.0, wall_s=1.0, bounds=ParityBounds(), passed=False)
    with pytest.raises(GateFailedError, match=r"top-1 agreement 0.500 \(min 0.85\), mean KL 0.9000"):
        parity_gate(report)


@pytest.mark.slow
def test_parity_of_a_lora_on_the_05b_model(test_gguf: Path, tmp_path: Path) -> None:
    lora = write_lora_adapter(test_gguf, tmp_path / "lora.gguf", layers=range(4), scale=0.1)
    report = measure_parity(ModelTarget(test_gguf, lora), ModelTarget(test_gguf), ["Set an alarm for 6:30."],
                            bounds=ParityBounds(min_top1_agreement=0.0, max_mean_kl=1e9))
    assert report.positions > 3 and 0.0 <= report.top1_agreement <= 1.0
    assert report.mean_kl > 1e-4  # the adapter really changes the next-token distributions
    assert report.passed


@pytest.mark.slow
def test_swap_a_real_planner_to_a_lora_and_reject_a_truncated_file(test_gguf: Path, tmp_path: Path) -> None:
    lora = write_lora_adapter(test_gguf, tmp_path / "lora.gguf")
    half = tmp_path / "half.gguf"
    with test_gguf.open("rb") as fh:
        half.write_bytes(fh.read(test_gguf.stat().st_size // 2))
    planner = LlamaCppPlanner(test_gguf, n_ctx=512)

    async def scenario() -> None:
        await planner.load()
        await planner.swap_model(test_gguf, lora_path=lora)
        assert planner.info.adapter == str(lora) and planner.count_tokens("hello world") >= 2
        serving = planner._llm
        with pytest.raises(ModelIntegrityError):
            await planner.swap_model(half)
        assert planner._llm is serving and planner.info.adapter == str(lora)
        await planner.aclose()

    asyncio.run(scenario())
