"""Import flow, dev-set gate, version registry, rollback and swaps (tiny GGUF files, no model runs)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from _checkpoint_gguf import write_tiny_model
from click.testing import CliRunner

from pocketpilot.cli.checkpoint import checkpoint
from pocketpilot.evaluation.compare import SuiteReport, run_task
from pocketpilot.tasks import TaskSpec, load_suite
from pocketpilot.trainer_bridge.checkpoints import (
    CheckpointIntegrityError,
    CheckpointMismatchError,
    GateFailedError,
    ImportOptions,
    ModelTarget,
    ParityBounds,
    ParityReport,
    PromotionRefusedError,
    Registry,
    RegistryError,
    ServingSwitch,
    import_checkpoint,
    write_lora_adapter,
)
from pocketpilot.trainer_bridge.rollouts import ScriptedPlannerFactory

DEV = load_suite("dev")[:3]


def scripted_evaluator(fail_adapters: bool) -> object:
    """Real harness runs on the sandbox: oracle replays, or runs cut short for adapter targets."""

    async def evaluate(target: ModelTarget, tasks: Sequence[TaskSpec]) -> SuiteReport:
        factory = ScriptedPlannerFactory(failure_rate=1.0 if (fail_adapters and target.lora) else 0.0)
        outcomes = [(await run_task(t, factory(t, 0)))[1] for t in tasks]
        return SuiteReport(planner={"target": target.describe()}, outcomes=outcomes)

    return evaluate


def parity_measure(top1: float = 0.97, kl: float = 0.02, calls: list | None = None) -> object:
    """A parity measurement that reports fixed figures and records what it compared."""

    def measure(deployable: ModelTarget, reference: ModelTarget, prompts: Sequence[str], *,
                bounds: ParityBounds | None = None) -> ParityReport:
        b = bounds or ParityBounds()
        if calls is not None:
            calls.append((deployable, reference))
        return ParityReport(deployable=deployable.describe(), reference=reference.describe(), prompts=len(prompts),
                            positions=10 * len(prompts), top1_agreement=top1, mean_kl=kl, max_kl=3 * kl, wall_s=0.0,
                            bounds=b, passed=b.admits(top1, kl))

    return measure


BOOT = "bootstrap: nothing to compare with yet"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    src = tmp_path / "trainer"
    src.mkdir()
    base = write_tiny_model(src / "base.gguf")
    return {
        "base": base,
        "lora": write_lora_adapter(base, src / "lora.gguf", seed=1),
        "lora2": write_lora_adapter(base, src / "lora2.gguf", seed=2),
        "llama_lora": write_lora_adapter(base, src / "llama.gguf", architecture="llama"),
    }


@pytest.fixture
def reg(tmp_path: Path) -> Registry:
    return Registry(tmp_path / "registry")


def imp(path: Path, reg: Registry, **kw: object) -> object:
    return asyncio.run(import_checkpoint(path, ImportOptions(**kw), registry=reg))  # type: ignore[arg-type]


def test_first_model_then_adapter_pass_dev_gate_and_serve(files: dict[str, Path], reg: Registry) -> None:
    first = imp(files["base"], reg, promote=True, force_reason=BOOT)
    assert first.version.state == "serving" and first.dev is None and first.parity is None
    assert first.version.forced == BOOT and reg.get(first.version.id).forced == BOOT
    assert any("nothing to compare with" in s for s in first.skipped)
    stored = Path(first.version.model_path)
    assert stored.parent == reg.files and stored.read_bytes() == files["base"].read_bytes()

    calls: list = []
    second = imp(files["lora"], reg, dev_tasks=DEV, evaluate=scripted_evaluator(False),
                 measure=parity_measure(calls=calls), promote=True)
    v = second.version
    assert v.kind == "adapter" and v.state == "serving" and v.parent == first.version.id and v.forced is None
    # without --reference, parity compares base + adapter with the base itself
    assert calls == [(ModelTarget(stored, Path(v.lora_path or "")), ModelTarget(stored))]
    assert v.model_path == first.version.model_path and Path(v.lora_path or "").is_file()
    assert second.dev is not None and second.dev.candidate_success_rate == 1.0 == second.dev.serving_success_rate
    assert reg.get(first.version.id).state == "retired"
    assert reg.get(v.id).gates["dev"]["tasks"] == [t.id for t in DEV]


def test_regression_on_dev_rejects_and_keeps_serving(files: dict[str, Path], reg: Registry) -> None:
    base = imp(files["base"], reg, promote=True, force_reason=BOOT).version
    with pytest.raises(GateFailedError, match=r"dev gate failed: success \d+% < serving 100%") as exc:
        imp(files["lora"], reg, dev_tasks=DEV, evaluate=scripted_evaluator(True), measure=parity_measure(),
            promote=True)
    report = exc.value.report
    assert report.candidate_success_rate < 1.0 and report.serving_failed == []
    assert report.candidate_failed and set(report.candidate_failed) <= {t.id for t in DEV}
    assert str(report.candidate_failed) in str(exc.value)  # the newly failed tasks are named
    rejected = reg.versions()[-1]
    assert rejected.state == "rejected" and rejected.gates["dev"]["passed"] is False
    assert reg.serving() == reg.get(base.id)
    with pytest.raises(RegistryError, match="was rejected"):
        reg.promote(rejected.id)


def test_wrong_architecture_tampered_and_truncated_never_register(files: dict[str, Path], reg: Registry,
                                                                   tmp_path: Path) -> None:
    base = imp(files["base"], reg, promote=True, force_reason=BOOT).version
    with pytest.raises(CheckpointMismatchError, match="architecture 'llama' != base 'qwen2'"):
        imp(files["llama_lora"], reg)
    good_sha = imp(files["lora"], reg, measure=parity_measure()).version.source_sha256
    tampered = tmp_path / "tampered.gguf"
    data = bytearray(files["lora2"].read_bytes())
    data[-10] ^= 0xFF
    tampered.write_bytes(bytes(data))
    with pytest.raises(CheckpointIntegrityError, match="tampered or corrupted"):
        imp(tampered, reg, expected_sha256=good_sha)
    half = tmp_path / "half.gguf"
    half.write_bytes(files["base"].read_bytes()[: files["base"].stat().st_size // 2])
    with pytest.raises(CheckpointIntegrityError, match="truncated"):
        imp(half, reg)
    assert [v.state for v in reg.versions()] == ["serving", "candidate"]
    assert reg.serving().id == base.id  # type: ignore[union-attr]
    assert sorted(p.name for p in reg.files.iterdir() if p.name.startswith(".")) == []


def test_rollback_walks_history_and_refuses_tampered_files(files: dict[str, Path], reg: Registry) -> None:
    v1 = imp(files["base"], reg, promote=True, force_reason=BOOT).version
    with pytest.raises(RegistryError, match="nothing to roll back to"):
        reg.rollback()
    v2 = imp(files["lora"], reg, promote=True, force_reason="no dev tasks", measure=parity_measure()).version
    v3 = imp(files["lora2"], reg, promote=True, force_reason="no dev tasks", measure=parity_measure()).version
    assert reg.rollback().id == v2.id
    assert reg.get(v3.id).state == "retired" and "rolled back" in reg.get(v3.id).note
    # tamper with v1's stored file: rolling back to it is refused, v2 keeps serving
    stored = Path(v1.model_path)
    original = stored.read_bytes()
    data = bytearray(original)
    data[len(data) // 2] ^= 0x01
    stored.write_bytes(bytes(data))
    with pytest.raises(CheckpointIntegrityError, match=f"recorded for {v1.id}: tampered"):
        reg.rollback()
    assert reg.serving().id == v2.id  # type: ignore[union-attr]
    with pytest.raises(CheckpointIntegrityError):  # v3 applies its adapter to the same base file
        reg.rollback(to=v3.id)
    stored.write_bytes(original)
    assert reg.rollback(to=v3.id).id == v3.id


class FakePlanner:
    def __init__(self, fail_on: str | None = None) -> None:
        self.loaded: list[str] = []
        self.fail_on = fail_on

    async def swap_model(self, model_path: object, *, lora_path: object = None, sha256: object = None,
                         quant_type: object = None) -> None:
        name = str(lora_path or model_path)
        if self.fail_on and self.fail_on in name:
            raise CheckpointIntegrityError(name, "llama.cpp could not load it")
        self.loaded.append(name)


def test_switch_swaps_all_planners_or_none(files: dict[str, Path], reg: Registry) -> None:
    v1 = imp(files["base"], reg, promote=True, force_reason=BOOT).version
    v2 = imp(files["lora"], reg, measure=parity_measure(), dev_tasks=DEV[:1], evaluate=scripted_evaluator(False)).version
    ok, bad = FakePlanner(), FakePlanner(fail_on="lora.gguf")
    switch = ServingSwitch(reg, [ok, bad])
    with pytest.raises(CheckpointIntegrityError):
        asyncio.run(switch.promote(v2.id))
    assert ok.loaded == [v2.lora_path, v1.model_path]  # swapped, then put back
    assert reg.serving().id == v1.id  # type: ignore[union-attr]
    switch.planners = [ok]
    assert asyncio.run(switch.promote(v2.id)).state == "serving"
    assert asyncio.run(switch.rollback()).id == v1.id and ok.loaded[-1] == v1.model_path


def test_cli_import_list_rollback(files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pocketpilot.trainer_bridge.checkpoints import importer

    monkeypatch.setattr(importer, "measure_parity", parity_measure())  # the tiny files do not run in llama.cpp
    root = str(tmp_path / "cli-registry")
    runner = CliRunner()
    r = runner.invoke(checkpoint, ["import", str(files["base"]), "--registry", root, "--dev-tasks", "0",
                                   "--force", "--reason", "first model"])
    assert r.exit_code == 0, r.output
    assert "v1: model base.gguf" in r.output and "-> serving (forced: first model)" in r.output
    r = runner.invoke(checkpoint, ["import", str(files["lora"]), "--registry", root, "--dev-tasks", "0"])
    assert isinstance(r.exception, PromotionRefusedError) and "the dev gate did not run (no dev tasks)" in str(r.exception)
    r = runner.invoke(checkpoint, ["promote", "v2", "--registry", root])
    assert isinstance(r.exception, PromotionRefusedError)
    r = runner.invoke(checkpoint, ["promote", "v2", "--force", "--registry", root])
    assert r.exit_code == 2 and "--force needs --reason" in r.output
    r = runner.invoke(checkpoint, ["promote", "v2", "--force", "--reason", "dev set run by hand", "--registry", root])
    assert r.exit_code == 0 and "serving v2 (forced: dev set run by hand)" in r.output
    r = runner.invoke(checkpoint, ["list", "--json", "--registry", root])
    data = json.loads(r.output)
    assert [v["state"] for v in data["versions"]] == ["retired", "serving"] and data["history"] == ["v1", "v2"]
    assert data["versions"][1]["forced"] == "dev set run by hand"
    listed = runner.invoke(checkpoint, ["list", "--registry", root]).output.splitlines()
    assert "forced: first model" in listed[0] and "forced: dev set run by hand" in listed[1]
    r = runner.invoke(checkpoint, ["rollback", "--registry", root])
    assert r.exit_code == 0 and "serving v1" in r.output
    r = runner.invoke(checkpoint, ["import", str(files["llama_lora"]), "--registry", root, "--force", "--reason", "x"])
    assert isinstance(r.exception, CheckpointMismatchError)  # no reason overrides a mismatch
    assert "serving" in runner.invoke(checkpoint, ["list", "--registry", root]).output.splitlines()[0]


def test_file_changed_during_import_and_rejected_promotion(files: dict[str, Path], reg: Registry,
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pocketpilot.trainer_bridge.checkpoints import importer

    v1 = imp(files["base"], reg, promote=True, force_reason=BOOT).version
    swapped_in = write_tiny_model(tmp_path / "other.gguf", tokens=[f"y{i}" for i in range(64)])
    monkeypatch.setattr(importer, "store_file", lambda src, d, sha=None: (swapped_in, "0" * 64))
    with pytest.raises(CheckpointIntegrityError, match="changed while it was being imported"):
        imp(files["base"], reg)
    monkeypatch.undo()
    with pytest.raises(GateFailedError):
        imp(files["lora"], reg, dev_tasks=DEV, evaluate=scripted_evaluator(True), measure=parity_measure())
    rejected = reg.versions()[-1]
    planner = FakePlanner()
    with pytest.raises(RegistryError, match="was rejected"):
        asyncio.run(ServingSwitch(reg, [planner]).promote(rejected.id))
    assert planner.loaded == [] and reg.serving().id == v1.id  # type: ignore[union-attr]
