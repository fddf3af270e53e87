"""The default gates for real on the 0.5B: llama.cpp parity and the harness-run dev-set gate."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _checkpoint_gguf import write_qwen2_sibling

from pocketpilot.cli.main import main
from pocketpilot.models.store import file_sha256
from pocketpilot.tasks import load_suite
from pocketpilot.trainer_bridge.checkpoints import (
    DEFAULT_PROBES,
    GateFailedError,
    ImportOptions,
    ModelVersion,
    Registry,
    import_checkpoint,
    write_lora_adapter,
)


def serve_in_place(reg: Registry, model: Path) -> ModelVersion:
    """Register the installed test model as serving without copying its 0.5 GB."""
    sha = file_sha256(model)
    v = reg.add(ModelVersion(id="new", kind="model", model_path=str(model), model_sha256=sha, source=str(model),
                             source_sha256=sha, architecture="qwen2"))
    return reg.promote(v.id, force_reason="the installed test model")


@pytest.mark.slow
def test_cli_a_different_model_sharing_the_tokenizer_is_not_promoted(test_gguf: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    reg = Registry(tmp_path / "registry")
    serving = serve_in_place(reg, test_gguf)
    sibling = write_qwen2_sibling(test_gguf, tmp_path / "sibling.gguf")  # passes every header check
    with pytest.raises(SystemExit) as exc:
        main(["checkpoint", "import", str(sibling), "--registry", str(reg.root), "--probes", "2"])
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and "parity gate failed" in err
    assert reg.serving() == reg.get(serving.id) and reg.load().history == [serving.id]
    rejected = reg.versions()[-1]
    assert rejected.state == "rejected" and rejected.gates["parity"]["passed"] is False
    assert rejected.gates["parity"]["reference"] == test_gguf.name  # compared with the base by default
    assert "dev" not in rejected.gates  # the costly gate never ran


@pytest.mark.slow
def test_both_default_gates_run_for_a_lora_and_decide_promotion(test_gguf: Path, tmp_path: Path) -> None:
    reg = Registry(tmp_path / "registry")
    serving = serve_in_place(reg, test_gguf)
    lora = write_lora_adapter(test_gguf, tmp_path / "lora.gguf", scale=0.01)  # a barely-moved fine-tune
    task = min(load_suite("dev"), key=lambda t: (t.max_steps, len(t.criteria), t.id))  # keep it affordable
    task = task.model_copy(update={"max_steps": 2})  # two targets, two short episodes: the gate's decision is the point
    opts = ImportOptions(probes=DEFAULT_PROBES[:2], dev_tasks=[task], promote=True)  # measure, evaluate: defaults
    failed: GateFailedError | None = None
    try:
        asyncio.run(import_checkpoint(lora, opts, registry=reg))
    except GateFailedError as exc:
        failed = exc
    v = reg.versions()[-1]
    parity, dev = v.gates["parity"], v.gates["dev"]
    assert parity["reference"] == test_gguf.name and parity["deployable"].endswith("lora.gguf")
    assert parity["positions"] > 4 and parity["passed"] is True
    assert dev["tasks"] == [task.id] and 0.0 <= dev["candidate_success_rate"] <= 1.0
    if dev["passed"]:
        assert failed is None and v.state == "serving" and v.forced is None
        assert reg.get(serving.id).state == "retired"
    else:
        assert failed is not None and failed.gate == "dev" and v.state == "rejected"
        assert reg.serving() == reg.get(serving.id)
