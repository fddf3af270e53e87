"""Does a checkpoint fit its base? Architecture, tokenizer, and for a LoRA every tensor shape.

A fine-tuned model must keep the base's architecture and tokenizer, or the harness's prompts,
grammars and token-level traces stop meaning the same thing. A LoRA carries no tokenizer,
so it is checked tensor by tensor against the weights it adapts — llama.cpp would refuse a
mismatch at load time, but only with a log line and a bare exception.
"""

from __future__ import annotations

from .errors import CheckpointMismatchError
from .gguf_info import GgufInfo

__all__ = ["check_compatible"]

_SUFFIXES = (".lora_a", ".lora_b")


def check_compatible(candidate: GgufInfo, base: GgufInfo) -> None:
    """Raise CheckpointMismatchError unless ``candidate`` can replace or adapt ``base``.

    Args:
        candidate: The imported model or adapter.
        base: The model it derives from (for an adapter: the model it is applied to).
    """
    where = str(candidate.path)
    if base.kind != "model":
        raise CheckpointMismatchError(where, f"the base {base.path} is an adapter, not a model")
    if candidate.architecture != base.architecture:
        raise CheckpointMismatchError(
            where, f"architecture {candidate.architecture!r} != base {base.architecture!r}"
        )
    if candidate.kind == "model":
        _check_model(candidate, base, where)
    else:
        _check_lora(candidate, base, where)


def _check_model(candidate: GgufInfo, base: GgufInfo, where: str) -> None:
    if candidate.tokenizer is None or base.tokenizer is None:
        raise CheckpointMismatchError(where, "no tokenizer in the candidate or the base")
    diffs = candidate.tokenizer.differences(base.tokenizer)
    if diffs:
        raise CheckpointMismatchError(where, "; ".join(diffs))


def _check_lora(candidate: GgufInfo, base: GgufInfo, where: str) -> None:
    adapter_type = candidate.metadata.get("adapter.type")
    if adapter_type != "lora":
        raise CheckpointMismatchError(where, f"adapter.type is {adapter_type!r}, only 'lora' is supported")
    if "adapter.lora.alpha" not in candidate.metadata:
        raise CheckpointMismatchError(where, "adapter.lora.alpha is missing")
    pairs: dict[str, dict[str, tuple[int, ...]]] = {}
    for name, tensor in candidate.tensors.items():
        suffix = next((s for s in _SUFFIXES if name.endswith(s)), None)
        if suffix is None:
            raise CheckpointMismatchError(where, f"tensor {name!r} is not a lora_a/lora_b tensor")
        pairs.setdefault(name[: -len(suffix)], {})[suffix] = tensor.shape
    if not pairs:
        raise CheckpointMismatchError(where, "the adapter has no tensors")
    for target, parts in sorted(pairs.items()):
        if set(parts) != set(_SUFFIXES):
            raise CheckpointMismatchError(where, f"{target}: lora_a and lora_b must both be present")
        weight = base.tensors.get(target)
        if weight is None:
            raise CheckpointMismatchError(where, f"{target}: no such tensor in the base")
        a, b = parts[".lora_a"], parts[".lora_b"]
        if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
            raise CheckpointMismatchError(where, f"{target}: lora_a {a} and lora_b {b} do not share a rank")
        if a[0] != weight.shape[0] or b[1] != weight.shape[1]:
            raise CheckpointMismatchError(
                where, f"{target}: adapter maps {a[0]}->{b[1]} but the base weight is {weight.shape}"
            )
