"""A tampered checkpoint never serves, by any route: import, promote, swap, rollback.

Tampering: bytes flipped after the sha256 was recorded, a truncated file, a GGUF whose header
claims another architecture, a LoRA made for another base. Each time the serving pointer and
the running planner stay on the version that served before, and no planner is even asked to
load the tampered file. ``--force --reason`` overrides gates, never integrity.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from pocketpilot.cli.main import main
from pocketpilot.evaluation.compare import SuiteReport, TaskOutcome
from pocketpilot.tasks import TaskSpec, load_suite
from pocketpilot.trainer_bridge.checkpoints import (
    CheckpointIntegrityError,
    CheckpointMismatchError,
    ImportOptions,
    ModelTarget,
    ModelVersion,
    ParityBounds,
    ParityReport,
    Registry,
    ServingSwitch,
    import_checkpoint,
    write_lora_adapter,
)


def write_model(path: Path, *, architecture: str = "qwen2", dim: int = 32, layers: int = 2, seed: int = 0) -> Path:
    from gguf import GGUFWriter

    w = GGUFWriter(str(path), architecture)
    w.add_type("model")
    w.add_file_type(0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list([f"tok{i}" for i in range(64)])
    rng = np.random.default_rng(seed)
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_q.weight", rng.standard_normal((dim, dim)).astype(np.float32))
        w.add_tensor(f"blk.{i}.attn_v.weight", rng.standard_normal((8, dim)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def passing_parity(deployable: ModelTarget, reference: ModelTarget, prompts: Sequence[str], *,
                   bounds: ParityBounds | None = None) -> ParityReport:
    b = bounds or ParityBounds()
    return ParityReport(deployable=deployable.describe(), reference=reference.describe(), prompts=len(prompts),
                        positions=len(prompts), top1_agreement=1.0, mean_kl=0.0, max_kl=0.0, wall_s=0.0, bounds=b,
                        passed=True)


async def passing_dev(target: ModelTarget, tasks: Sequence[TaskSpec]) -> SuiteReport:
    outcomes = [TaskOutcome(task_id=t.id, capability=t.capability, group=t.group, success=True, progress=1.0,
                            stop_reason=None, steps=1, prompt_tokens_evaluated=0, completion_tokens=0, wall_s=0.0)
                for t in tasks]
    return SuiteReport(planner={"target": target.describe()}, outcomes=outcomes)


class Planner:
    """A running planner: what it serves now, and every file it was ever asked to load."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.asked: list[str] = []
        self.on_swap: Callable[[str], None] | None = None

    async def swap_model(self, model_path: object, *, lora_path: object = None, sha256: object = None,
                         quant_type: object = None) -> None:
        name = str(lora_path or model_path)
        self.asked.append(name)
        if self.on_swap is not None:
            self.on_swap(name)
        self.current = name


def served_file(v: ModelVersion) -> str:
    return v.lora_path or v.model_path


# ---------------------------------------------------------------- the ways to tamper with a file


def flip(path: Path, base: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def truncate(path: Path, base: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def other_architecture(path: Path, base: Path) -> None:
    tmp = path.with_name(path.name + ".new")
    if b"adapter" in path.read_bytes()[:4096]:
        write_lora_adapter(base, tmp, architecture="llama")
    else:
        write_model(tmp, architecture="llama", layers=3)
    shutil.move(tmp, path)


def lora_for_another_base(path: Path, base: Path) -> None:
    other = write_model(path.with_name("other-base.gguf"), dim=64, layers=3)
    tmp = path.with_name(path.name + ".new")
    write_lora_adapter(other, tmp)
    shutil.move(tmp, path)


TAMPERS = [flip, truncate, other_architecture, lora_for_another_base]


@pytest.fixture
def world(tmp_path: Path):  # type: ignore[no-untyped-def]
    """v1 (a model) served, then v2 (another model) serves now; v3 (a LoRA on v2) passed its gates."""
    src = tmp_path / "trainer"
    src.mkdir()
    reg = Registry(tmp_path / "registry")
    gated = {"measure": passing_parity, "dev_tasks": load_suite("dev")[:1], "evaluate": passing_dev}

    def imp(path: Path, **kw: object):  # type: ignore[no-untyped-def]
        return asyncio.run(import_checkpoint(path, ImportOptions(**kw), registry=reg)).version  # type: ignore[arg-type]

    v1 = imp(write_model(src / "m1.gguf", layers=3), promote=True, force_reason="first model")
    v2 = imp(write_model(src / "m2.gguf", layers=3, seed=1), promote=True, **gated)
    v3 = imp(write_lora_adapter(v2.model_path, src / "lora.gguf"), **gated)
    planner = Planner()
    switch = ServingSwitch(reg, [planner])
    asyncio.run(switch.sync())
    assert planner.current == served_file(v2) and reg.get(v1.id).state == "retired" and v3.state == "candidate"
    assert reg.promotion_blockers(v3.id) == []  # v3 would serve but for what the tests do to it
    return reg, switch, planner, {"v1": v1, "v2": v2, "v3": v3, "src": src, "imp": imp}


def assert_still_serving_v2(reg: Registry, planner: Planner, w: dict, tampered: str) -> None:
    assert reg.serving().id == w["v2"].id  # type: ignore[union-attr]
    assert reg.load().history == [w["v1"].id, w["v2"].id]
    assert planner.current == served_file(w["v2"])
    assert tampered not in planner.asked


def one_line_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


# ---------------------------------------------------------------- route: import


@pytest.mark.parametrize("tamper", TAMPERS)
def test_import_of_a_tampered_file_registers_nothing_even_when_forced(world, tamper, capsys) -> None:
    reg, switch, planner, w = world
    src = write_lora_adapter(w["v2"].model_path, w["src"] / "incoming.gguf", seed=7)
    recorded = hashlib.sha256(src.read_bytes()).hexdigest()  # what the trainer wrote down
    base = Path(w["v2"].model_path)
    tamper(src, base)
    before = len(reg.versions())
    for force in (None, "urgent"):
        with pytest.raises((CheckpointIntegrityError, CheckpointMismatchError)):
            w["imp"](src, expected_sha256=recorded, measure=passing_parity, promote=True, force_reason=force)
    err = one_line_exit_2(["checkpoint", "import", str(src), "--sha256", recorded, "--registry", str(reg.root),
                           "--force", "--reason", "urgent"], capsys)
    assert err.startswith("error: ")
    assert len(reg.versions()) == before
    asyncio.run(switch.sync())
    assert_still_serving_v2(reg, planner, w, str(src))


def test_a_gguf_claiming_another_architecture_is_refused_as_a_model_too(world) -> None:
    reg, switch, planner, w = world
    src = write_model(w["src"] / "llama.gguf", architecture="llama", layers=3)
    with pytest.raises(CheckpointMismatchError, match="architecture 'llama' != base 'qwen2'"):
        w["imp"](src, measure=passing_parity, promote=True, force_reason="urgent")
    assert_still_serving_v2(reg, planner, w, str(src))


# ---------------------------------------------------------------- routes: promote and swap


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_candidate_tampered_after_registration_never_serves(world, tamper, capsys) -> None:
    reg, switch, planner, w = world
    v3 = w["v3"]
    stored = Path(served_file(v3))
    tamper(stored, Path(v3.model_path))
    for force in (None, "urgent"):
        with pytest.raises(CheckpointIntegrityError, match=f"{v3.id}"):
            reg.promote(v3.id, force_reason=force)
        with pytest.raises(CheckpointIntegrityError):
            asyncio.run(switch.promote(v3.id, force_reason=force))
    one_line_exit_2(["checkpoint", "promote", v3.id, "--force", "--reason", "urgent", "--registry", str(reg.root)],
                    capsys)
    assert reg.get(v3.id).state == "candidate"
    assert_still_serving_v2(reg, planner, w, str(stored))


def test_a_file_changed_while_planners_swap_is_undone(world) -> None:
    reg, switch, planner, w = world
    v3 = w["v3"]
    stored = Path(served_file(v3))
    planner.on_swap = lambda name: flip(stored, Path(v3.model_path)) if name == str(stored) else None
    with pytest.raises(CheckpointIntegrityError):
        asyncio.run(switch.promote(v3.id))
    assert reg.serving().id == w["v2"].id and planner.current == served_file(w["v2"])  # type: ignore[union-attr]
    assert reg.get(v3.id).state == "candidate"


def test_the_serving_file_tampered_in_place_is_not_reloaded(world) -> None:
    reg, switch, planner, w = world
    serving_file = Path(served_file(w["v2"]))
    flip(serving_file, serving_file)
    planner.asked.clear()
    with pytest.raises(CheckpointIntegrityError, match=f"recorded for {w['v2'].id}"):
        asyncio.run(switch.sync())
    assert planner.asked == [] and planner.current == str(serving_file)


# ---------------------------------------------------------------- route: rollback


@pytest.mark.parametrize("tamper", [flip, truncate, other_architecture])
def test_rollback_to_a_tampered_version_is_refused(world, tamper, capsys) -> None:
    reg, switch, planner, w = world
    v1_file = Path(served_file(w["v1"]))
    tamper(v1_file, v1_file)
    for to in (None, w["v1"].id):
        with pytest.raises(CheckpointIntegrityError, match=f"recorded for {w['v1'].id}"):
            reg.rollback(to)
        with pytest.raises(CheckpointIntegrityError):
            asyncio.run(switch.rollback(to))
    one_line_exit_2(["checkpoint", "rollback", "--registry", str(reg.root)], capsys)
    assert reg.get(w["v1"].id).state == "retired"
    assert_still_serving_v2(reg, planner, w, str(v1_file))

