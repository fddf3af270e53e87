"""Promotion decisions with the gates on by default (tiny GGUF files, stand-in measurements)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _checkpoint_fakes import outcome_evaluator, parity_measure
from _checkpoint_gguf import write_tiny_model

from pocketpilot.errors import UsageError
from pocketpilot.tasks import load_suite
from pocketpilot.trainer_bridge.checkpoints import (
    GateFailedError,
    ImportOptions,
    ModelTarget,
    PromotionRefusedError,
    Registry,
    RegistryError,
    ServingSwitch,
    import_checkpoint,
    promotion_blockers,
    write_lora_adapter,
)
from pocketpilot.trainer_bridge.checkpoints.promotion import check_force_reason

DEV = load_suite("dev")[:2]
PASSED = {"passed": True}


def test_blockers_need_every_gate_to_have_run_and_passed() -> None:
    assert promotion_blockers({"parity": PASSED, "dev": PASSED}) == []
    assert promotion_blockers({"parity": PASSED, "dev": {"passed": False}}) == ["the dev gate failed"]
    assert promotion_blockers({"parity": {"passed": "yes"}, "dev": PASSED}) == ["the parity gate failed"]
    blockers = promotion_blockers({"dev": PASSED, "skipped": ["parity: nothing to compare with"]})
    assert blockers == ["the parity gate did not run (nothing to compare with)"]
    assert promotion_blockers({}) == ["the parity gate did not run", "the dev gate did not run"]


def test_a_force_reason_must_say_something() -> None:
    assert check_force_reason(None) is None
    assert check_force_reason("  trainer\nverified by hand ") == "trainer verified by hand"
    with pytest.raises(UsageError, match="non-empty --reason"):
        check_force_reason(" \n ")


@pytest.fixture
def base(tmp_path: Path) -> Path:
    (tmp_path / "trainer").mkdir()
    return write_tiny_model(tmp_path / "trainer" / "base.gguf")


@pytest.fixture
def reg(tmp_path: Path) -> Registry:
    return Registry(tmp_path / "registry")


def imp(path: Path, reg: Registry, **kw: object):  # type: ignore[no-untyped-def]
    return asyncio.run(import_checkpoint(path, ImportOptions(**kw), registry=reg))  # type: ignore[arg-type]


def test_defaults_with_nothing_to_compare_with_register_a_candidate_only(base: Path, reg: Registry) -> None:
    calls: list = []
    with pytest.raises(PromotionRefusedError, match="parity gate did not run.*dev gate did not run") as exc:
        imp(base, reg, promote=True, measure=parity_measure(calls=calls), dev_tasks=DEV)
    assert calls == [] and reg.serving() is None
    (v,) = reg.versions()
    assert v.state == "candidate" and exc.value.version_id == v.id and len(exc.value.blockers) == 2
    with pytest.raises(PromotionRefusedError):
        reg.promote(v.id)
    assert reg.promote(v.id, force_reason="first model").forced == "first model"


def test_with_a_base_both_gates_run_against_it_and_a_pass_serves(base: Path, reg: Registry, tmp_path: Path) -> None:
    lora = write_lora_adapter(base, tmp_path / "trainer" / "lora.gguf")
    parity_calls: list = []
    dev_calls: list = []
    result = imp(lora, reg, base=str(base), promote=True, measure=parity_measure(calls=parity_calls),
                 dev_tasks=DEV, evaluate=outcome_evaluator(lambda target, task: True, dev_calls))
    v = result.version
    assert v.state == "serving" and v.forced is None and result.skipped == ()
    assert parity_calls == [(ModelTarget(base, Path(v.lora_path or "")), ModelTarget(base))]
    assert dev_calls == [ModelTarget(base), v.target]  # baseline first, then the candidate
    assert v.gates["parity"]["passed"] and v.gates["dev"]["passed"]


def test_a_different_model_fails_parity_and_the_serving_version_stays(base: Path, reg: Registry, tmp_path: Path) -> None:
    first = imp(base, reg, promote=True, force_reason="first model").version
    other = write_tiny_model(tmp_path / "trainer" / "other.gguf", dim=64)  # same tokenizer, other weights
    dev_calls: list = []
    measure = parity_measure(by_target=lambda t: (0.97, 0.01) if t.model.name.endswith("base.gguf") else (0.31, 2.4))
    with pytest.raises(GateFailedError, match=r"parity gate failed: top-1 agreement 0.310"):
        imp(other, reg, promote=True, measure=measure, dev_tasks=DEV,
            evaluate=outcome_evaluator(lambda target, task: True, dev_calls))
    rejected = reg.versions()[-1]
    assert rejected.state == "rejected" and rejected.gates["parity"]["passed"] is False
    assert dev_calls == []  # a failed parity gate stops before the costly one
    assert reg.serving() == reg.get(first.id)
    with pytest.raises(RegistryError, match="was rejected"):
        reg.promote(rejected.id, force_reason="after the fact")


def test_dev_regression_measured_against_serving_blocks(base: Path, reg: Registry, tmp_path: Path) -> None:
    first = imp(base, reg, promote=True, force_reason="first model").version
    lora = write_lora_adapter(base, tmp_path / "trainer" / "lora.gguf")
    solves = outcome_evaluator(lambda target, task: target.lora is None or task.id != DEV[0].id)
    with pytest.raises(GateFailedError, match=rf"dev gate failed.*newly failed: \['{DEV[0].id}'\]"):
        imp(lora, reg, promote=True, measure=parity_measure(), dev_tasks=DEV, evaluate=solves)
    assert reg.serving().id == first.id  # type: ignore[union-attr]
    assert reg.versions()[-1].gates["dev"]["candidate_failed"] == [DEV[0].id]


def test_force_records_the_reason_and_the_gates_it_overrode(base: Path, reg: Registry, tmp_path: Path) -> None:
    imp(base, reg, promote=True, force_reason="first model")
    lora = write_lora_adapter(base, tmp_path / "trainer" / "lora.gguf")
    v = imp(lora, reg, promote=True, force_reason="known regression, hotfix", measure=parity_measure(top1=0.2),
            dev_tasks=DEV, evaluate=outcome_evaluator(lambda target, task: target.lora is None)).version
    stored = reg.get(v.id)
    assert stored.state == "serving" and stored.forced == "known regression, hotfix"
    assert stored.gates["parity"]["passed"] is False and stored.gates["dev"]["passed"] is False  # figures kept
    assert "the parity gate failed" in stored.note and "the dev gate failed" in stored.note
    with pytest.raises(UsageError, match="needs --promote"):
        imp(lora, reg, force_reason="x")
    assert len(reg.versions()) == 2  # refused before anything was registered


def test_rollback_cannot_serve_a_candidate_that_never_served(base: Path, reg: Registry, tmp_path: Path) -> None:
    imp(base, reg, promote=True, force_reason="first model")
    lora = write_lora_adapter(base, tmp_path / "trainer" / "lora.gguf")
    v2 = imp(lora, reg, promote=True, force_reason="no dev tasks", measure=parity_measure()).version
    candidate = imp(write_lora_adapter(base, tmp_path / "trainer" / "l3.gguf", seed=3), reg,
                    measure=parity_measure()).version
    with pytest.raises(RegistryError, match="never served"):
        reg.rollback(to=candidate.id)
    assert reg.serving().id == v2.id  # type: ignore[union-attr]


class RecordingPlanner:
    def __init__(self) -> None:
        self.loaded: list[str] = []

    async def swap_model(self, model_path: object, *, lora_path: object = None, sha256: object = None,
                         quant_type: object = None) -> None:
        self.loaded.append(str(lora_path or model_path))


def test_switch_checks_the_rule_before_loading_and_swaps_back_if_the_registry_refuses(
        base: Path, reg: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v1 = imp(base, reg, promote=True, force_reason="first model").version
    lora = write_lora_adapter(base, tmp_path / "trainer" / "lora.gguf")
    gated = imp(lora, reg, measure=parity_measure()).version  # dev gate skipped: no dev tasks
    planner = RecordingPlanner()
    switch = ServingSwitch(reg, [planner])
    with pytest.raises(PromotionRefusedError, match="dev gate did not run"):
        asyncio.run(switch.promote(gated.id))
    assert planner.loaded == []

    def refuse(*args: object, **kwargs: object) -> object:
        raise RegistryError("the registry changed meanwhile")

    monkeypatch.setattr(reg, "promote", refuse)
    with pytest.raises(RegistryError, match="changed meanwhile"):
        asyncio.run(switch.promote(gated.id, force_reason="hotfix"))
    assert planner.loaded == [gated.lora_path, v1.model_path]  # swapped, then put back
    monkeypatch.undo()
    assert asyncio.run(switch.promote(gated.id, force_reason="hotfix")).forced == "hotfix"
    assert planner.loaded[-1] == gated.lora_path and reg.serving().id == gated.id  # type: ignore[union-attr]


def test_cli_parity_failure_exits_2_with_one_line_and_keeps_serving(
        base: Path, reg: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from pocketpilot.cli.main import main
    from pocketpilot.trainer_bridge.checkpoints import importer

    first = imp(base, reg, promote=True, force_reason="first model").version
    monkeypatch.setattr(importer, "measure_parity", parity_measure(top1=0.4, kl=1.7))
    other = write_tiny_model(tmp_path / "trainer" / "other.gguf", dim=64)
    with pytest.raises(SystemExit) as exc:
        main(["checkpoint", "import", str(other), "--registry", str(reg.root)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("error: parity gate failed: top-1 agreement 0.400")
    assert len(err.strip().splitlines()) == 1
    assert reg.serving() == reg.get(first.id) and reg.versions()[-1].state == "rejected"
