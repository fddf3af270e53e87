"""CARE on TRL's GRPOTrainer: import without the extra, and a real training step on a tiny model."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pocketpilot.trainer_bridge.care import Regime, grpo_advantages
from pocketpilot.trainer_bridge.care_config import CareConfig, CareParams, ControllerConfig
from pocketpilot.trainer_bridge.care_controller import CareController
from pocketpilot.trainer_bridge.care_trl import CareSignals

ROOT = Path(__file__).resolve().parents[2]
HAVE_EXTRA = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "trl", "datasets"))


def test_module_imports_without_torch_and_names_the_extra() -> None:
    # Hide torch/transformers/trl even where they are installed, then import the plug-in.
    script = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"torch", "transformers", "trl"}:
                    raise ImportError(f"blocked {name}")
                return None
        sys.meta_path.insert(0, Block())
        import importlib.util
        importlib.util.find_spec = lambda name, *a: None if name in {"torch", "transformers", "trl"} else 1
        from pocketpilot.trainer_bridge import care_trl
        from pocketpilot.errors import PocketPilotError
        assert "torch" not in sys.modules
        try:
            care_trl.CareGRPOTrainer
        except care_trl.CareExtraMissingError as exc:
            assert isinstance(exc, ImportError) and isinstance(exc, PocketPilotError)
            assert exc.missing == ["torch", "transformers", "trl"], exc.missing
            print("MISSING:", exc)
        else:
            raise SystemExit("no error")
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "pip install torch==2.13.0" in proc.stdout and "care-trl" in proc.stdout


def test_signals_default_to_zero_progress_and_token_cost() -> None:
    funcs = CareSignals(success=lambda prompts, **_: [1.0] * len(prompts)).reward_funcs()
    assert [f.__name__ for f in funcs] == ["care_success", "care_progress", "care_cost"]
    kw = {"prompts": ["a", "b"], "completions": ["x", "y"], "completion_ids": [[1, 2, 3], [4]]}
    assert [f(**kw) for f in funcs] == [[1.0, 1.0], [0.0, 0.0], [3.0, 1.0]]


# -- a real training step ----------------------------------------------------------------------

WORDS = "alpha beta gamma delta open close wifi note save send call stop good bad".split()


def tiny_model_and_tokenizer() -> tuple[Any, Any]:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    vocab = {tok: i for i, tok in enumerate(["<pad>", "<eos>", "<unk>", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>",
                                        unk_token="<unk>")
    config = Qwen2Config(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         eos_token_id=1, pad_token_id=0, bos_token_id=None, tie_word_embeddings=True)
    return Qwen2ForCausalLM(config), tokenizer


def success(prompts: list[str], **_: Any) -> list[float]:
    return [1.0 if p.startswith("alpha") else 0.0 for p in prompts]  # alpha tasks: all succeed


def progress(completions: list[str], **_: Any) -> list[float]:
    return [min(1.0, c.split().count("good") / 2) for c in completions]


def cost(completions: list[str], **_: Any) -> list[float]:
    return [float(len(set(c.split())) + 1) for c in completions]  # varies even at full length


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_EXTRA, reason="care-trl extra (torch, transformers, trl, datasets) not installed")
def test_care_grpo_trainer_runs_real_training_steps(tmp_path: Path) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig

    from pocketpilot.trainer_bridge.care_trl import CareGRPOTrainer

    torch.manual_seed(0)
    model, tokenizer = tiny_model_and_tokenizer()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    captured: list[dict[str, Any]] = []

    class Spy(CareGRPOTrainer):  # type: ignore[misc, valid-type]
        def _generate_and_score_completions(self, inputs: Any) -> Any:
            out = super()._generate_and_score_completions(inputs)
            captured.append({"adv": out["advantages"].clone(), "result": self.care_last_result})
            return out

    care = CareConfig(params=CareParams(lambda_efficiency=0.1),
                      controller=ControllerConfig(every_n_steps=1, window_steps=1))
    controller = CareController(care, log_path=tmp_path / "care_changes.jsonl")
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_generations=4,
                      max_completion_length=6, max_steps=2, learning_rate=5e-2, beta=0.0, use_cpu=True,
                      report_to="none", logging_steps=1, save_strategy="no", bf16=False, seed=0,
                      dataloader_num_workers=0)
    dataset = Dataset.from_dict({"prompt": ["alpha open wifi", "gamma send note"]})
    trainer = Spy(model, signals=CareSignals(success=success, progress=progress, cost=cost), care=care,
                  controller=controller, args=args, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()

    assert trainer.state.global_step == 2
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters()), "no parameter moved"
    first = captured[0]
    result = first["result"]
    # The loss saw CARE's advantages, not TRL's own normalization.
    np.testing.assert_allclose(first["adv"].numpy(), result.advantages, rtol=1e-5, atol=1e-6)
    by_regime = {Regime(r): i for i, r in enumerate(result.regimes)}
    assert set(by_regime) == {Regime.EFFICIENCY, Regime.PROGRESS}
    eff = by_regime[Regime.EFFICIENCY]
    eff_adv = result.advantages.reshape(-1, 4)[eff]
    eff_rewards = result.rewards.reshape(-1, 4)[eff]
    assert result.floored[eff]
    plain = grpo_advantages(eff_rewards, group_size=4, eps=1e-4)  # TRL's eps
    if np.ptp(eff_rewards) > 0:  # costs differed: plain GRPO would blow them up, CARE keeps them small
        assert np.abs(plain).max() > 0.5 and np.abs(eff_adv).max() < 0.5 * np.abs(plain).max()
    # Metrics reached TRL's log history; TRL's "reward" is the success rate.
    logged = trainer.state.log_history[0]
    assert logged["care/occupancy_efficiency"] == pytest.approx(0.5)
    assert logged["care/occupancy_progress"] == pytest.approx(0.5)
    assert logged["reward"] == pytest.approx(0.5)
    # The controller observed the training batches and decided at step 1 (progress groups at 50%
    # occupancy dominate: lambda_p grows), and step 2 used the new value.
    changes = {c.param: c for c in controller.changes if c.step == 1}
    assert set(changes) == {"lambda_progress", "lambda_efficiency"}  # both regimes at 50% occupancy
    assert changes["lambda_progress"].new > changes["lambda_progress"].old
    assert captured[1]["result"].params.lambda_progress == changes["lambda_progress"].new
    assert (tmp_path / "care_changes.jsonl").read_text().count("\n") == len(controller.changes)
