"""Checkpoint import: verify, quantize, gate (parity, dev set), register, swap, roll back."""

from .compat import check_compatible
from .devgate import DevGateReport, Evaluator, dev_gate, llama_evaluator, run_dev_gate
from .errors import (
    CheckpointError,
    CheckpointIntegrityError,
    CheckpointMismatchError,
    GateFailedError,
    PromotionRefusedError,
    QuantizeError,
    RegistryError,
)
from .gguf_info import GgufInfo, TensorInfo, TokenizerFingerprint, read_gguf_info
from .importer import ImportOptions, ImportResult, import_checkpoint
from .lora_writer import write_lora_adapter
from .parity import (
    DEFAULT_PROBES,
    ModelTarget,
    ParityBounds,
    ParityMeasure,
    ParityReport,
    compare_logits,
    measure_parity,
    parity_gate,
)
from .promotion import REQUIRED_GATES, promotion_blockers
from .quantize import QUANT_TYPES, quantize_gguf
from .registry import ModelVersion, Registry, VersionState
from .swap import ServingSwitch, SwappablePlanner

__all__ = [
    "DEFAULT_PROBES",
    "QUANT_TYPES",
    "REQUIRED_GATES",
    "CheckpointError",
    "CheckpointIntegrityError",
    "CheckpointMismatchError",
    "DevGateReport",
    "Evaluator",
    "GateFailedError",
    "GgufInfo",
    "ImportOptions",
    "ImportResult",
    "ModelTarget",
    "ModelVersion",
    "ParityBounds",
    "ParityMeasure",
    "ParityReport",
    "PromotionRefusedError",
    "QuantizeError",
    "Registry",
    "RegistryError",
    "ServingSwitch",
    "SwappablePlanner",
    "TensorInfo",
    "TokenizerFingerprint",
    "VersionState",
    "check_compatible",
    "compare_logits",
    "dev_gate",
    "import_checkpoint",
    "llama_evaluator",
    "measure_parity",
    "parity_gate",
    "promotion_blockers",
    "quantize_gguf",
    "read_gguf_info",
    "run_dev_gate",
    "write_lora_adapter",
]
